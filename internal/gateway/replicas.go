package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Gateway replicas find each other through Leases: each keeps one, labelled
// ReplicaLabel, in Options.LeaseNamespace and renews it every third of its duration. A
// Lease whose renewTime is more than its duration old no longer counts; a replica that
// stops deletes its own once its requests are done. From the live Leases, sorted by
// name, every replica derives the same count and its own index, which split each
// pod's containerConcurrency (share). The Lease also carries what the replica has
// programmed and the KIngress status does not yet say (ServesAnnotation), so that a
// KIngress is Ready only once every live replica serves its generation.

const (
	// ReplicaLabel marks a gateway replica's Lease.
	ReplicaLabel = "serving.ferry.dev/gateway-replica"
	// ServesAnnotation on a replica's Lease maps "namespace/name" of the KIngresses it
	// has programmed, while their status is not yet Ready for that generation, to the
	// generation: JSON, for example {"default/hello":3}.
	ServesAnnotation = "serving.ferry.dev/serves"

	// reasonWaitingForReplicas and messageWaitingForReplicas are Knative's
	// LoadBalancerReady Unknown (MarkLoadBalancerNotReady).
	reasonWaitingForReplicas  = v1alpha1.ReasonUninitialized
	messageWaitingForReplicas = "Waiting for load balancer to be ready"
)

// membership is how many replicas are live and which of them this one is, in the
// order of their Lease names.
type membership struct{ count, index int }

var alone = &membership{count: 1}

// share is the part of a pod's containerConcurrency c that replica index of count may
// use, for the pod at position rank among its revision's endpoints (sorted by
// address, as every replica sorts them). The revision's slots are dealt round robin:
// slot s of the pod at rank p is number p·c+s and goes to replica (p·c+s) mod count.
// So the replicas' shares of a pod sum to c, every replica gets ⌊c/count⌋ or one
// more of each pod, and with c < count each pod's slots go to different replicas
// pod after pod. A share can be 0: that replica may not send the pod anything.
func share(c int64, rank int, m membership) int64 {
	if c <= 0 || m.count <= 1 {
		return c
	}
	first := int64(rank) * c
	return slotsBelow(first+c, m) - slotsBelow(first, m)
}

// slotsBelow counts the slot numbers in [0, x) that go to replica m.index.
func slotsBelow(x int64, m membership) int64 {
	i, n := int64(m.index), int64(m.count)
	if x <= i {
		return 0
	}
	return (x-i-1)/n + 1
}

// replicaSet keeps this replica's Lease and reads the others'. A nil *replicaSet is a
// replica alone: every share is the whole, and what it has programmed is served by
// all.
type replicaSet struct {
	client    client.Client // reads through the manager's cache
	namespace string
	holder    string
	duration  time.Duration
	now       func() time.Time
	// requeue takes the KIngresses whose Ready may change with the membership.
	requeue chan<- event.GenericEvent
	// onChange runs when the membership changes: held requests look at their share
	// again.
	onChange func(membership)
	// idle reports whether this replica has no request in flight, for the stop.
	idle func() bool
	// drainTimeout bounds how long a stopping replica waits for idle.
	drainTimeout time.Duration

	current atomic.Pointer[membership]
	dirty   chan struct{}
	// refreshing serializes refresh, so that an older view of the Leases never
	// replaces a newer one.
	refreshing sync.Mutex

	mu   sync.Mutex
	name string // of the own Lease, once created
	// serves is this replica's record: KIngresses programmed, by generation.
	serves map[types.NamespacedName]int64
	// waiting are the KIngresses whose Ready waits for another replica.
	waiting map[types.NamespacedName]bool
	// parsed caches the others' records by Lease name and resourceVersion.
	parsed map[string]parsedServes
}

type parsedServes struct {
	resourceVersion string
	serves          map[string]int64
}

func newReplicaSet(opts Options, c client.Client, requeue chan<- event.GenericEvent) *replicaSet {
	rs := &replicaSet{client: c, namespace: opts.LeaseNamespace, holder: opts.Source, duration: opts.LeaseDuration,
		now: time.Now, requeue: requeue, drainTimeout: opts.DrainTimeout, dirty: make(chan struct{}, 1),
		serves: map[types.NamespacedName]int64{}, waiting: map[types.NamespacedName]bool{}, parsed: map[string]parsedServes{}}
	rs.current.Store(alone)
	return rs
}

// members is the current membership; one load per request.
func (rs *replicaSet) members() membership {
	if rs == nil {
		return *alone
	}
	return *rs.current.Load()
}

// NeedLeaderElection is false: every replica keeps its own Lease.
func (rs *replicaSet) NeedLeaderElection() bool { return false }

// Start creates the Lease, renews it and writes the record when it changes, and
// deletes the Lease on the way out, once this replica's requests are done, so that
// no other replica takes a larger share while they still run.
func (rs *replicaSet) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("gateway-replicas")
	ticker := time.NewTicker(rs.duration / 3)
	defer ticker.Stop()
	// Until its Lease exists this replica counts itself alone, and says so.
	for {
		err := rs.create(ctx)
		if err == nil {
			break
		}
		logger.Error(err, "creating the gateway replica's Lease; this replica assumes it is alone until it can", "namespace", rs.namespace)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
	for {
		select {
		case <-ctx.Done():
			rs.leave(logger)
			return nil
		case <-ticker.C:
			rs.refresh(ctx)
			rs.collect(ctx)
		case <-rs.dirty:
		}
		if err := rs.write(ctx); err != nil && ctx.Err() == nil {
			logger.Error(err, "renewing the gateway replica's Lease")
		}
	}
}

func (rs *replicaSet) create(ctx context.Context) error {
	now := metav1.NewMicroTime(rs.now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "ferry-gateway-", Namespace: rs.namespace,
			Labels: map[string]string{ReplicaLabel: "true"}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &rs.holder, LeaseDurationSeconds: ptr.To(int32(rs.duration / time.Second)),
			AcquireTime: &now, RenewTime: &now},
	}
	if err := rs.client.Create(ctx, lease); err != nil {
		return err
	}
	rs.mu.Lock()
	rs.name = lease.Name
	rs.mu.Unlock()
	rs.refresh(ctx)
	return nil
}

// write renews the Lease with the current record, pruned of what the KIngresses'
// status already says. A Lease deleted under it (collected while this replica was
// stalled) is created again.
func (rs *replicaSet) write(ctx context.Context) error {
	rs.prune(ctx)
	rs.mu.Lock()
	name := rs.name
	record := make(map[string]int64, len(rs.serves))
	for key, gen := range rs.serves {
		record[key.String()] = gen
	}
	rs.mu.Unlock()
	value, err := json.Marshal(record)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{ServesAnnotation: string(value)}},
		"spec":     map[string]any{"renewTime": metav1.NewMicroTime(rs.now())},
	})
	if err != nil {
		return err
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: rs.namespace, Name: name}}
	err = rs.client.Patch(ctx, lease, client.RawPatch(types.MergePatchType, patch))
	if apierrors.IsNotFound(err) {
		if err = rs.create(ctx); err == nil {
			rs.markDirty()
		}
	}
	return err
}

// leave waits, within the drain timeout, for this replica's requests to finish, then
// deletes its Lease so the others count it out at once.
func (rs *replicaSet) leave(logger logr.Logger) {
	deadline := rs.now().Add(rs.drainTimeout)
	for rs.idle != nil && !rs.idle() && rs.now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	rs.mu.Lock()
	name := rs.name
	rs.mu.Unlock()
	if name == "" {
		return
	}
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: rs.namespace, Name: name}}
	if err := rs.client.Delete(ctx, lease); client.IgnoreNotFound(err) != nil {
		logger.Error(err, "deleting the gateway replica's Lease; the others count it out when it expires")
	}
}

func (rs *replicaSet) markDirty() {
	select {
	case rs.dirty <- struct{}{}:
	default:
	}
}

// leases lists the replicas' Leases from the cache, live or not.
func (rs *replicaSet) leases(ctx context.Context) ([]coordinationv1.Lease, error) {
	list := &coordinationv1.LeaseList{}
	if err := rs.client.List(ctx, list, client.InNamespace(rs.namespace), client.HasLabels{ReplicaLabel}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// expiredFor is how long ago a Lease's duration ran out; negative while it is live.
func (rs *replicaSet) expiredFor(l *coordinationv1.Lease) time.Duration {
	if l.Spec.RenewTime == nil {
		return time.Duration(1<<63 - 1)
	}
	d := rs.duration
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return rs.now().Sub(l.Spec.RenewTime.Add(d))
}

// refresh recomputes the membership from the live Leases, this replica's always
// among them.
func (rs *replicaSet) refresh(ctx context.Context) {
	rs.refreshing.Lock()
	defer rs.refreshing.Unlock()
	leases, err := rs.leases(ctx)
	if err != nil {
		return
	}
	rs.mu.Lock()
	own := rs.name
	// The parsed records of Leases that are gone go with them.
	for name := range rs.parsed {
		if !slices.ContainsFunc(leases, func(l coordinationv1.Lease) bool { return l.Name == name }) {
			delete(rs.parsed, name)
		}
	}
	rs.mu.Unlock()
	names := []string{own}
	for i := range leases {
		if leases[i].Name != own && rs.expiredFor(&leases[i]) < 0 {
			names = append(names, leases[i].Name)
		}
	}
	slices.Sort(names)
	next := &membership{count: len(names), index: slices.Index(names, own)}
	if *rs.current.Swap(next) == *next {
		return
	}
	log.FromContext(ctx).WithName("gateway-replicas").Info("gateway replicas changed", "replicas", next.count, "index", next.index)
	rs.markDirty()
	if rs.onChange != nil {
		rs.onChange(*next)
	}
	rs.mu.Lock()
	waiting := make([]types.NamespacedName, 0, len(rs.waiting))
	for key := range rs.waiting {
		waiting = append(waiting, key)
	}
	rs.mu.Unlock()
	for _, key := range waiting {
		select {
		case rs.requeue <- ingressEvent(key):
		case <-ctx.Done():
			return
		}
	}
}

// collect deletes the Leases of replicas gone for three durations (killed, so never
// deleted by themselves): any replica may, as none is coming back under that name.
func (rs *replicaSet) collect(ctx context.Context) {
	leases, err := rs.leases(ctx)
	if err != nil {
		return
	}
	for i := range leases {
		if rs.expiredFor(&leases[i]) > 3*rs.duration {
			_ = client.IgnoreNotFound(rs.client.Delete(ctx, &leases[i], client.Preconditions{ResourceVersion: &leases[i].ResourceVersion}))
		}
	}
}

// programmed records that this replica serves generation gen of key; the record
// reaches the Lease at once (one write for what accumulates meanwhile) when other
// replicas read it.
func (rs *replicaSet) programmed(key types.NamespacedName, gen int64) {
	if rs == nil {
		return
	}
	rs.mu.Lock()
	changed := rs.serves[key] != gen
	rs.serves[key] = gen
	rs.mu.Unlock()
	// Alone, nobody reads the record: it waits for the next renewal, or for a
	// replica to join (refresh writes it then).
	if changed && rs.members().count > 1 {
		rs.markDirty()
	}
}

// forget drops a KIngress that is gone or no longer served here.
func (rs *replicaSet) forget(key types.NamespacedName) {
	if rs == nil {
		return
	}
	rs.mu.Lock()
	delete(rs.waiting, key)
	rs.mu.Unlock()
}

// servedByAll reports whether every live replica other than this one records
// generation gen of key or a later one. It remembers a KIngress that waits, to look
// again when the membership changes.
func (rs *replicaSet) servedByAll(ctx context.Context, key types.NamespacedName, gen int64) bool {
	if rs == nil {
		return true
	}
	leases, err := rs.leases(ctx)
	if err != nil {
		return false
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	all := true
	for i := range leases {
		l := &leases[i]
		if l.Name == rs.name || rs.expiredFor(l) >= 0 {
			continue
		}
		if rs.recordOf(l)[key.String()] < gen {
			all = false
			break
		}
	}
	if all {
		delete(rs.waiting, key)
	} else {
		rs.waiting[key] = true
	}
	return all
}

// recordOf parses a Lease's record, once per resourceVersion. An unreadable record
// is empty: that replica serves nothing yet, as far as Ready goes. Called under mu.
func (rs *replicaSet) recordOf(l *coordinationv1.Lease) map[string]int64 {
	if p, ok := rs.parsed[l.Name]; ok && p.resourceVersion == l.ResourceVersion {
		return p.serves
	}
	var serves map[string]int64
	_ = json.Unmarshal([]byte(l.Annotations[ServesAnnotation]), &serves)
	rs.parsed[l.Name] = parsedServes{resourceVersion: l.ResourceVersion, serves: serves}
	return serves
}

// affected maps a Lease event to the KIngresses whose Ready it may decide: those in
// its record, and those waiting here. It refreshes the membership first.
func (rs *replicaSet) affected(ctx context.Context, o client.Object) []reconcile.Request {
	l, ok := o.(*coordinationv1.Lease)
	if !ok || l.Namespace != rs.namespace || l.Labels[ReplicaLabel] == "" {
		return nil
	}
	rs.refresh(ctx)
	var serves map[string]int64
	_ = json.Unmarshal([]byte(l.Annotations[ServesAnnotation]), &serves)
	rs.mu.Lock()
	defer rs.mu.Unlock()
	var reqs []reconcile.Request
	for key := range rs.waiting {
		reqs = append(reqs, reconcile.Request{NamespacedName: key})
	}
	for s := range serves {
		ns, name, ok := strings.Cut(s, "/")
		if key := (types.NamespacedName{Namespace: ns, Name: name}); ok && !rs.waiting[key] {
			reqs = append(reqs, reconcile.Request{NamespacedName: key})
		}
	}
	return reqs
}

// prune drops from the record what no longer needs saying: KIngresses gone, and
// those whose status has moved past waiting for that generation (Ready, or not
// configured for a reason of their own).
func (rs *replicaSet) prune(ctx context.Context) {
	rs.mu.Lock()
	keys := make(map[types.NamespacedName]int64, len(rs.serves))
	for key, gen := range rs.serves {
		keys[key] = gen
	}
	rs.mu.Unlock()
	for key, gen := range keys {
		ing := &v1alpha1.Ingress{}
		err := rs.client.Get(ctx, key, ing)
		if err != nil && !apierrors.IsNotFound(err) {
			continue
		}
		if err == nil && (ing.Status.ObservedGeneration < gen || waitingForReplicas(&ing.Status)) {
			continue
		}
		rs.mu.Lock()
		if rs.serves[key] == gen {
			delete(rs.serves, key)
		}
		rs.mu.Unlock()
	}
}

// waitingForReplicas says the status waits for a gateway replica.
func waitingForReplicas(status *v1alpha1.IngressStatus) bool {
	c := v1alpha1.IngressConditions.Manage(&status.DeepCopy().Status).GetCondition(v1alpha1.IngressConditionLoadBalancerReady)
	return c == nil || c.Reason == reasonWaitingForReplicas
}

func ingressEvent(key types.NamespacedName) event.GenericEvent {
	return event.GenericEvent{Object: &v1alpha1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
}

// newReplicaSet is this replica's Lease in Options.LeaseNamespace: when the membership
// changes, held requests look at their share again; a stop deletes the Lease once the
// replica has no request in flight.
func (g *Gateway) newReplicaSet(mgr manager.Manager, requeue chan<- event.GenericEvent) (*replicaSet, error) {
	// The Lease holds whole seconds, and the others count by what it holds.
	if d := g.opts.LeaseDuration; d < time.Second || d%time.Second != 0 {
		return nil, fmt.Errorf("gateway LeaseDuration (--lease-duration) %v: must be a whole number of seconds, at least 1s", d)
	}
	rs := newReplicaSet(g.opts, mgr.GetClient(), requeue)
	rs.onChange = func(m membership) {
		g.metrics.replicas.Set(float64(m.count))
		g.services.wakeAll()
	}
	rs.idle = g.services.idle
	return rs, nil
}

// wakeAll wakes a waiter of every Service that has some.
func (sr *serviceRegistry) wakeAll() {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	for _, s := range sr.services {
		if s.room.waiting.Load() > 0 {
			s.room.slotFreed()
		}
	}
}

// idle says no request is in flight or held, in any Service.
func (sr *serviceRegistry) idle() bool {
	sr.mu.Lock()
	defer sr.mu.Unlock()
	t := micros(time.Now())
	for _, s := range sr.services {
		if _, n := s.load.read(t); n > 0 {
			return false
		}
	}
	return true
}
