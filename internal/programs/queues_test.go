package programs

import (
	"testing"

	"k8s.io/client-go/util/workqueue"
)

func TestFirstAtOnce(t *testing.T) {
	l := firstAtOnce{workqueue.DefaultTypedControllerRateLimiter[any]()}
	if d := l.When("default/p"); d != 0 {
		t.Errorf("first try waits %v, want at once", d)
	}
	if d := l.When("default/p"); d == 0 {
		t.Error("a retry before a success goes at once, want it to wait")
	}
	if d := l.When("default/q"); d != 0 {
		t.Errorf("another pod's first try waits %v, want at once", d)
	}
	l.Forget("default/p")
	if d := l.When("default/p"); d != 0 {
		t.Errorf("the first try after a success waits %v, want at once", d)
	}
}
