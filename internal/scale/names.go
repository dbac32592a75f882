package scale

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// ServiceName is the name of the i-th Service of a run of n, after Knative's scale
// test: scale-<n, 5 digits>-<i, 3 digits (more when n ≥ 1000)>-<suffix>, e.g.
// scale-00010-004-gkwltbwt.
func ServiceName(n, i int, suffix string) string {
	width := 3
	if n >= 1000 {
		width = len(strconv.Itoa(n))
	}
	return fmt.Sprintf("scale-%05d-%0*d-%s", n, width, i, suffix)
}

// RandomSuffix is 8 random lowercase letters.
func RandomSuffix(r *rand.Rand) string {
	b := make([]byte, 8)
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

// RunID names a run in labels and in the default namespace and report directory:
// the start time to the second and 4 random letters, valid as a label value and in a
// DNS label.
func RunID(now time.Time, r *rand.Rand) string {
	return now.UTC().Format("20060102-150405") + "-" + RandomSuffix(r)[:4]
}
