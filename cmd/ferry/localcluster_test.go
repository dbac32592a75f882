//go:build !nolocalcluster

package main

import "testing"

func TestMemTotal(t *testing.T) {
	for _, tc := range []struct {
		meminfo string
		want    int64
	}{
		{"MemTotal:       24567520 kB\nMemFree:         1234 kB\n", 24567520 * 1024},
		{"MemFree:         1234 kB\nMemTotal:  16 kB\n", 16 * 1024},
		{"MemFree:         1234 kB\n", 0},
		{"MemTotal: lots kB\n", 0},
		{"", 0},
	} {
		if got := memTotal([]byte(tc.meminfo)); got != tc.want {
			t.Errorf("memTotal(%q) = %d, want %d", tc.meminfo, got, tc.want)
		}
	}
}
