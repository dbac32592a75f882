package backends

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Gateway replicas find each other through Leases: each keeps one, labelled
// ReplicaLabel, in the gateway's Options.LeaseNamespace and renews it every third of its duration. A
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
	// UID and generation: JSON, for example
	// {"default/hello":{"uid":"6f1c…","generation":3}}.
	ServesAnnotation = "serving.ferry.dev/serves"
)

// ReplicaSet keeps this replica's Lease and reads the others'. A nil *ReplicaSet is a
// replica alone: every share is the whole, and what it has programmed is served by
// all.
type ReplicaSet struct {
	client    client.Client // reads through the manager's cache
	namespace string
	holder    string
	duration  time.Duration
	// requeue takes the KIngresses whose Ready may change with the membership.
	requeue chan<- event.GenericEvent
	// OnChange runs when the membership changes: held requests look at their share
	// again.
	OnChange func(Membership)
	// Idle reports whether this replica has no request in flight, for the stop.
	Idle func() bool
	// Now is the clock Leases are renewed and judged by: time.Now unless set (the
	// convergence simulation sets its own).
	Now func() time.Time
	// Confirm, if set, reads the Leases from the API server, to confirm that a
	// KIngress is served by all before it is Ready (ServedByAll).
	Confirm client.Reader
	// drainTimeout bounds how long a stopping replica waits for idle.
	drainTimeout time.Duration

	current atomic.Pointer[Membership]
	dirty   chan struct{}
	// refreshing serializes refresh, so that an older view of the Leases never
	// replaces a newer one.
	refreshing sync.Mutex

	mu   sync.Mutex
	name string // of the own Lease, once created
	// serves is this replica's record: KIngresses programmed, by generation.
	serves map[types.NamespacedName]served
	// waiting are the KIngresses whose Ready waits for another replica.
	waiting map[types.NamespacedName]bool
	// parsed caches the others' records by Lease name and resourceVersion.
	parsed map[string]parsedServes
}

type parsedServes struct {
	resourceVersion string
	serves          map[string]served
}

// NewReplicaSet is this replica's Lease, named after holder, in namespace: it counts
// while renewed within duration, and a stop waits up to drainTimeout for Idle before
// deleting it. requeue takes the KIngresses whose Ready the membership may change.
func NewReplicaSet(c client.Client, namespace, holder string, duration, drainTimeout time.Duration, requeue chan<- event.GenericEvent) *ReplicaSet {
	rs := &ReplicaSet{client: c, namespace: namespace, holder: holder, duration: duration,
		Now: time.Now, requeue: requeue, drainTimeout: drainTimeout, dirty: make(chan struct{}, 1),
		serves: map[types.NamespacedName]served{}, waiting: map[types.NamespacedName]bool{}, parsed: map[string]parsedServes{}}
	rs.current.Store(alone)
	return rs
}

// Joined reports whether this replica's Lease is created: from then on, every other
// replica that marks a KIngress Ready counts it (ServedByAll).
func (rs *ReplicaSet) Joined() bool {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.name != ""
}

// Members is the current membership; one load per request.
func (rs *ReplicaSet) Members() Membership {
	if rs == nil {
		return *alone
	}
	return *rs.current.Load()
}

// NeedLeaderElection is false: every replica keeps its own Lease.
func (rs *ReplicaSet) NeedLeaderElection() bool { return false }

// Start creates the Lease, renews it and writes the record when it changes, and
// deletes the Lease on the way out, once this replica's requests are done, so that
// no other replica takes a larger share while they still run.
func (rs *ReplicaSet) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("gateway-replicas")
	ticker := time.NewTicker(rs.duration / 3)
	defer ticker.Stop()
	// Until its Lease exists this replica counts itself alone, and says so.
	for {
		err := rs.Join(ctx)
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
		var err error
		select {
		case <-ctx.Done():
			rs.leave(logger)
			return nil
		case <-ticker.C:
			err = rs.Renew(ctx)
		case <-rs.dirty:
			err = rs.Flush(ctx)
		}
		if err != nil && ctx.Err() == nil {
			logger.Error(err, "renewing the gateway replica's Lease")
		}
	}
}

// The steps Start takes, apart for the convergence simulation, which takes them on
// its own clock: Join once, Renew every third of the duration, Flush when Dirty.

// Join creates this replica's Lease and reads the membership.
func (rs *ReplicaSet) Join(ctx context.Context) error { return rs.create(ctx) }

// Renew rereads the membership, collects the Leases of replicas long gone, and renews
// this replica's Lease with its record.
func (rs *ReplicaSet) Renew(ctx context.Context) error {
	rs.refresh(ctx)
	rs.collect(ctx)
	return rs.write(ctx)
}

// Flush writes the record at once, for the replicas waiting on it.
func (rs *ReplicaSet) Flush(ctx context.Context) error { return rs.write(ctx) }

// Dirty receives when the record has changed since it was last written.
func (rs *ReplicaSet) Dirty() <-chan struct{} { return rs.dirty }

func (rs *ReplicaSet) create(ctx context.Context) error {
	now := metav1.NewMicroTime(rs.Now())
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
func (rs *ReplicaSet) write(ctx context.Context) error {
	rs.prune(ctx)
	rs.mu.Lock()
	name := rs.name
	record := make(map[string]served, len(rs.serves))
	for key, e := range rs.serves {
		record[key.String()] = e
	}
	rs.mu.Unlock()
	value, err := json.Marshal(record)
	if err != nil {
		return err
	}
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"annotations": map[string]string{ServesAnnotation: string(value)}},
		"spec":     map[string]any{"renewTime": metav1.NewMicroTime(rs.Now())},
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
func (rs *ReplicaSet) leave(logger logr.Logger) {
	deadline := rs.Now().Add(rs.drainTimeout)
	for rs.Idle != nil && !rs.Idle() && rs.Now().Before(deadline) {
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

func (rs *ReplicaSet) markDirty() {
	select {
	case rs.dirty <- struct{}{}:
	default:
	}
}

// leases lists the replicas' Leases from c (the cache, or Confirm), live or not.
func (rs *ReplicaSet) leases(ctx context.Context, c client.Reader) ([]coordinationv1.Lease, error) {
	list := &coordinationv1.LeaseList{}
	if err := c.List(ctx, list, client.InNamespace(rs.namespace), client.HasLabels{ReplicaLabel}); err != nil {
		return nil, err
	}
	return list.Items, nil
}

// expiredFor is how long ago a Lease's duration ran out; negative while it is live.
func (rs *ReplicaSet) expiredFor(l *coordinationv1.Lease) time.Duration {
	if l.Spec.RenewTime == nil {
		return time.Duration(1<<63 - 1)
	}
	d := rs.duration
	if l.Spec.LeaseDurationSeconds != nil {
		d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
	}
	return rs.Now().Sub(l.Spec.RenewTime.Add(d))
}

// refresh recomputes the membership from the live Leases, this replica's always
// among them.
func (rs *ReplicaSet) refresh(ctx context.Context) {
	rs.refreshing.Lock()
	defer rs.refreshing.Unlock()
	leases, err := rs.leases(ctx, rs.client)
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
	next := &Membership{Count: len(names), index: slices.Index(names, own)}
	if *rs.current.Swap(next) == *next {
		return
	}
	log.FromContext(ctx).WithName("gateway-replicas").Info("gateway replicas changed", "replicas", next.Count, "index", next.index)
	rs.markDirty()
	if rs.OnChange != nil {
		rs.OnChange(*next)
	}
	rs.mu.Lock()
	waiting := make([]types.NamespacedName, 0, len(rs.waiting))
	for key := range rs.waiting {
		waiting = append(waiting, key)
	}
	rs.mu.Unlock()
	// In a fixed order, so that a run of the convergence simulation is a function of
	// its seed.
	slices.SortFunc(waiting, compareKeys)
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
func (rs *ReplicaSet) collect(ctx context.Context) {
	leases, err := rs.leases(ctx, rs.client)
	if err != nil {
		return
	}
	for i := range leases {
		if rs.expiredFor(&leases[i]) > 3*rs.duration {
			_ = client.IgnoreNotFound(rs.client.Delete(ctx, &leases[i], client.Preconditions{ResourceVersion: &leases[i].ResourceVersion}))
		}
	}
}
