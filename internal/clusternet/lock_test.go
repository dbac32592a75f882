package clusternet

import (
	"os"
	"strings"
	"testing"
)

// A plan in use is not stale to another ferry up, and a second ferry up on the same
// plan is refused, until the first lets go.
func TestLock(t *testing.T) {
	lockDir = t.TempDir()
	p := PlanFor("/tmp/ferry-lock-test/programs")
	if inUse(p.Prefix) {
		t.Fatal("a plan nobody ever locked is in use")
	}
	if err := lock(p); err != nil {
		t.Fatal(err)
	}
	if !inUse(p.Prefix) {
		t.Error("a locked plan is not in use")
	}
	if err := lock(p); err == nil || !strings.Contains(err.Error(), "in use by another ferry up") {
		t.Errorf("locking it twice: %v, want refused", err)
	}
	unlock(p)
	if inUse(p.Prefix) {
		t.Error("an unlocked plan is still in use")
	}
	if _, err := os.Stat(lockPath(p.Prefix)); !os.IsNotExist(err) {
		t.Errorf("the lock file of a plan let go is left behind: %v", err)
	}
	if err := lock(p); err != nil {
		t.Errorf("locking it again: %v", err)
	}
	unlock(p)
}
