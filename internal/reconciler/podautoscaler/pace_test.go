package podautoscaler

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestPaceSpreadsScaleToZero(t *testing.T) {
	p := newPace(10)
	now := time.Unix(1000, 0)
	key := func(i int) types.NamespacedName {
		return types.NamespacedName{Namespace: "idle", Name: fmt.Sprint("r", i)}
	}

	// Thirty Revisions go idle at once: ten go now, the rest one every 100 ms.
	for i := 0; i < 30; i++ {
		want := time.Duration(max(0, i-9)) * 100 * time.Millisecond
		if got := p.wait(key(i), now); got != want {
			t.Fatalf("Revision %d waits %v, want %v", i, got, want)
		}
	}
	// Asking again keeps the turn it has: no second reservation pushes the others back.
	if got := p.wait(key(29), now.Add(time.Second)); got != time.Second {
		t.Errorf("Revision 29 asked again 1 s later waits %v, want the 1 s left of its turn", got)
	}
	if got := p.wait(key(29), now.Add(2*time.Second)); got != 0 {
		t.Errorf("Revision 29 at its turn waits %v, want 0", got)
	}
	// A Revision whose load came back gives up its turn; going idle again, it queues anew.
	p.forget(key(20))
	if got := p.wait(key(20), now.Add(2*time.Second)); got != 100*time.Millisecond {
		t.Errorf("Revision 20 after forget waits %v, want a new turn after the last one (100 ms)", got)
	}
	if len(p.turns) != 19 {
		t.Errorf("%d turns kept, want 19 (those not yet taken)", len(p.turns))
	}
	// A Revision whose turn came but had to wait for something else keeps it: it goes
	// next, not to the back of the line.
	at := now.Add(3 * time.Second)
	if got := p.wait(key(21), at); got != 0 {
		t.Fatalf("Revision 21 at its turn waits %v, want 0", got)
	}
	p.keep(key(21), at)
	if got := p.wait(key(21), at.Add(time.Minute)); got != 0 {
		t.Errorf("Revision 21, its turn kept, waits %v a minute later, want 0", got)
	}
}
