package programs

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// fakeRunc is a runc that takes setup before it starts the container (writes --pid-file,
// as runc does once the container's process runs) and then runs as that process; or,
// with setup "fail", exits 3 without starting anything.
func fakeRunc(t *testing.T, setup string) *runc {
	t.Helper()
	script := `#!/bin/sh
while [ $# -gt 0 ]; do [ "$1" = --pid-file ] && pid=$2; shift; done
[ "` + setup + `" = fail ] && exit 3
sleep ` + setup + `
echo $$ > "$pid.tmp" && mv "$pid.tmp" "$pid"
exec sleep 30
`
	bin := filepath.Join(t.TempDir(), "runc")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return &runc{binary: bin, root: t.TempDir()}
}

func TestRuncStartReturnsOnceTheContainerRuns(t *testing.T) {
	bundle := t.TempDir()
	spec := &specs.Spec{Root: &specs.Root{Path: filepath.Join(bundle, "rootfs")}}
	began := time.Now()
	cmd, err := fakeRunc(t, "0.5").start("c1", bundle, spec, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Probes and StartedAt count from here: not before runc's setup ended.
	if took := time.Since(began); took < 500*time.Millisecond {
		t.Errorf("start returned after %v, while runc was still setting up (0.5s)", took)
	}
	if _, err := os.Stat(filepath.Join(bundle, "pid")); err != nil {
		t.Errorf("start returned before runc wrote its pid file: %v", err)
	}
}

func TestRuncStartReturnsWhenRuncFails(t *testing.T) {
	bundle := t.TempDir()
	spec := &specs.Spec{Root: &specs.Root{Path: filepath.Join(bundle, "rootfs")}}
	done := make(chan struct{})
	var cmd *exec.Cmd
	var err error
	go func() {
		defer close(done)
		cmd, err = fakeRunc(t, "fail").start("c1", bundle, spec, nil, nil)
	}()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("start still waits for a container that runc never started (runc exited)")
	}
	if err != nil {
		t.Fatal(err)
	}
	// The exit was left to Wait: the runner reports it as the run's exit code.
	var exitErr *exec.ExitError
	if werr := cmd.Wait(); !errors.As(werr, &exitErr) || exitErr.ExitCode() != 3 {
		t.Errorf("Wait: %v, want runc's exit status 3", werr)
	}
}

// TestRemoveCgroupParent: the node's cgroup parent goes from every hierarchy where it
// is empty, and stays where a container's cgroup is still in it.
func TestRemoveCgroupParent(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"cpu/fp1234-", "memory/fp1234-/busy", "fp1234-", "cpu/fp9999-"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	removeCgroupParent(root, "fp1234-")
	for d, want := range map[string]bool{"cpu/fp1234-": false, "fp1234-": false, "memory/fp1234-/busy": true, "cpu/fp9999-": true} {
		if _, err := os.Stat(filepath.Join(root, d)); (err == nil) != want {
			t.Errorf("%s there: %v, want %v", d, err == nil, want)
		}
	}
}
