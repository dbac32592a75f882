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

	// Thirty Revisions go idle at once: one goes now, the rest one every 100 ms.
	for i := 0; i < 30; i++ {
		want := time.Duration(i) * 100 * time.Millisecond
		if got := p.wait(key(i), now); got != want {
			t.Fatalf("Revision %d waits %v, want %v", i, got, want)
		}
	}
	// Asking again keeps the turn it has: no second reservation pushes the others back.
	if got := p.wait(key(29), now.Add(time.Second)); got != 1900*time.Millisecond {
		t.Errorf("Revision 29 asked again 1 s later waits %v, want the 1.9 s left of its turn", got)
	}
	// A Revision whose load came back gives up its turn; going idle again, it queues
	// anew, after the last turn given (2.9 s).
	p.forget(key(20))
	if got := p.wait(key(20), now.Add(time.Second)); got != 2*time.Second {
		t.Errorf("Revision 20 after forget waits %v, want a new turn after the last one (2 s)", got)
	}
	if got := p.wait(key(29), now.Add(2900*time.Millisecond)); got != 0 {
		t.Errorf("Revision 29 at its turn waits %v, want 0", got)
	}
	if len(p.turns) != 28 {
		t.Errorf("%d turns kept, want 28 (those not yet taken)", len(p.turns))
	}
}
