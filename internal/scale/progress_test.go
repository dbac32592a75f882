package scale

import (
	"testing"
	"time"
)

func TestProgressLine(t *testing.T) {
	c := Counters{N: 10, Created: 6, Ready: 3, Routed: 2, Stuck: 1, Probing: true, Elapsed: 2500 * time.Millisecond}
	if got, want := ProgressLine(c, 10), "[███▒▒▒    ] created 6/10  ready 3  routed 2  stuck 1  2.50s"; got != want {
		t.Errorf("ProgressLine =\n %q, want\n %q", got, want)
	}
	c.Probing, c.Failed = false, 2
	if got, want := ProgressLine(c, 0), "created 6/10  ready 3  stuck 1  failed 2  2.50s"; got != want {
		t.Errorf("ProgressLine = %q, want %q", got, want)
	}
}
