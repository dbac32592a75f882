package backends

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	coordinationv1 "k8s.io/api/coordination/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

func TestShare(t *testing.T) {
	for _, tc := range []struct {
		c           int64
		rank, count int
		want        []int64 // by replica index
	}{
		{c: 0, rank: 0, count: 2, want: []int64{0, 0}}, // no limit stays no limit
		{c: 5, rank: 3, count: 1, want: []int64{5}},
		{c: 1, rank: 0, count: 2, want: []int64{1, 0}},
		{c: 1, rank: 1, count: 2, want: []int64{0, 1}},
		{c: 1, rank: 2, count: 3, want: []int64{0, 0, 1}},
		{c: 2, rank: 0, count: 2, want: []int64{1, 1}},
		{c: 3, rank: 0, count: 2, want: []int64{2, 1}}, // the remainder goes by index...
		{c: 3, rank: 1, count: 2, want: []int64{1, 2}}, // ...rotated pod after pod
		{c: 10, rank: 4, count: 3, want: []int64{3, 4, 3}},
		{c: 2, rank: 1, count: 5, want: []int64{0, 0, 1, 1, 0}},
	} {
		for i, want := range tc.want {
			if got := share(tc.c, tc.rank, Membership{Count: tc.count, index: i}); got != want {
				t.Errorf("share(c=%d, rank %d) of replica %d of %d = %d, want %d", tc.c, tc.rank, i, tc.count, got, want)
			}
		}
	}
	// Over any pods and replicas: the shares of a pod sum to its containerConcurrency,
	// each is ⌊c/n⌋ or one more, and once there are as many slots as replicas every
	// replica has one.
	for c := int64(1); c <= 9; c++ {
		for n := 1; n <= 6; n++ {
			total := make([]int64, n)
			for rank := range 8 {
				var sum int64
				for i := range n {
					s := share(c, rank, Membership{Count: n, index: i})
					if s < c/int64(n) || s > c/int64(n)+1 {
						t.Fatalf("share(c=%d, rank %d) of replica %d of %d = %d", c, rank, i, n, s)
					}
					sum += s
					total[i] += s
				}
				if sum != c {
					t.Fatalf("c=%d over %d replicas: pod %d's shares sum to %d", c, n, rank, sum)
				}
				if c*int64(rank+1) >= int64(n) {
					for i, got := range total {
						if got == 0 {
							t.Fatalf("c=%d, %d pods, %d replicas: replica %d has no slot", c, rank+1, n, i)
						}
					}
				}
			}
		}
	}
}

// Two replicas, each with its own counters, never have more than containerConcurrency
// requests on a pod between them, and each finds the slots that are its own.
func TestAcquireTakesTheReplicasShare(t *testing.T) {
	build := func() *TargetSet {
		se := BuildEndpoints(gatewaytest.ServiceWithPort("r"), []discoveryv1.EndpointSlice{gatewaytest.SliceFor("r", 8012, "10.0.0.1", "10.0.0.2")}, gatewaytest.NotSimulated)
		newService(gatewaytest.Key("r")).attachPods(se)
		return se.Targets(intstr.FromInt32(80))
	}
	for _, c := range []int64{1, 2, 3} {
		replicas := []*TargetSet{build(), build()}
		perPod := map[string]int64{}
		for i, ts := range replicas {
			for ts.Acquire(c, Membership{Count: 2, index: i}) != nil {
			}
			for _, tg := range ts.targets {
				perPod[tg.IP] += tg.Pod.inflight.Load()
			}
		}
		for ip, n := range perPod {
			if n != c {
				t.Errorf("containerConcurrency %d: pod %s got %d requests from both replicas", c, ip, n)
			}
		}
		for i, ts := range replicas {
			if got := ts.targets[0].Pod.inflight.Load() + ts.targets[1].Pod.inflight.Load(); got != c {
				t.Errorf("containerConcurrency %d: replica %d holds %d slots, want %d", c, i, got, c)
			}
		}
	}
}

func TestReplicaSetMembershipAndRecords(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(name string, renewedAgo time.Duration, serves string) *coordinationv1.Lease {
		l := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: name, Labels: map[string]string{ReplicaLabel: "true"}},
			Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To(int32(15)),
				RenewTime: ptr.To(metav1.NewMicroTime(now.Add(-renewedAgo)))},
		}
		if serves != "" {
			l.Annotations = map[string]string{ServesAnnotation: serves}
		}
		return l
	}
	c := fake.NewClientBuilder().WithScheme(gatewaytest.NewScheme(t)).WithObjects(
		lease("ferry-gateway-a", time.Second, `{"ns/x":{"uid":"ux","generation":2},"ns/y":{"uid":"uy","generation":1}}`),
		lease("ferry-gateway-c", 20*time.Second, ""),                                                    // expired: gone
		&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "ferry-controller"}}, // not a replica
	).Build()
	requeue := make(chan event.GenericEvent, 10)
	rs := NewReplicaSet(c, "gw", "me", 15*time.Second, 25*time.Second, requeue)
	rs.Now = func() time.Time { return now }
	changes := 0
	rs.OnChange = func(Membership) { changes++ }
	if err := rs.create(ctx); err != nil {
		t.Fatal(err)
	}
	if m := rs.Members(); m.Count != 2 || changes != 1 {
		t.Fatalf("membership %+v (changes %d): want this replica and ferry-gateway-a", m, changes)
	}

	if !rs.ServedByAll(ctx, gatewaytest.Key("x"), "ux", 2) || !rs.ServedByAll(ctx, gatewaytest.Key("x"), "ux", 1) {
		t.Error("ferry-gateway-a records x at generation 2")
	}
	if rs.ServedByAll(ctx, gatewaytest.Key("y"), "uy", 2) || rs.ServedByAll(ctx, gatewaytest.Key("z"), "uz", 1) {
		t.Error("ferry-gateway-a does not serve y at generation 2, nor z")
	}
	if rs.ServedByAll(ctx, gatewaytest.Key("x"), "ux-again", 1) {
		t.Error("x deleted and created again: ferry-gateway-a's record is of the x before, not of this one")
	}
	// When ferry-gateway-a's Lease runs out, what waited for it is Ready, and the
	// membership shrinks.
	now = now.Add(15 * time.Second)
	rs.refresh(ctx)
	if m := rs.Members(); m != (Membership{Count: 1, index: 0}) {
		t.Errorf("membership %+v after the other replica's Lease expired", m)
	}
	if len(requeue) != 3 {
		t.Errorf("%d ingresses requeued when the membership changed, want y, z and the new x", len(requeue))
	}
	if !rs.ServedByAll(ctx, gatewaytest.Key("y"), "uy", 2) {
		t.Error("y still waits for a replica that is gone")
	}

	// The own record reaches the Lease, pruned of what the status already says.
	ready := gatewaytest.SimpleIngress("x", 0, "x-1", "x.example.com")
	ready.Status.ObservedGeneration = 1
	readyConditions := v1alpha1.IngressConditions.Manage(&ready.Status.Status)
	readyConditions.InitializeConditions()
	readyConditions.MarkTrue(v1alpha1.IngressConditionNetworkConfigured)
	readyConditions.MarkTrue(v1alpha1.IngressConditionLoadBalancerReady)
	if err := c.Create(ctx, ready); err != nil {
		t.Fatal(err)
	}
	y := gatewaytest.SimpleIngress("y", 0, "y-1", "y.example.com")
	if err := c.Create(ctx, y); err != nil {
		t.Fatal(err)
	}
	w := gatewaytest.SimpleIngress("w", 0, "w-1", "w.example.com")
	if err := c.Create(ctx, w); err != nil {
		t.Fatal(err)
	}
	rs.Programmed(gatewaytest.Key("x"), ready.UID, 1)
	rs.Programmed(gatewaytest.Key("z"), "uz", 1)            // deleted since
	rs.Programmed(gatewaytest.Key("w"), w.UID+"-before", 1) // deleted and created again since
	rs.Programmed(gatewaytest.Key("y"), y.UID, 3)
	if err := rs.write(ctx); err != nil {
		t.Fatal(err)
	}
	own := &coordinationv1.Lease{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "gw", Name: rs.name}, own); err != nil {
		t.Fatal(err)
	}
	if got, want := own.Annotations[ServesAnnotation], fmt.Sprintf(`{"ns/y":{"uid":%q,"generation":3}}`, y.UID); got != want {
		t.Errorf("record %s, want %s: y only (x is Ready at generation 1, z is gone, w is another w)", got, want)
	}
	if !own.Spec.RenewTime.Time.Equal(now.Truncate(time.Microsecond)) {
		t.Errorf("renewTime %v, want %v", own.Spec.RenewTime, now)
	}

	// Expired long enough, a Lease is collected by any replica.
	now = now.Add(45 * time.Second)
	rs.collect(ctx)
	if err := c.Get(ctx, types.NamespacedName{Namespace: "gw", Name: "ferry-gateway-c"}, &coordinationv1.Lease{}); err == nil {
		t.Error("a Lease expired for over three durations is still there")
	}
}

// A replica whose Lease the cache does not show yet (it has just joined, listed a
// KIngress at an older generation and serves it) still counts: the cache's yes is
// confirmed by the Leases as the API server has them.
func TestServedByAllCountsAReplicaTheCacheDoesNotShowYet(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	joined := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: "gw", Name: "ferry-gateway-new", Labels: map[string]string{ReplicaLabel: "true"},
			Annotations: map[string]string{ServesAnnotation: `{"ns/x":{"uid":"ux","generation":1}}`}},
		Spec: coordinationv1.LeaseSpec{LeaseDurationSeconds: ptr.To(int32(15)), RenewTime: ptr.To(metav1.NewMicroTime(now))},
	}
	cache := fake.NewClientBuilder().WithScheme(gatewaytest.NewScheme(t)).Build()
	server := fake.NewClientBuilder().WithScheme(gatewaytest.NewScheme(t)).WithObjects(joined).Build()
	rs := NewReplicaSet(cache, "gw", "me", 15*time.Second, 25*time.Second, make(chan event.GenericEvent, 10))
	rs.Now = func() time.Time { return now }
	if !rs.ServedByAll(ctx, gatewaytest.Key("x"), "ux", 2) {
		t.Fatal("without Confirm the cache alone decides: no other replica in it")
	}
	rs.Confirm = server
	if rs.ServedByAll(ctx, gatewaytest.Key("x"), "ux", 2) {
		t.Error("x Ready at generation 2 while ferry-gateway-new, not in the cache yet, serves generation 1")
	}
	if !rs.ServedByAll(ctx, gatewaytest.Key("x"), "ux", 1) {
		t.Error("every replica serves x at generation 1")
	}
}
