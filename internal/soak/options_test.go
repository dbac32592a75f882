package soak

import (
	"slices"
	"testing"
)

func TestParseFaults(t *testing.T) {
	cases := []struct {
		in   string
		want []Fault
		err  bool
	}{
		{"", nil, false},
		{"none", nil, false},
		{"all", AllFaults, false},
		{"gateway, controller,gateway", []Fault{FaultGateway, FaultController}, false},
		{"controller,disk", nil, true},
	}
	for _, c := range cases {
		got, err := ParseFaults(c.in)
		if (err != nil) != c.err || !slices.Equal(got, c.want) {
			t.Errorf("ParseFaults(%q) = %v, %v; want %v (error %v)", c.in, got, err, c.want, c.err)
		}
	}
}
