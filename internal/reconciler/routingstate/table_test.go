package routingstate_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/base"
	rt "github.com/ferry-serving/ferry/internal/reconciler/kit/reconcilertest"
	"github.com/ferry-serving/ferry/internal/reconciler/routingstate"
)

const ns = "ns"

var now = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func ptr[T any](v T) *T { return &v }

// cfg is the Configuration hello at generation 2, its status observed, -00002 its latest
// created and ready Revision.
func cfg(opts ...func(*v1.Configuration)) *v1.Configuration {
	c := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello", Generation: 2}}
	c.Status.ObservedGeneration = 2
	c.Status.LatestCreatedRevisionName, c.Status.LatestReadyRevisionName = "hello-00002", "hello-00002"
	for _, o := range opts {
		o(c)
	}
	return c
}

// rev is a Revision of hello labelled state ("" for none).
func rev(name string, state v1.RoutingState) *v1.Revision {
	r := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1,
		Labels: map[string]string{v1.ConfigurationLabelKey: "hello", "team": "a"}}}
	if state != "" {
		r.Labels[v1.RoutingStateLabelKey] = string(state)
	}
	return r
}

// routeTo is a Route whose status.traffic sends all to the named Revision.
func routeTo(name string) *v1.Route {
	r := &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "front-" + name}}
	r.Status.Traffic = []v1.TrafficTarget{{RevisionName: name, Percent: ptr(int64(100))}}
	return r
}

// labelled checks the Revision's label, the time of the change, and that its other
// labels stayed.
func labelled(name string, state v1.RoutingState) func(*testing.T, *rt.Env) {
	return func(t *testing.T, env *rt.Env) {
		r := &v1.Revision{}
		env.Get(t, rt.Key(ns, name), r)
		if got := r.Labels[v1.RoutingStateLabelKey]; got != string(state) || r.Labels["team"] != "a" {
			t.Errorf("labels %v, want routingState %s and team a", r.Labels, state)
		}
		if got := r.Annotations[v1.RoutingStateModifiedAnnotation]; got != now.Format(time.RFC3339) {
			t.Errorf("routingStateModified %q, want %s", got, now.Format(time.RFC3339))
		}
	}
}

func TestReconcileTable(t *testing.T) {
	objs := func(os ...client.Object) []client.Object { return os }
	rt.Run(t, []rt.Case{{
		Name: "the Revision is gone: nothing to do",
		Key:  rt.Key(ns, "hello-00001"),
	}, {
		Name:       "a Revision that left its Routes, not the latest: reserve",
		Key:        rt.Key(ns, "hello-00001"),
		Objects:    objs(cfg(), rev("hello-00001", ""), rev("hello-00002", ""), routeTo("hello-00002")),
		WantWrites: []string{"patch Revision ns/hello-00001"},
		Check:      labelled("hello-00001", v1.RoutingStateReserve),
	}, {
		Name:       "a new Revision routed: active, as Knative's conformance tests wait for",
		Key:        rt.Key(ns, "hello-00001"),
		Objects:    objs(cfg(), rev("hello-00001", v1.RoutingStatePending), routeTo("hello-00001")),
		WantWrites: []string{"patch Revision ns/hello-00001"},
		Check:      labelled("hello-00001", v1.RoutingStateActive),
	}, {
		Name:    "a routed Revision labelled active: no write",
		Key:     rt.Key(ns, "hello-00001"),
		Objects: objs(cfg(), rev("hello-00001", v1.RoutingStateActive), routeTo("hello-00001")),
	}, {
		Name:       "a reserve Revision routed again: active",
		Key:        rt.Key(ns, "hello-00001"),
		Objects:    objs(cfg(), rev("hello-00001", v1.RoutingStateReserve), routeTo("hello-00001")),
		WantWrites: []string{"patch Revision ns/hello-00001"},
		Check:      labelled("hello-00001", v1.RoutingStateActive),
	}, {
		Name:    "the latest Revision without traffic: no write",
		Key:     rt.Key(ns, "hello-00002"),
		Objects: objs(cfg(), rev("hello-00002", v1.RoutingStatePending), routeTo("hello-00001")),
	}, {
		Name:    "the latest ready Revision while a newer one is created: no write",
		Key:     rt.Key(ns, "hello-00001"),
		Objects: objs(cfg(func(c *v1.Configuration) { c.Status.LatestReadyRevisionName = "hello-00001" }), rev("hello-00001", "")),
	}, {
		Name:    "the Configuration has not reported on its generation: its latest are unknown, no write",
		Key:     rt.Key(ns, "hello-00001"),
		Objects: objs(cfg(func(c *v1.Configuration) { c.Generation = 3 }), rev("hello-00001", "")),
	}, {
		Name:       "a refused label: an error, retried, and a Warning Event on the Revision",
		Key:        rt.Key(ns, "hello-00001"),
		Objects:    objs(cfg(), rev("hello-00001", ""), rev("hello-00002", ""), routeTo("hello-00002")),
		Failures:   []rt.Failure{{Verb: rt.Patch, Kind: "Revision", Name: "hello-00001", Err: rt.Forbidden("revisions", "hello-00001", "no patch")}},
		WantErr:    "no patch",
		WantEvents: []string{`Warning RoutingStateFailed hello-00001: Cannot label the Revision routingState=reserve: revisions "hello-00001" is forbidden: no patch`},
	}, {
		Name:    "the Configuration is gone: no write",
		Key:     rt.Key(ns, "hello-00001"),
		Objects: objs(rev("hello-00001", "")),
	}}, func(env *rt.Env) reconcile.Reconciler {
		return &routingstate.Reconciler{Base: base.Base{Client: env.Client, Clock: rt.Clock(func() time.Time { return now })}, Recorder: env.Events}
	})
}
