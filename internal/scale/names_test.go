package scale

import (
	"math/rand/v2"
	"regexp"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestServiceName(t *testing.T) {
	for _, tc := range []struct {
		n, i int
		want string
	}{
		{10, 4, "scale-00010-004-gkwltbwt"},
		{200, 199, "scale-00200-199-gkwltbwt"},
		{999, 0, "scale-00999-000-gkwltbwt"},
		{1000, 999, "scale-01000-0999-gkwltbwt"},
		{5000, 42, "scale-05000-0042-gkwltbwt"},
		{12345, 7, "scale-12345-00007-gkwltbwt"},
	} {
		if got := ServiceName(tc.n, tc.i, "gkwltbwt"); got != tc.want {
			t.Errorf("ServiceName(%d, %d) = %q, want %q", tc.n, tc.i, got, tc.want)
		}
		if errs := validation.IsDNS1035Label(ServiceName(tc.n, tc.i, "gkwltbwt")); len(errs) > 0 {
			t.Errorf("not a DNS-1035 label: %v", errs)
		}
	}
}

func TestRandomSuffixAndRunID(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	seen := map[string]bool{}
	for range 100 {
		s := RandomSuffix(r)
		if !regexp.MustCompile(`^[a-z]{8}$`).MatchString(s) {
			t.Fatalf("suffix %q is not 8 lowercase letters", s)
		}
		seen[s] = true
	}
	if len(seen) < 99 {
		t.Errorf("only %d distinct suffixes of 100", len(seen))
	}
	id := RunID(time.Date(2026, 11, 30, 9, 8, 0, 0, time.UTC), r)
	if !regexp.MustCompile(`^20261130-090800-[a-z]{4}$`).MatchString(id) {
		t.Errorf("RunID = %q", id)
	}
	if errs := validation.IsValidLabelValue(id + "-warmup"); len(errs) > 0 {
		t.Errorf("run ID is no label value: %v", errs)
	}
	if errs := validation.IsDNS1123Label("ferry-scale-" + id); len(errs) > 0 {
		t.Errorf("default namespace is no DNS label: %v", errs)
	}
}
