package backpressure

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/api/duck"
	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"
)

func service(name string, generation, observed int64, ready corev1.ConditionStatus) *servingv1.Service {
	s := &servingv1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: generation}}
	s.Status.ObservedGeneration = observed
	if ready != "" {
		s.Status.Conditions = []duck.Condition{{Type: duck.ConditionReady, Status: ready}}
	}
	return s
}

func TestInProgress(t *testing.T) {
	deleting := service("d", 1, 0, "")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	for _, tc := range []struct {
		name string
		svc  *servingv1.Service
		want bool
	}{
		{"just created, no status", service("a", 1, 0, ""), true},
		{"reconciled, Ready Unknown", service("a", 1, 1, corev1.ConditionUnknown), true},
		{"Ready", service("a", 1, 1, corev1.ConditionTrue), false},
		{"failed", service("a", 1, 1, corev1.ConditionFalse), false},
		{"updated, Ready for the old generation", service("a", 2, 1, corev1.ConditionTrue), true},
		{"being deleted", deleting, false},
	} {
		if got := InProgress(tc.svc); got != tc.want {
			t.Errorf("%s: InProgress = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// hold runs Hold in the background and returns its results on a channel.
func hold(b *Backlog, max time.Duration) <-chan time.Duration {
	done := make(chan time.Duration, 1)
	go func() {
		waited, _ := b.Hold(context.Background(), max)
		done <- waited
	}()
	return done
}

func TestHoldWaitsForAServiceToFinish(t *testing.T) {
	b := New(2)
	b.OnAdd(service("a", 1, 0, ""), false)
	if waited, n := b.Hold(context.Background(), time.Minute); waited > time.Second || n != 1 {
		t.Fatalf("below the limit: held %v with %d in progress", waited, n)
	}
	if b.Full() {
		t.Error("full with 1 in progress, limit 2")
	}
	b.OnAdd(service("b", 1, 0, ""), false)
	// A Service that is Ready already does not count.
	b.OnAdd(service("c", 1, 1, corev1.ConditionTrue), true)
	if !b.Full() {
		t.Error("not full with 2 in progress, limit 2")
	}

	done := hold(b, time.Minute)
	select {
	case w := <-done:
		t.Fatalf("at the limit, a create was admitted after %v", w)
	case <-time.After(100 * time.Millisecond):
	}
	// Progress that does not finish a Service does not release it.
	b.OnUpdate(service("a", 1, 0, ""), service("a", 1, 1, corev1.ConditionUnknown))
	select {
	case w := <-done:
		t.Fatalf("released after %v by a Service still in progress", w)
	case <-time.After(100 * time.Millisecond):
	}
	b.OnUpdate(service("a", 1, 1, corev1.ConditionUnknown), service("a", 1, 1, corev1.ConditionTrue))
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("still held after a Service became Ready")
	}
}

func TestHoldEndsAtItsMaximum(t *testing.T) {
	b := New(1)
	b.OnAdd(service("stuck", 1, 1, corev1.ConditionUnknown), false)
	waited, n := b.Hold(context.Background(), 200*time.Millisecond)
	if waited < 200*time.Millisecond || n != 1 {
		t.Errorf("held %v with %d in progress, want the whole 200ms with 1", waited, n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if waited, _ := b.Hold(ctx, time.Minute); waited > time.Second {
		t.Errorf("a cancelled request was held %v", waited)
	}
}

func TestDeletedServicesLeaveTheBacklog(t *testing.T) {
	b := New(1)
	b.OnAdd(service("a", 1, 0, ""), false)
	done := hold(b, time.Minute)
	// The informer missed the delete and relisted: a tombstone.
	b.OnDelete(toolscache.DeletedFinalStateUnknown{Key: "ns/a", Obj: service("a", 1, 0, "")})
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("still held after the only Service in progress was deleted")
	}

	// A Service whose deletion began no longer counts either.
	b.OnAdd(service("b", 1, 0, ""), false)
	deleting := service("b", 1, 0, "")
	deleting.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	b.OnUpdate(service("b", 1, 0, ""), deleting)
	if waited, n := b.Hold(context.Background(), time.Minute); waited > time.Second || n != 0 {
		t.Errorf("held %v with %d in progress after the deletion began", waited, n)
	}
}

func TestABurstFromAQuarterUntilItsTail(t *testing.T) {
	b := New(120) // a burst begins at 30 in progress and ends at 4
	add := func(from, to int) {
		for i := from; i < to; i++ {
			b.OnAdd(service(fmt.Sprint(i), 1, 0, ""), false)
		}
	}
	finish := func(from, to int) {
		for i := from; i < to; i++ {
			b.OnUpdate(nil, service(fmt.Sprint(i), 1, 1, corev1.ConditionTrue))
		}
	}
	add(0, 29)
	if !closed(b.Calm()) {
		t.Error("a burst with 29 in progress, below a quarter of the limit")
	}
	add(29, 30)
	calm := b.Calm()
	if closed(calm) {
		t.Error("no burst with 30 in progress")
	}
	finish(0, 25)
	if closed(calm) || closed(b.Calm()) {
		t.Error("the burst ended with 5 still in progress")
	}
	finish(25, 26)
	if !closed(calm) || !closed(b.Calm()) {
		t.Error("the burst goes on with 4 in progress")
	}
	add(100, 110)
	if !closed(b.Calm()) {
		t.Error("a burst again at 14 in progress, without a new one beginning")
	}
	add(110, 130)
	if closed(b.Calm()) {
		t.Error("a second burst, at 34 in progress, is not one")
	}
	if !closed(calm) {
		t.Error("the first burst's Calm was reopened by the second")
	}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

func TestQuietWhileNoNewChangeIsOnItsWay(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	b := New(150).WithClock(clk)
	if !closed(b.Quiet()) {
		t.Fatal("not quiet on an empty cluster")
	}
	b.OnAdd(service("a", 1, 0, ""), false)
	quiet := b.Quiet()
	if closed(quiet) {
		t.Fatal("quiet while one new Service is on its way")
	}
	b.OnUpdate(nil, service("a", 1, 1, corev1.ConditionTrue))
	if !closed(quiet) || !closed(b.Quiet()) {
		t.Fatal("not quiet once the new Service is Ready")
	}

	// A change to a Ready Service (a new generation) is new work too.
	b.OnUpdate(nil, service("a", 2, 1, corev1.ConditionTrue))
	if closed(b.Quiet()) {
		t.Fatal("quiet while a Service's update is on its way")
	}
	// One that stays in progress (stuck) stops counting after FreshFor, so that
	// work waiting for quiet never waits on it for good.
	clk.Step(FreshFor / 2)
	b.OnAdd(service("b", 1, 0, ""), false)
	clk.Step(FreshFor / 2)
	if closed(b.Quiet()) {
		t.Fatal("quiet while b, FreshFor/2 old, is on its way")
	}
	clk.Step(FreshFor / 2)
	if !closed(b.Quiet()) {
		t.Fatal("not quiet with only Services in progress for FreshFor or longer")
	}
	// b finishing later does not disturb the quiet; a's new change after its old
	// one aged is fresh again.
	b.OnUpdate(nil, service("b", 1, 1, corev1.ConditionTrue))
	b.OnUpdate(nil, service("a", 2, 2, corev1.ConditionTrue))
	b.OnUpdate(nil, service("a", 3, 2, corev1.ConditionTrue))
	if closed(b.Quiet()) {
		t.Fatal("quiet while a's third generation is on its way")
	}
}
