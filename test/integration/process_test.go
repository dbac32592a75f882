package integration

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// ferryBinEnv names a ferry binary built beforehand (hack/test.sh builds bin/ferry);
// without it the tests that run Ferry as its own OS process build one.
const ferryBinEnv = "FERRY_BIN"

var (
	buildOnce sync.Once
	builtBin  string
	buildErr  error
)

// ferryBinary returns the path of a ferry binary to run as a separate process, as a
// user runs `ferry controller` and `ferry gateway` on a cluster.
func ferryBinary(t testing.TB) string {
	t.Helper()
	if bin := os.Getenv(ferryBinEnv); bin != "" {
		return bin
	}
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "ferry-bin")
		if err != nil {
			buildErr = err
			return
		}
		builtBin = filepath.Join(dir, "ferry")
		cmd := exec.Command("go", "build", "-o", builtBin, "../../cmd/ferry")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = err
			builtBin = string(out)
		}
	})
	if buildErr != nil {
		t.Fatalf("building ferry: %v\n%s", buildErr, builtBin)
	}
	return builtBin
}

// process is a ferry command running as its own OS process for one test.
type process struct {
	cmd  *exec.Cmd
	out  *syncBuffer
	done chan struct{}
}

// startProcess runs the ferry binary with args (and env added to the test's) until
// the test ends; its output is logged if the test fails.
func startProcess(t testing.TB, name string, env []string, args ...string) *process {
	t.Helper()
	p := &process{cmd: exec.Command(ferryBinary(t), args...), out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		p.signal(syscall.SIGTERM)
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			p.Kill()
		}
		if t.Failed() {
			t.Logf("%s (%v) output:\n%s", name, args, p.out.String())
		}
	})
	return p
}

// Kill ends the process at once (kill -9), as a crash or an OOM kill does, and waits.
func (p *process) Kill() {
	p.signal(syscall.SIGKILL)
	<-p.done
}

// Exited reports whether the process has ended.
func (p *process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Output is what the process has printed so far.
func (p *process) Output() string { return p.out.String() }

func (p *process) signal(s syscall.Signal) {
	if p.cmd.Process != nil {
		_ = p.cmd.Process.Signal(s)
	}
}

// syncBuffer is a bytes.Buffer safe for the process's writes and the test's reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
