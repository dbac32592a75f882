package proxy

import (
	"testing"
	"time"
)

func TestActivationWaitHeaderFormat(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1234 * time.Millisecond: "1.234s",
		5 * time.Millisecond:    "0.005s",
		90 * time.Second:        "90.000s",
	} {
		if got := formatWait(d); got != want {
			t.Errorf("formatWait(%v) = %q, want %q", d, got, want)
		}
		if _, err := time.ParseDuration(formatWait(d)); err != nil {
			t.Error(err)
		}
	}
}
