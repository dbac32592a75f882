//go:build !nolocalcluster

package main

import (
	"os"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
)

// The process that runs the local cluster gets GOGC 200 and a soft memory limit at
// 60 % of what it may use, unless the environment says otherwise.
func TestTuneCollector(t *testing.T) {
	gcPercent, memLimit := debug.SetGCPercent(-1), debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(gcPercent); debug.SetMemoryLimit(memLimit) })
	unset := func(key string) {
		t.Setenv(key, "") // restored after the test
		os.Unsetenv(key)
	}
	unset("GOGC")
	unset("GOMEMLIMIT")
	unset("AUTOMEMLIMIT")

	debug.SetGCPercent(100)
	tuneCollector()
	if got := debug.SetGCPercent(-1); got != localClusterGCPercent {
		t.Errorf("GOGC %d, want %d", got, localClusterGCPercent)
	}
	total, err := memlimit.FromSystem()
	if err != nil {
		t.Fatal(err)
	}
	if got := debug.SetMemoryLimit(-1); got <= 0 || got > int64(float64(total)*localClusterMemoryShare) {
		t.Errorf("memory limit %d, want at most %.0f %% of %d", got, 100*localClusterMemoryShare, total)
	}

	// The environment's settings win.
	debug.SetGCPercent(100)
	t.Setenv("GOGC", "100")
	tuneCollector()
	if got := debug.SetGCPercent(-1); got != 100 {
		t.Errorf("with GOGC=100 set: GOGC %d", got)
	}
}
