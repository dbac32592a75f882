package kmeta

import (
	"crypto/md5" //nolint:gosec // the rule's own hash
	"encoding/hex"
	"strings"
	"testing"
)

func md5Hex(s string) string {
	sum := md5.Sum([]byte(s)) //nolint:gosec // the rule's own hash
	return hex.EncodeToString(sum[:])
}

// TestChildName checks the rule at its limits (a name of 63 is kept, 64 is hashed;
// suffixes of 30 and 31 take the two hashed forms), with the expected names built
// here from Knative's description of the rule, and a few literal names.
func TestChildName(t *testing.T) {
	p := func(n int) string { return strings.Repeat("p", n) }
	s := func(n int) string { return "-" + strings.Repeat("s", n-1) }
	dashed := "-sssssssss-" + s(40) // its first 11 characters end in a dash
	long63 := "the-longest-name-knative-accepts-for-a-service-is-63-characters"
	tests := []struct {
		name, parent, suffix, want string
	}{
		{"fits", "hello", "-00001", "hello-00001"},
		{"empty suffix", "hello", "", "hello"},
		{"exactly 63", p(57), "-00001", p(57) + "-00001"},
		{"64 with a short suffix", p(58), "-00001", p(25) + md5Hex(p(58)) + "-00001"},
		{"parent of 63, no suffix", p(63), "", p(63)},
		{"parent of 64, no suffix", p(64), "", p(31) + md5Hex(p(64))},
		{"suffix of 30", p(40), s(30), p(1) + md5Hex(p(40)) + s(30)},
		{"suffix of 31", p(40), s(31), p(31) + md5Hex(p(40)+s(31))},
		{"suffix of 31, short parent: padded with the suffix", p(33), s(31), p(31) + md5Hex(p(33)+s(31))},
		{"suffix of 50, parent of 20: padded with the suffix", p(20), s(50), p(20) + md5Hex(p(20)+s(50)) + s(50)[:11]},
		{"padding that ends in a dash is cut", p(20), dashed, p(20) + md5Hex(p(20)+dashed) + "-sssssssss"},
		{"suffix alone over 63", "", s(64), md5Hex(s(64)) + s(64)[:31]},
		// Literal names: Knative's own test's, and a 63-character Service's Revision and
		// Deployment (md5 computed outside Go).
		{"knative -deployment", strings.Repeat("f", 63), "-deployment", "ffffffffffffffffffff105d7597f637e83cc711605ac3ea4957-deployment"},
		{"knative -deploy", strings.Repeat("f", 63), "-deploy", "ffffffffffffffffffffffff105d7597f637e83cc711605ac3ea4957-deploy"},
		{"63-character Service's Revision", long63, "-00001", "the-longest-name-knative-0b3fa7fd5cddc016fb1060803dcc2532-00001"},
		{"and its Deployment", "the-longest-name-knative-0b3fa7fd5cddc016fb1060803dcc2532-00001", "-deployment", "the-longest-name-knad8fc388004f3b035b1a4205c4d5f2dd9-deployment"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ChildName(tc.parent, tc.suffix)
			if got != tc.want {
				t.Errorf("ChildName(%q, %q) =\n %q, want\n %q", tc.parent, tc.suffix, got, tc.want)
			}
			if len(got) > 63 {
				t.Errorf("ChildName(%q, %q) has %d characters, over 63", tc.parent, tc.suffix, len(got))
			}
		})
	}
}
