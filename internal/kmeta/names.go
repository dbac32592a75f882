package kmeta

import (
	"crypto/md5"
	"encoding/hex"
	"strings"
	"unicode"
)

const (
	// longestName is the longest Kubernetes name that is also a label value and a
	// DNS label: what every child name must fit in.
	longestName = 63
	// hashLen is the length of an md5 sum in hex.
	hashLen = 32
	// headLen is how much of the parent a hashed name keeps at most.
	headLen = longestName - hashLen
)

// ChildName is the name Knative gives a child of parent: parent+suffix when that fits
// in 63 characters, else a 63-character name that stays unique by an md5 sum, with the
// rule of knative/pkg's kmeta.ChildName so that Ferry and Knative name the same
// objects alike (and either can adopt the other's):
//   - a suffix shorter than 31 is kept whole: the start of parent, md5 of parent, suffix;
//   - a longer one is hashed too: up to 31 characters of parent, md5 of parent+suffix,
//     then the start of suffix up to 63, without trailing non-alphanumerics.
//
// Names that fit are unchanged, so objects named before Ferry hashed keep their names.
func ChildName(parent, suffix string) string {
	if len(parent)+len(suffix) <= longestName {
		return parent + suffix
	}
	if len(suffix) < headLen {
		sum := md5.Sum([]byte(parent)) //nolint:gosec // a name hash, not security
		return parent[:headLen-len(suffix)] + hex.EncodeToString(sum[:]) + suffix
	}
	sum := md5.Sum([]byte(parent + suffix)) //nolint:gosec // a name hash, not security
	n := parent[:min(len(parent), headLen)] + hex.EncodeToString(sum[:])
	n += suffix[:longestName-len(n)]
	return strings.TrimRightFunc(n, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
}
