package programs

import (
	"os"
	"path/filepath"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// A pod's volumes are written while its first container's runc sets up, not before:
// most are reads from the API server (every pod's kube-api-access volume a token and a
// ConfigMap), about 10 ms of a cold start, and runc's own set-up is 30 ms or more of
// CPU that does not need them. runc mounts a volume's directory, so what is written
// into it afterwards shows in the container; only the program must not run before.

// volumeWrite is the writing of a pod's volumes: done closes once they are written,
// or once the pod ended first (err).
type volumeWrite struct {
	done chan struct{}
	err  error // set before done closes
}

func newVolumeWrite() *volumeWrite { return &volumeWrite{done: make(chan struct{})} }

// finish records the end of the writing; err is nil when the volumes are written.
func (v *volumeWrite) finish(err error) {
	v.err = err
	close(v.done)
}

// wait returns once the volumes are written (nil), or the pod ended first.
func (v *volumeWrite) wait() error {
	if v == nil {
		return nil
	}
	<-v.done
	return v.err
}

// pending reports whether the writing is still under way.
func (v *volumeWrite) pending() bool {
	if v == nil {
		return false
	}
	select {
	case <-v.done:
		return false
	default:
		return true
	}
}

// hold keeps a runc container's program from running until its pod's volumes are
// written. The container's createRuntime hook, which runc runs after the container's
// mounts and before the rest of its set-up (pivot_root, the process's exec), reads a
// line from a FIFO of the bundle's: "written" lets runc go on; anything else (the pod
// ended first) fails the hook and with it runc's start. The node holds the FIFO open
// for reading and writing, so that the hook's open never waits and the line stays
// until the hook reads it.
type hold struct {
	fifo *os.File
}

// holdLine is what the hook waits for.
const holdLine = "written"

// newHold makes bundle's FIFO and writes its line once v is done.
func newHold(bundle string, v *volumeWrite) (*hold, error) {
	path := filepath.Join(bundle, "volumes-written")
	if err := os.Remove(path); err != nil && !os.IsNotExist(err) {
		return nil, err
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, err
	}
	go func() {
		line := holdLine
		if v.wait() != nil {
			line = "ended"
		}
		_, _ = f.WriteString(line + "\n") // after close: runc has ended, nothing reads it
	}()
	return &hold{fifo: f}, nil
}

// hook is the createRuntime hook that waits for the line. /bin/sh runs it (in runc's
// namespaces, not the container's, so it needs nothing from the image).
func (h *hold) hook() specs.Hook {
	return specs.Hook{Path: "/bin/sh", Args: []string{"sh", "-c", `read -r line < "$1" && [ "$line" = ` + holdLine + ` ]`, "hold", h.fifo.Name()}}
}

// close lets go of the FIFO once runc's start has returned.
func (h *hold) close() { _ = h.fifo.Close() }
