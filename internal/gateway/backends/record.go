package backends

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// The Ready record: what this replica has programmed and the KIngress status does not
// yet say, written into its Lease (ServesAnnotation), and the others' records read
// back, so that a KIngress is Ready only once every live replica serves its
// generation.

const (
	// ReasonWaitingForReplicas and MessageWaitingForReplicas are Knative's
	// LoadBalancerReady Unknown (MarkLoadBalancerNotReady).
	ReasonWaitingForReplicas  = v1alpha1.ReasonUninitialized
	MessageWaitingForReplicas = "Waiting for load balancer to be ready"
)

// served is one entry of a replica's record: the generation it serves of one
// incarnation of a KIngress. The UID tells a KIngress deleted and created again
// under its name (a Route recreated) from the one before, whose generations start
// again at 1: by name alone, a replica that served the old one's generation 1
// vouched for the new one's.
type served struct {
	UID        types.UID `json:"uid"`
	Generation int64     `json:"generation"`
}

// Programmed records that this replica serves generation gen of the KIngress key
// with uid; the record reaches the Lease at once (one write for what accumulates
// meanwhile) when other replicas read it.
func (rs *ReplicaSet) Programmed(key types.NamespacedName, uid types.UID, gen int64) {
	if rs == nil {
		return
	}
	entry := served{UID: uid, Generation: gen}
	rs.mu.Lock()
	changed := rs.serves[key] != entry
	rs.serves[key] = entry
	rs.mu.Unlock()
	// Alone, nobody reads the record: it waits for the next renewal, or for a
	// replica to join (refresh writes it then).
	if changed && rs.Members().Count > 1 {
		rs.markDirty()
	}
}

// Forget drops a KIngress that is gone or no longer served here.
func (rs *ReplicaSet) Forget(key types.NamespacedName) {
	if rs == nil {
		return
	}
	rs.mu.Lock()
	delete(rs.waiting, key)
	rs.mu.Unlock()
}

// ServedByAll reports whether every live replica other than this one records
// generation gen, or a later one, of the KIngress key with uid. It remembers a
// KIngress that waits, to look again when the membership changes.
//
// The cache may not hold yet the Lease of a replica that has just joined, which lists
// the KIngress at an older generation and serves it as warm; so a yes from the cache
// is confirmed by the Leases as the API server has them (Confirm), which hold every
// replica whose Lease was created before this read: one that joins later lists the
// KIngress after it, at this generation or later (routing.Programmer.Warm).
func (rs *ReplicaSet) ServedByAll(ctx context.Context, key types.NamespacedName, uid types.UID, gen int64) bool {
	if rs == nil {
		return true
	}
	all := rs.servedByAll(ctx, rs.client, key, uid, gen)
	if all && rs.Confirm != nil {
		all = rs.servedByAll(ctx, rs.Confirm, key, uid, gen)
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if all {
		delete(rs.waiting, key)
	} else {
		rs.waiting[key] = true
	}
	return all
}

func (rs *ReplicaSet) servedByAll(ctx context.Context, c client.Reader, key types.NamespacedName, uid types.UID, gen int64) bool {
	leases, err := rs.leases(ctx, c)
	if err != nil {
		return false
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	for i := range leases {
		l := &leases[i]
		if l.Name == rs.name || rs.expiredFor(l) >= 0 {
			continue
		}
		if e := rs.recordOf(l)[key.String()]; e.UID != uid || e.Generation < gen {
			return false
		}
	}
	return true
}

// recordOf parses a Lease's record, once per resourceVersion. An unreadable record
// (one written by a replica of an older release, too) is empty: that replica serves
// nothing yet, as far as Ready goes. Called under mu.
func (rs *ReplicaSet) recordOf(l *coordinationv1.Lease) map[string]served {
	if p, ok := rs.parsed[l.Name]; ok && p.resourceVersion == l.ResourceVersion {
		return p.serves
	}
	var serves map[string]served
	_ = json.Unmarshal([]byte(l.Annotations[ServesAnnotation]), &serves)
	rs.parsed[l.Name] = parsedServes{resourceVersion: l.ResourceVersion, serves: serves}
	return serves
}

// Affected maps a Lease event to the KIngresses whose Ready it may decide: those in
// its record, and those waiting here. It refreshes the membership first.
func (rs *ReplicaSet) Affected(ctx context.Context, o client.Object) []reconcile.Request {
	l, ok := o.(*coordinationv1.Lease)
	if !ok || l.Namespace != rs.namespace || l.Labels[ReplicaLabel] == "" {
		return nil
	}
	rs.refresh(ctx)
	var serves map[string]served
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
	slices.SortFunc(reqs, func(a, b reconcile.Request) int { return compareKeys(a.NamespacedName, b.NamespacedName) })
	return reqs
}

func compareKeys(a, b types.NamespacedName) int {
	return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
}

// prune drops from the record what no longer needs saying: KIngresses gone (or
// deleted and created again), and those whose status has moved past waiting for that
// generation (Ready, or not configured for a reason of their own).
func (rs *ReplicaSet) prune(ctx context.Context) {
	rs.mu.Lock()
	entries := make(map[types.NamespacedName]served, len(rs.serves))
	for key, e := range rs.serves {
		entries[key] = e
	}
	rs.mu.Unlock()
	for key, e := range entries {
		ing := &v1alpha1.Ingress{}
		err := rs.client.Get(ctx, key, ing)
		if err != nil && !apierrors.IsNotFound(err) {
			continue
		}
		if err == nil && ing.UID == e.UID && (ing.Status.ObservedGeneration < e.Generation || WaitingForReplicas(&ing.Status)) {
			continue
		}
		rs.mu.Lock()
		if rs.serves[key] == e {
			delete(rs.serves, key)
		}
		rs.mu.Unlock()
	}
}

// WaitingForReplicas says the status waits for a gateway replica.
func WaitingForReplicas(status *v1alpha1.IngressStatus) bool {
	c := v1alpha1.IngressConditions.Manage(&status.DeepCopy().Status).GetCondition(v1alpha1.IngressConditionLoadBalancerReady)
	return c == nil || c.Reason == ReasonWaitingForReplicas
}

func ingressEvent(key types.NamespacedName) event.GenericEvent {
	return event.GenericEvent{Object: &v1alpha1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}}
}
