package service_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	rt "github.com/ferry-serving/ferry/internal/reconciler/kit/reconcilertest"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
	"github.com/ferry-serving/ferry/internal/reconciler/service"
)

const ns = "ns"

var key = rt.Key(ns, "hello")

func ptr[T any](v T) *T { return &v }

// svc is the Service the table reconciles, in generation 1, with labels and
// annotations its children must carry.
func svc(opts ...func(*v1.Service)) *v1.Service {
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello", UID: "svc-uid", Generation: 1,
		Labels:      map[string]string{"team": "a"},
		Annotations: map[string]string{"note": "x", corev1.LastAppliedConfigAnnotation: `{"kind":"Service"}`}}}
	s.Spec.Template.Spec.Containers = []corev1.Container{{Image: "ferry.test/hello"}}
	for _, o := range opts {
		o(s)
	}
	return s
}

// readyStatus is the status of a Service Ready in generation 1.
func readyStatus(s *v1.Service) {
	s.Status.ObservedGeneration = 1
	s.Status.Conditions = []duck.Condition{ready, configReady, routeReady}
	s.Status.ConfigurationStatusFields = config(s).Status.ConfigurationStatusFields
	s.Status.RouteStatusFields = route(s).Status.RouteStatusFields
}

func deleting(s *v1.Service) {
	s.DeletionTimestamp = &metav1.Time{Time: time.Unix(1700000000, 0)}
	s.Finalizers = []string{"test/keep"}
}

// childMeta is what both children carry: the Service's labels and annotations (but
// kubectl's last-applied), the Service labels, and the Service as controller.
func childMeta(s *v1.Service) metav1.ObjectMeta {
	labels := map[string]string{v1.ServiceLabelKey: s.Name, v1.ServiceUIDLabelKey: string(s.UID)}
	for k, v := range s.Labels {
		labels[k] = v
	}
	annotations := map[string]string{}
	for k, v := range s.Annotations {
		if k != corev1.LastAppliedConfigAnnotation {
			annotations[k] = v
		}
	}
	return metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, UID: "child-uid", Generation: 1, Labels: labels, Annotations: annotations,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "serving.knative.dev/v1", Kind: "Service", Name: s.Name, UID: s.UID,
			Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}}
}

// config is the Configuration the Service wants, its status that of a Configuration
// whose Revision rev is ready (Ready True, observed).
func config(s *v1.Service, opts ...func(*v1.Configuration)) *v1.Configuration {
	d := s.DeepCopy()
	d.SetDefaults(context.Background())
	c := &v1.Configuration{ObjectMeta: childMeta(s), Spec: v1.ConfigurationSpec{Template: d.Spec.Template}}
	for _, t := range d.Spec.Traffic {
		if t.RevisionName == "" { // the Route follows the latest: Knative's routes annotation
			c.Annotations[v1.RoutesAnnotationKey] = s.Name
		}
	}
	c.Status.ObservedGeneration = 1
	c.Status.Conditions = []duck.Condition{{Type: duck.ConditionReady, Status: corev1.ConditionTrue}}
	c.Status.LatestCreatedRevisionName, c.Status.LatestReadyRevisionName = "hello-00001", "hello-00001"
	for _, o := range opts {
		o(c)
	}
	return c
}

// route is the Route the Service wants, its status Ready and serving hello-00001.
func route(s *v1.Service, opts ...func(*v1.Route)) *v1.Route {
	r := &v1.Route{ObjectMeta: childMeta(s)}
	r.Spec.Traffic = []v1.TrafficTarget{{ConfigurationName: "hello", LatestRevision: ptr(true), Percent: ptr(int64(100))}}
	r.Status.ObservedGeneration = 1
	r.Status.Conditions = []duck.Condition{{Type: duck.ConditionReady, Status: corev1.ConditionTrue}}
	r.Status.URL = "http://hello.ns.example.com"
	r.Status.Address = &duck.Addressable{URL: "http://hello.ns.svc.cluster.local"}
	r.Status.Traffic = []v1.TrafficTarget{{RevisionName: "hello-00001", LatestRevision: ptr(true), Percent: ptr(int64(100))}}
	for _, o := range opts {
		o(r)
	}
	return r
}

func notOwned(o client.Object) client.Object {
	o.SetOwnerReferences(nil)
	return o
}

// written is the Service's status as the reconcile wrote it.
func written(t *testing.T, env *rt.Env) *v1.Service {
	t.Helper()
	o := env.Written(rt.Status, "Service", "hello")
	if o == nil {
		t.Fatal("no status written")
	}
	return o.(*v1.Service)
}

// wantStatus checks the written status's conditions and observed generation.
func wantStatus(conds ...duck.Condition) func(*testing.T, *rt.Env) {
	return func(t *testing.T, env *rt.Env) {
		t.Helper()
		s := written(t, env)
		if s.Status.ObservedGeneration != s.Generation {
			t.Errorf("observedGeneration %d, generation %d", s.Status.ObservedGeneration, s.Generation)
		}
		rt.CheckConditions(t, "Service", s.Status.Conditions, conds...)
	}
}

const (
	msgConfigOutOfDate = "The Configuration is still working to reflect the latest desired specification."
	msgRouteOutOfDate  = "The Route is still working to reflect the latest desired specification."
)

var (
	ready       = rt.True(v1.ServiceConditionReady)
	configReady = rt.True(v1.ServiceConditionConfigurationsReady)
	routeReady  = rt.True(v1.ServiceConditionRoutesReady)
)

func build(env *rt.Env) reconcile.Reconciler {
	return &service.Reconciler{Base: env.Base()}
}

func TestReconcileTable(t *testing.T) {
	s := svc()
	refused := `failed to create Configuration "hello": configurations.serving.knative.dev "hello" is forbidden: exceeded quota: count/configurations.serving.knative.dev=0`
	rt.Run(t, []rt.Case{{
		Name: "the Service is gone: nothing is written",
		Key:  key,
	}, {
		Name:    "the Service is being deleted: nothing is written",
		Key:     key,
		Objects: []client.Object{svc(deleting), config(s), notOwned(route(s))},
	}, {
		Name:       "first reconcile creates the Configuration and the Route",
		Key:        key,
		Objects:    []client.Object{svc()},
		WantWrites: []string{"create Configuration ns/hello", "create Route ns/hello", "status Service ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus(rt.Unknown(v1.ServiceConditionReady, v1.ReasonOutOfDate, msgConfigOutOfDate),
				rt.Unknown(v1.ServiceConditionConfigurationsReady, v1.ReasonOutOfDate, msgConfigOutOfDate),
				rt.Unknown(v1.ServiceConditionRoutesReady, v1.ReasonOutOfDate, msgRouteOutOfDate))(t, env)
			want, got := config(s), env.Written(rt.Create, "Configuration", "hello").(*v1.Configuration)
			if !equality.Semantic.DeepEqual(got.Spec, want.Spec) || !equality.Semantic.DeepEqual(got.Labels, want.Labels) ||
				!equality.Semantic.DeepEqual(got.Annotations, want.Annotations) || !equality.Semantic.DeepEqual(got.OwnerReferences, want.OwnerReferences) {
				t.Errorf("created Configuration\n got %+v\nwant %+v", got, want)
			}
			if c := got.Spec.Template.Spec.Containers[0]; c.Name != "user-container" || c.Image != "ferry.test/hello" || *got.Spec.Template.Spec.TimeoutSeconds != 300 {
				t.Errorf("template not defaulted: %+v", got.Spec.Template.Spec)
			}
			wantRt, gotRt := route(s), env.Written(rt.Create, "Route", "hello").(*v1.Route)
			if !equality.Semantic.DeepEqual(gotRt.Spec, wantRt.Spec) || !equality.Semantic.DeepEqual(gotRt.Labels, wantRt.Labels) ||
				!equality.Semantic.DeepEqual(gotRt.Annotations, wantRt.Annotations) || !equality.Semantic.DeepEqual(gotRt.OwnerReferences, wantRt.OwnerReferences) {
				t.Errorf("created Route\n got %+v\nwant %+v", gotRt, wantRt)
			}
		},
	}, {
		Name:       "children Ready: the Service is Ready with their status",
		Key:        key,
		Objects:    []client.Object{svc(), config(s), route(s)},
		WantWrites: []string{"status Service ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus(ready, configReady, routeReady)(t, env)
			got := written(t, env).Status
			if got.URL != "http://hello.ns.example.com" || got.Address == nil || got.Address.URL != "http://hello.ns.svc.cluster.local" ||
				got.LatestCreatedRevisionName != "hello-00001" || got.LatestReadyRevisionName != "hello-00001" ||
				len(got.Traffic) != 1 || got.Traffic[0].RevisionName != "hello-00001" || *got.Traffic[0].Percent != 100 {
				t.Errorf("status fields = %+v", got)
			}
		},
	}, {
		Name:    "nothing changed: nothing is written",
		Key:     key,
		Objects: []client.Object{svc(readyStatus), config(s), route(s)},
	}, {
		Name: "a new template: the Configuration is updated, and out of date",
		Key:  key,
		Objects: []client.Object{svc(readyStatus, func(s *v1.Service) {
			s.Generation = 2
			s.Spec.Template.Spec.Containers[0].Image = "ferry.test/hello:v2"
		}), config(s), route(s)},
		WantWrites: []string{"update Configuration ns/hello", "status Service ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus(rt.Unknown(v1.ServiceConditionReady, v1.ReasonOutOfDate, msgConfigOutOfDate),
				rt.Unknown(v1.ServiceConditionConfigurationsReady, v1.ReasonOutOfDate, msgConfigOutOfDate), routeReady)(t, env)
			c := env.Written(rt.Update, "Configuration", "hello").(*v1.Configuration)
			if c.Spec.Template.Spec.Containers[0].Image != "ferry.test/hello:v2" || c.Generation != 2 {
				t.Errorf("updated Configuration: generation %d, %+v", c.Generation, c.Spec.Template.Spec.Containers)
			}
		},
	}, {
		Name: "new traffic and a label removed: the Route is updated, the label goes",
		Key:  key,
		Objects: []client.Object{svc(func(s *v1.Service) {
			s.Spec.Traffic = []v1.TrafficTarget{{RevisionName: "hello-00001", Percent: ptr(int64(100)), Tag: "pinned"}}
		}), config(s), route(s, func(r *v1.Route) { r.Labels["old"] = "yes" })},
		// No Route follows the latest Revision any more: the routes annotation goes.
		WantWrites: []string{"update Configuration ns/hello", "update Route ns/hello", "status Service ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus(rt.Unknown(v1.ServiceConditionReady, v1.ReasonOutOfDate, msgRouteOutOfDate), configReady,
				rt.Unknown(v1.ServiceConditionRoutesReady, v1.ReasonOutOfDate, msgRouteOutOfDate))(t, env)
			if c := env.Written(rt.Update, "Configuration", "hello").(*v1.Configuration); c.Annotations[v1.RoutesAnnotationKey] != "" {
				t.Errorf("Configuration annotations %v: routes stays while no Route follows the latest", c.Annotations)
			}
			r := env.Written(rt.Update, "Route", "hello").(*v1.Route)
			want := []v1.TrafficTarget{{RevisionName: "hello-00001", Percent: ptr(int64(100)), Tag: "pinned", LatestRevision: ptr(false)}}
			if !equality.Semantic.DeepEqual(r.Spec.Traffic, want) || r.Labels["old"] != "" {
				t.Errorf("updated Route: traffic %+v, labels %v", r.Spec.Traffic, r.Labels)
			}
		},
	}, {
		Name:       "the Configuration's name is taken: NotOwned, with a Warning Event",
		Key:        key,
		Objects:    []client.Object{svc(), notOwned(config(s)), route(s)},
		WantWrites: []string{"status Service ns/hello"},
		WantEvents: []string{`Warning NotOwned hello: There is an existing Configuration "hello" that we do not own.`},
		Check: wantStatus(rt.False(v1.ServiceConditionReady, duck.ReasonNotOwned, `There is an existing Configuration "hello" that we do not own.`),
			rt.False(v1.ServiceConditionConfigurationsReady, duck.ReasonNotOwned, `There is an existing Configuration "hello" that we do not own.`),
			rt.Unknown(v1.ServiceConditionRoutesReady, v1.ReasonTrafficNotMigrated, "Traffic is not yet migrated to the latest revision.")),
	}, {
		Name:       "the Route's name is taken: NotOwned; the Configuration is still created",
		Key:        key,
		Objects:    []client.Object{svc(), notOwned(route(s))},
		WantWrites: []string{"create Configuration ns/hello", "status Service ns/hello"},
		WantEvents: []string{`Warning NotOwned hello: There is an existing Route "hello" that we do not own.`},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus(rt.False(v1.ServiceConditionReady, duck.ReasonNotOwned, `There is an existing Route "hello" that we do not own.`),
				rt.Unknown(v1.ServiceConditionConfigurationsReady, v1.ReasonOutOfDate, msgConfigOutOfDate),
				rt.False(v1.ServiceConditionRoutesReady, duck.ReasonNotOwned, `There is an existing Route "hello" that we do not own.`))(t, env)
			var squatter v1.Route
			env.Get(t, key, &squatter)
			if len(squatter.OwnerReferences) != 0 || squatter.Spec.Traffic[0].ConfigurationName != "hello" {
				t.Errorf("the squatter was changed: %+v", squatter)
			}
		},
	}, {
		Name:    "a refused Configuration: CreationFailed, one Warning Event, retried after the back-off",
		Key:     key,
		Objects: []client.Object{svc()},
		Failures: []rt.Failure{{Verb: rt.Create, Kind: "Configuration",
			Err: rt.Forbidden("configurations.serving.knative.dev", "hello", "exceeded quota: count/configurations.serving.knative.dev=0")}},
		WantWrites: []string{"create Route ns/hello", "status Service ns/hello"},
		WantEvents: []string{"Warning CreationFailed hello: " + refused},
		WantResult: reconcile.Result{RequeueAfter: refusal.DefaultInitial},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus(rt.False(v1.ServiceConditionReady, duck.ReasonCreationFailed, refused),
				rt.False(v1.ServiceConditionConfigurationsReady, duck.ReasonCreationFailed, refused),
				rt.Unknown(v1.ServiceConditionRoutesReady, v1.ReasonOutOfDate, msgRouteOutOfDate))(t, env)
			// Within the back-off the create is not tried again, nor the failure
			// written or reported again.
			env.QuietWithinBackOff(t)
		},
	}, {
		Name:    "a refused Route update: UpdateFailed",
		Key:     key,
		Objects: []client.Object{svc(func(s *v1.Service) { s.Labels["team"] = "b" }), config(s), route(s)},
		Failures: []rt.Failure{{Verb: rt.Update, Kind: "Route",
			Err: rt.Forbidden("routes.serving.knative.dev", "hello", "denied by policy")}},
		WantWrites: []string{"update Configuration ns/hello", "status Service ns/hello"},
		WantEvents: []string{`Warning UpdateFailed hello: failed to update Route "hello": routes.serving.knative.dev "hello" is forbidden: denied by policy`},
		WantResult: reconcile.Result{RequeueAfter: refusal.DefaultInitial},
		Check: wantStatus(rt.False(v1.ServiceConditionReady, duck.ReasonUpdateFailed, `failed to update Route "hello": routes.serving.knative.dev "hello" is forbidden: denied by policy`),
			configReady,
			rt.False(v1.ServiceConditionRoutesReady, duck.ReasonUpdateFailed, `failed to update Route "hello": routes.serving.knative.dev "hello" is forbidden: denied by policy`)),
	}, {
		Name:    "a write that is not a refusal is an error, retried by the queue",
		Key:     key,
		Objects: []client.Object{svc()},
		Failures: []rt.Failure{{Verb: rt.Create, Kind: "Configuration",
			Err: apierrors.NewInternalError(errors.New("etcd is down"))}},
		WantWrites: []string{"create Route ns/hello"},
		WantErr:    "etcd is down",
	}, {
		Name: "the Configuration has not observed its generation: OutOfDate, its status not copied",
		Key:  key,
		Objects: []client.Object{svc(), config(s, func(c *v1.Configuration) {
			c.Generation = 2
			c.Status.LatestCreatedRevisionName = "hello-00002"
		}), route(s)},
		WantWrites: []string{"status Service ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus(rt.Unknown(v1.ServiceConditionReady, v1.ReasonOutOfDate, msgConfigOutOfDate),
				rt.Unknown(v1.ServiceConditionConfigurationsReady, v1.ReasonOutOfDate, msgConfigOutOfDate),
				rt.Unknown(v1.ServiceConditionRoutesReady, v1.ReasonTrafficNotMigrated, "Traffic is not yet migrated to the latest revision."))(t, env)
			if got := written(t, env).Status.LatestCreatedRevisionName; got != "" {
				t.Errorf("latestCreatedRevisionName %q copied from an out-of-date Configuration", got)
			}
		},
	}, {
		Name: "the Route has not observed its generation: OutOfDate",
		Key:  key,
		Objects: []client.Object{svc(), config(s), route(s, func(r *v1.Route) {
			r.Generation = 3
		})},
		WantWrites: []string{"status Service ns/hello"},
		Check: wantStatus(rt.Unknown(v1.ServiceConditionReady, v1.ReasonOutOfDate, msgRouteOutOfDate), configReady,
			rt.Unknown(v1.ServiceConditionRoutesReady, v1.ReasonOutOfDate, msgRouteOutOfDate)),
	}, {
		Name: "the Route still serves the previous Revision: TrafficNotMigrated",
		Key:  key,
		Objects: []client.Object{svc(), config(s, func(c *v1.Configuration) {
			c.Status.LatestCreatedRevisionName, c.Status.LatestReadyRevisionName = "hello-00002", "hello-00002"
		}), route(s)},
		WantWrites: []string{"status Service ns/hello"},
		Check: wantStatus(rt.Unknown(v1.ServiceConditionReady, v1.ReasonTrafficNotMigrated, "Traffic is not yet migrated to the latest revision."),
			configReady, rt.Unknown(v1.ServiceConditionRoutesReady, v1.ReasonTrafficNotMigrated, "Traffic is not yet migrated to the latest revision.")),
	}, {
		Name: "the latest Revision failed: RevisionFailed from the Configuration, a Warning Event",
		Key:  key,
		Objects: []client.Object{svc(), config(s, func(c *v1.Configuration) {
			c.Status.LatestCreatedRevisionName = "hello-00002"
			c.Status.Conditions = []duck.Condition{rt.False(duck.ConditionReady, v1.ReasonRevisionFailed, `Revision "hello-00002" failed with message: Unable to fetch image.`)}
		}), route(s)},
		WantWrites: []string{"status Service ns/hello"},
		WantEvents: []string{`Warning RevisionFailed hello: Revision "hello-00002" failed with message: Unable to fetch image.`},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus(rt.False(v1.ServiceConditionReady, v1.ReasonRevisionFailed, `Revision "hello-00002" failed with message: Unable to fetch image.`),
				rt.False(v1.ServiceConditionConfigurationsReady, v1.ReasonRevisionFailed, `Revision "hello-00002" failed with message: Unable to fetch image.`),
				routeReady)(t, env)
			st := written(t, env).Status
			if st.LatestCreatedRevisionName != "hello-00002" || st.LatestReadyRevisionName != "hello-00001" || st.Traffic[0].RevisionName != "hello-00001" {
				t.Errorf("status = %+v, want traffic left on hello-00001", st)
			}
		},
	}, {
		Name: "the Route is not Ready: its reason",
		Key:  key,
		Objects: []client.Object{svc(), config(s), route(s, func(r *v1.Route) {
			r.Status.Conditions = []duck.Condition{rt.Unknown(duck.ConditionReady, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured)}
		})},
		WantWrites: []string{"status Service ns/hello"},
		Check: wantStatus(rt.Unknown(v1.ServiceConditionReady, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured), configReady,
			rt.Unknown(v1.ServiceConditionRoutesReady, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured)),
	}}, build)
}
