package gc_test

import (
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/reconciler/gc"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/base"
	rt "github.com/ferry-serving/ferry/internal/reconciler/kit/reconcilertest"
)

const ns = "ns"

var (
	key = rt.Key(ns, "hello")
	now = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	// eager is the integration test's policy: every age and count rule at its most
	// eager.
	eager = &config.GC{MinNonActiveRevisions: 0, MaxNonActiveRevisions: config.GCDisabled}
)

func ptr[T any](v T) *T { return &v }

// cfg is the Configuration hello at generation 3, its status observed, -00003 its latest
// created and ready Revision.
func cfg(opts ...func(*v1.Configuration)) *v1.Configuration {
	c := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello", UID: "cfg-uid", Generation: 3}}
	c.Status.ObservedGeneration = 3
	c.Status.LatestCreatedRevisionName, c.Status.LatestReadyRevisionName = "hello-00003", "hello-00003"
	for _, o := range opts {
		o(c)
	}
	return c
}

// rev is a Revision of hello created age ago.
func rev(name string, age time.Duration, opts ...func(*v1.Revision)) *v1.Revision {
	r := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid"), Generation: 1,
		CreationTimestamp: metav1.NewTime(now.Add(-age)),
		Labels:            map[string]string{v1.ConfigurationLabelKey: "hello"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "serving.knative.dev/v1", Kind: "Configuration", Name: "hello", UID: "cfg-uid",
			Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}}}
	for _, o := range opts {
		o(r)
	}
	return r
}

func annotated(k, v string) func(*v1.Revision) {
	return func(r *v1.Revision) {
		if r.Annotations == nil {
			r.Annotations = map[string]string{}
		}
		r.Annotations[k] = v
	}
}

// routeTo is a Route that sends all its traffic to the named Revision.
func routeTo(name string) *v1.Route {
	r := &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "front-" + name}}
	r.Status.Traffic = []v1.TrafficTarget{{RevisionName: name, Percent: ptr(int64(100))}}
	return r
}

func TestReconcileTable(t *testing.T) {
	three := func() []client.Object {
		return []client.Object{rev("hello-00001", 72*time.Hour), rev("hello-00002", 50*time.Hour), rev("hello-00003", time.Hour)}
	}
	objs := func(os ...client.Object) []client.Object { return os }
	conflict := apierrors.NewConflict(schema.GroupResource{Group: "serving.knative.dev", Resource: "revisions"}, "hello-00001", errors.New("uid precondition"))
	for _, policy := range []struct {
		name  string
		opts  *config.GC
		cases []rt.Case
	}{{
		name: "eager",
		opts: eager,
		cases: []rt.Case{{
			Name: "the Configuration is gone: nothing is deleted",
			Key:  key,
		}, {
			Name: "the Configuration is being deleted: nothing is deleted",
			Key:  key,
			Objects: append(three(), cfg(func(c *v1.Configuration) {
				c.DeletionTimestamp = &metav1.Time{Time: now}
				c.Finalizers = []string{"test/keep"}
			})),
		}, {
			Name:    "the Configuration has not reported on its generation: its latest Revisions are unknown, nothing is deleted",
			Key:     key,
			Objects: append(three(), cfg(func(c *v1.Configuration) { c.Generation = 4 })),
		}, {
			Name:       "Revisions that are neither latest, routed nor no-gc are deleted",
			Key:        key,
			Objects:    append(three(), cfg()),
			WantWrites: []string{"delete Revision ns/hello-00001", "delete Revision ns/hello-00002"},
			WantResult: reconcile.Result{RequeueAfter: time.Hour},
			Check: func(t *testing.T, env *rt.Env) {
				if env.Get(t, rt.Key(ns, "hello-00001"), &v1.Revision{}) || !env.Get(t, rt.Key(ns, "hello-00003"), &v1.Revision{}) {
					t.Error("the wrong Revisions are left")
				}
			},
		}, {
			Name: "the latest ready Revision is kept while a newer one is created",
			Key:  key,
			Objects: append(three(), cfg(func(c *v1.Configuration) {
				c.Status.LatestReadyRevisionName = "hello-00002"
			})),
			WantWrites: []string{"delete Revision ns/hello-00001"},
			WantResult: reconcile.Result{RequeueAfter: time.Hour},
		}, {
			Name:       "routed, routing-state active and no-gc Revisions are kept",
			Key:        key,
			Objects:    objs(cfg(), routeTo("hello-00001"), rev("hello-00001", 72*time.Hour), rev("hello-00002", 72*time.Hour, annotated(v1.NoGCAnnotationKey, "true")), rev("hello-00003", time.Hour), rev("hello-00004", 72*time.Hour, func(r *v1.Revision) { r.Labels[v1.RoutingStateLabelKey] = "active" })),
			WantResult: reconcile.Result{RequeueAfter: time.Hour},
		}, {
			Name: "Revisions the Configuration does not control, and Revisions being deleted, are left alone",
			Key:  key,
			Objects: objs(cfg(), rev("hello-00001", 72*time.Hour, func(r *v1.Revision) { r.OwnerReferences = nil }), rev("hello-00002", 72*time.Hour, func(r *v1.Revision) {
				r.DeletionTimestamp, r.Finalizers = &metav1.Time{Time: now}, []string{"test/keep"}
			}), rev("hello-00003", time.Hour)),
			WantResult: reconcile.Result{RequeueAfter: time.Hour},
		}, {
			Name:       "a Revision already replaced (a UID conflict) or gone is no error",
			Key:        key,
			Objects:    append(three(), cfg()),
			Failures:   []rt.Failure{{Verb: rt.Delete, Kind: "Revision", Name: "hello-00001", Err: conflict}},
			WantWrites: []string{"delete Revision ns/hello-00002"},
			WantResult: reconcile.Result{RequeueAfter: time.Hour},
		}, {
			Name:       "a failed delete is an error, retried",
			Key:        key,
			Objects:    append(three(), cfg()),
			Failures:   []rt.Failure{{Verb: rt.Delete, Kind: "Revision", Name: "hello-00001", Err: apierrors.NewInternalError(errors.New("etcd is down"))}},
			WantErr:    "etcd is down",
			WantResult: reconcile.Result{},
		}},
	}, {
		name: "Knative's defaults",
		opts: config.DefaultGC(),
		cases: []rt.Case{{
			Name:    "no more Revisions than the minimum kept: nothing is deleted, nothing rechecked",
			Key:     key,
			Objects: append(three(), cfg()),
		}},
	}, {
		name: "ages",
		opts: &config.GC{MinNonActiveRevisions: 0, MaxNonActiveRevisions: 1000, RetainSinceCreateTime: 48 * time.Hour, RetainSinceLastActiveTime: 15 * time.Hour},
		cases: []rt.Case{{
			Name: "old enough since creation and since last active: deleted; the next one due rechecked when it is",
			Key:  key,
			Objects: objs(cfg(), rev("hello-00001", 72*time.Hour), rev("hello-00002", 47*time.Hour+30*time.Minute),
				rev("hello-00004", 72*time.Hour, annotated(v1.RoutingStateModifiedAnnotation, now.Add(-10*time.Hour).Format(time.RFC3339))),
				rev("hello-00003", time.Hour)),
			WantWrites: []string{"delete Revision ns/hello-00001"},
			WantResult: reconcile.Result{RequeueAfter: 30 * time.Minute},
		}},
	}, {
		name: "counts",
		opts: &config.GC{MinNonActiveRevisions: 1, MaxNonActiveRevisions: 1, RetainSinceCreateTime: config.GCDisabled, RetainSinceLastActiveTime: config.GCDisabled},
		cases: []rt.Case{{
			Name: "beyond the maximum, the least recently active go first",
			Key:  key,
			Objects: objs(cfg(), rev("hello-00001", 10*time.Hour, annotated(v1.RoutingStateModifiedAnnotation, now.Add(-time.Hour).Format(time.RFC3339))),
				rev("hello-00002", 5*time.Hour), rev("hello-00003", time.Hour)),
			WantWrites: []string{"delete Revision ns/hello-00002"},
			WantResult: reconcile.Result{RequeueAfter: time.Hour},
		}},
	}, {
		name: "disabled",
		opts: &config.GC{MinNonActiveRevisions: 0, MaxNonActiveRevisions: config.GCDisabled, RetainSinceCreateTime: config.GCDisabled, RetainSinceLastActiveTime: config.GCDisabled},
		cases: []rt.Case{{
			Name:    "every rule off: nothing is deleted, nothing rechecked",
			Key:     key,
			Objects: append(three(), cfg()),
		}},
	}} {
		t.Run(policy.name, func(t *testing.T) {
			rt.Run(t, policy.cases, func(env *rt.Env) reconcile.Reconciler {
				return &gc.Reconciler{Base: base.Base{Client: env.Client, Clock: rt.Clock(func() time.Time { return now })}, Policy: func() *config.GC { return policy.opts }}
			})
		})
	}
}
