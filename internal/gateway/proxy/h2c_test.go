package proxy

import (
	"testing"
	"time"
)

func TestGRPCDeadlinePassed(t *testing.T) {
	start := time.Unix(1000, 0)
	for _, tc := range []struct {
		timeout string
		after   time.Duration
		want    bool
	}{
		{"100m", 100 * time.Millisecond, true},
		{"100m", 99 * time.Millisecond, false},
		{"1S", 2 * time.Second, true},
		{"2M", time.Minute, false},
		{"1H", 2 * time.Hour, true},
		{"5u", time.Millisecond, true},
		{"5n", 0, false},
		{"", time.Hour, false},
		{"m", time.Hour, false},
		{"100x", time.Hour, false},
		{"123456789m", time.Hour, false}, // over 8 digits
		{"-1S", time.Hour, false},
	} {
		if got := grpcDeadlinePassed(tc.timeout, start, start.Add(tc.after)); got != tc.want {
			t.Errorf("grpc-timeout %q after %v: %v, want %v", tc.timeout, tc.after, got, tc.want)
		}
	}
}
