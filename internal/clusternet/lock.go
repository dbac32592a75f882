package clusternet

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// lockDir holds a lock file per plan. A running ferry up holds its plan's lock
// (flock, which the kernel releases when the process ends, however it ends), so that
// another ferry up tells the namespaces of one that was killed, which it removes, from
// those of one still starting, whose node namespace has no process in it yet.
var lockDir = "/run/ferry"

var (
	heldMu sync.Mutex
	held   = map[string]*os.File{}
)

func lockPath(prefix string) string { return filepath.Join(lockDir, prefix+"lock") }

// lock takes p's lock, or says that another process holds it.
func lock(p Plan) error {
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(lockPath(p.Prefix), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return fmt.Errorf("the pods' network %s* is in use by another ferry up (on the same data directory?): %w", p.Prefix, err)
	}
	heldMu.Lock()
	held[p.Prefix] = f
	heldMu.Unlock()
	return nil
}

// unlock releases p's lock and removes its file, still holding it: every temporary
// data directory (ferry scale, ferry soak, the tests) has a plan of its own, and
// /run/ferry would keep a file for each. A process killed leaves its file behind,
// unlocked, which is what tells its namespaces stale.
func unlock(p Plan) {
	heldMu.Lock()
	f := held[p.Prefix]
	delete(held, p.Prefix)
	heldMu.Unlock()
	if f != nil {
		_ = os.Remove(f.Name())
		f.Close()
	}
}

// inUse says whether a running process holds the lock of the plan of prefix.
func inUse(prefix string) bool {
	f, err := os.Open(lockPath(prefix))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		return true
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
