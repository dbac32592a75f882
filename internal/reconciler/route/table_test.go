package route_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	rt "github.com/ferry-serving/ferry/internal/reconciler/kit/reconcilertest"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
	"github.com/ferry-serving/ferry/internal/reconciler/route"
	"github.com/ferry-serving/ferry/internal/reconciler/route/resources"
	"github.com/ferry-serving/ferry/internal/reconciler/route/rollout"
	"github.com/ferry-serving/ferry/internal/tracker"
)

const (
	ns      = "ns"
	gateway = "gw.ferry-system.svc.cluster.local"
)

var key = rt.Key(ns, "hello")

func ptr[T any](v T) *T { return &v }

// rte is the Route reconciled: by default all traffic to the Configuration hello.
func rte(opts ...func(*v1.Route)) *v1.Route {
	r := &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello", UID: "route-uid", Generation: 1,
		Labels: map[string]string{v1.ServiceLabelKey: "hello"}}}
	r.Spec.Traffic = []v1.TrafficTarget{{ConfigurationName: "hello", Percent: ptr(int64(100))}}
	for _, o := range opts {
		o(r)
	}
	return r
}

func traffic(tt ...v1.TrafficTarget) func(*v1.Route) {
	return func(r *v1.Route) { r.Spec.Traffic = tt }
}

// cfg is the Configuration hello whose latest ready Revision is latestReady.
func cfg(latestReady string, ready duck.Condition) *v1.Configuration {
	c := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello", UID: "cfg-uid", Generation: 1}}
	c.Status.ObservedGeneration = 1
	c.Status.LatestReadyRevisionName = latestReady
	c.Status.Conditions = []duck.Condition{ready}
	return c
}

// rev is a Revision whose Ready is as given.
func rev(name string, ready corev1.ConditionStatus) *v1.Revision {
	r := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(name + "-uid"), Generation: 1}}
	r.Status.ObservedGeneration = 1
	r.Status.Conditions = []duck.Condition{{Type: duck.ConditionReady, Status: ready}}
	return r
}

// ingress is the KIngress serving targets for the Route, Ready as given (nil: no status).
func ingress(r *v1.Route, targets []v1.TrafficTarget, ready *duck.Condition) *netv1alpha1.Ingress {
	want := r.DeepCopy()
	want.SetDefaults(context.Background())
	ing := resources.MakeIngress(want, targets, rollout.TagHosts(targets, nil), resources.DefaultHosts(want, want.Spec.Traffic), false)
	ing.UID, ing.Generation = "ing-uid", 1
	if ready != nil {
		ing.Status.ObservedGeneration = 1
		ing.Status.Conditions = []duck.Condition{*ready}
	}
	return ing
}

func placeholder(r *v1.Route) *corev1.Service {
	s := resources.MakePlaceholderService(r, r.Name, gateway)
	s.UID = "svc-uid"
	return s
}

// tagPlaceholder is the placeholder Service of the Route's tag, <tag>-<route>.
func tagPlaceholder(r *v1.Route, tag string) *corev1.Service {
	s := resources.MakePlaceholderService(r, tag+"-"+r.Name, gateway)
	s.UID = types.UID(tag + "-svc-uid")
	return s
}

// privately labels a placeholder Service cluster-local, as a user does.
func privately(s *corev1.Service) *corev1.Service {
	s.Labels[v1.VisibilityLabelKey] = v1.VisibilityClusterLocal
	return s
}

var (
	toLatest   = []v1.TrafficTarget{{RevisionName: "hello-00001", LatestRevision: ptr(true), Percent: ptr(int64(100))}}
	ingReady   = &duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionTrue}
	ready      = rt.True(duck.ConditionReady)
	assigned   = rt.True(v1.RouteConditionAllTrafficAssigned)
	ingressOK  = rt.True(v1.RouteConditionIngressReady)
	noTLS      = rt.Cond(v1.RouteConditionCertificateProvisioned, corev1.ConditionTrue, v1.ReasonTLSNotEnabled, v1.MessageTLSNotEnabled)
	notConfigd = rt.Unknown(v1.RouteConditionIngressReady, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured)
)

func notOwned(o client.Object) client.Object {
	o.SetOwnerReferences(nil)
	return o
}

func written(t *testing.T, env *rt.Env) *v1.Route {
	t.Helper()
	o := env.Written(rt.Status, "Route", "hello")
	if o == nil {
		t.Fatal("no status written")
	}
	return o.(*v1.Route)
}

// wantStatus checks the written status: conditions, URLs and traffic (nil: none).
func wantStatus(traffic []v1.TrafficTarget, conds ...duck.Condition) func(*testing.T, *rt.Env) {
	return func(t *testing.T, env *rt.Env) {
		t.Helper()
		r := written(t, env)
		if r.Status.ObservedGeneration != r.Generation {
			t.Errorf("observedGeneration %d, generation %d", r.Status.ObservedGeneration, r.Generation)
		}
		if r.Status.URL != "http://hello.ns.example.com" || r.Status.Address == nil || r.Status.Address.URL != "http://hello.ns.svc.cluster.local" {
			t.Errorf("url %q, address %+v", r.Status.URL, r.Status.Address)
		}
		if !equality.Semantic.DeepEqual(r.Status.Traffic, traffic) {
			t.Errorf("status.traffic\n got %+v\nwant %+v", r.Status.Traffic, traffic)
		}
		rt.CheckConditions(t, "Route", r.Status.Conditions, conds...)
	}
}

// ruleHosts are the first host of each rule of the KIngress written by verb.
func ruleHosts(env *rt.Env, verb string) []string {
	var hosts []string
	for _, rule := range env.Written(verb, "Ingress", "hello").(*netv1alpha1.Ingress).Spec.Rules {
		hosts = append(hosts, rule.Hosts[0])
	}
	return hosts
}

// tracked checks that the Route is woken by changes of the Configuration hello.
func tracked(t *testing.T, trk *tracker.Tracker) {
	t.Helper()
	obs := trk.GetObservers(&v1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"}})
	if len(obs) != 1 || obs[0] != key {
		t.Errorf("observers of the Configuration: %v, want the Route", obs)
	}
}

func TestReconcileTable(t *testing.T) {
	var trk *tracker.Tracker
	build := func(env *rt.Env) reconcile.Reconciler {
		trk = tracker.New(func(types.NamespacedName) {}, 0).SetScheme(env.Scheme)
		b := env.Base()
		b.Config = config.Default
		return &route.Reconciler{Base: b, Tracker: trk, GatewayHost: gateway}
	}
	r := rte()
	cfgReady := cfg("hello-00001", ready)
	rev1 := rev("hello-00001", corev1.ConditionTrue)
	missingCfg := `Configuration "hello" referenced in traffic not found.`
	tagSplit := traffic(v1.TrafficTarget{Tag: "current", ConfigurationName: "hello", Percent: ptr(int64(75))},
		v1.TrafficTarget{Tag: "old", RevisionName: "hello-00001", Percent: ptr(int64(25))})
	refusedIng := `failed to create Ingress "hello": ingresses.networking.internal.knative.dev "hello" is forbidden: denied by policy`
	rt.Run(t, []rt.Case{{
		Name: "the Route is gone: nothing is written",
		Key:  key,
	}, {
		Name: "the Route is being deleted: nothing is written",
		Key:  key,
		Objects: []client.Object{rte(func(r *v1.Route) {
			r.DeletionTimestamp = &metav1.Time{Time: time.Unix(1700000000, 0)}
			r.Finalizers = []string{"test/keep"}
		}), cfgReady, rev1},
	}, {
		Name:       "first reconcile: the placeholder Service and the KIngress are created, traffic resolved",
		Key:        key,
		Objects:    []client.Object{rte(), cfgReady, rev1},
		WantWrites: []string{"create Ingress ns/hello", "create Service ns/hello", "status Route ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus(toLatest, rt.Unknown(duck.ConditionReady, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured),
				assigned, notConfigd, noTLS)(t, env)
			ing, want := env.Written(rt.Create, "Ingress", "hello").(*netv1alpha1.Ingress), ingress(r, toLatest, nil)
			if !equality.Semantic.DeepEqual(ing.Spec, want.Spec) || !equality.Semantic.DeepEqual(ing.Labels, want.Labels) ||
				!equality.Semantic.DeepEqual(ing.Annotations, want.Annotations) || !metav1.IsControlledBy(ing, r) {
				t.Errorf("created KIngress\n got %+v\nwant %+v", ing, want)
			}
			if s := ing.Spec.Rules[0]; s.Hosts[0] != "hello.ns.example.com" || s.HTTP.Paths[0].Splits[0].ServiceName != "hello-00001" {
				t.Errorf("KIngress rule %+v", s)
			}
			svc, wantSvc := env.Written(rt.Create, "Service", "hello").(*corev1.Service), placeholder(r)
			if !equality.Semantic.DeepDerivative(wantSvc.Spec, svc.Spec) || svc.Spec.ExternalName != gateway || !metav1.IsControlledBy(svc, r) ||
				svc.Labels[v1.RouteLabelKey] != "hello" {
				t.Errorf("created placeholder\n got %+v\nwant %+v", svc, wantSvc)
			}
			tracked(t, trk)
		},
	}, {
		Name:       "the KIngress is Ready: so is the Route",
		Key:        key,
		Objects:    []client.Object{rte(), cfgReady, rev1, placeholder(r), ingress(r, toLatest, ingReady)},
		WantWrites: []string{"status Route ns/hello"},
		Check:      wantStatus(toLatest, ready, assigned, ingressOK, noTLS),
	}, {
		Name: "nothing changed: nothing is written",
		Key:  key,
		Objects: []client.Object{rte(func(r *v1.Route) {
			r.Status.ObservedGeneration = 1
			r.Status.Conditions = []duck.Condition{ready, assigned, ingressOK, noTLS}
			r.Status.URL = "http://hello.ns.example.com"
			r.Status.Address = &duck.Addressable{URL: "http://hello.ns.svc.cluster.local"}
			r.Status.Traffic = toLatest
		}), cfgReady, rev1, placeholder(r), ingress(r, toLatest, ingReady)},
	}, {
		Name:       "a new latest ready Revision: the KIngress is updated, not configured until it observes it",
		Key:        key,
		Objects:    []client.Object{rte(), cfg("hello-00002", ready), rev1, rev("hello-00002", corev1.ConditionTrue), placeholder(r), ingress(r, toLatest, ingReady)},
		WantWrites: []string{"update Ingress ns/hello", "status Route ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			to2 := []v1.TrafficTarget{{RevisionName: "hello-00002", LatestRevision: ptr(true), Percent: ptr(int64(100))}}
			wantStatus(to2, rt.Unknown(duck.ConditionReady, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured),
				assigned, notConfigd, noTLS)(t, env)
			ing := env.Written(rt.Update, "Ingress", "hello").(*netv1alpha1.Ingress)
			if !equality.Semantic.DeepEqual(ing.Spec, ingress(r, to2, nil).Spec) || ing.Generation != 2 {
				t.Errorf("updated KIngress (generation %d): %+v", ing.Generation, ing.Spec)
			}
		},
	}, {
		Name:       "a split with tags: each tag has its URL",
		Key:        key,
		Objects:    []client.Object{rte(tagSplit), cfg("hello-00002", ready), rev1, rev("hello-00002", corev1.ConditionTrue), placeholder(r)},
		WantWrites: []string{"create Ingress ns/hello", "create Service ns/current-hello", "create Service ns/old-hello", "status Route ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus([]v1.TrafficTarget{
				{Tag: "current", RevisionName: "hello-00002", LatestRevision: ptr(true), Percent: ptr(int64(75)), URL: "http://current-hello.ns.example.com"},
				{Tag: "old", RevisionName: "hello-00001", LatestRevision: ptr(false), Percent: ptr(int64(25)), URL: "http://old-hello.ns.example.com"},
			}, rt.Unknown(duck.ConditionReady, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured), assigned, notConfigd, noTLS)(t, env)
			if hosts, want := ruleHosts(env, rt.Create), []string{"hello.ns.example.com", "hello.ns", "current-hello.ns.example.com", "current-hello.ns", "old-hello.ns.example.com", "old-hello.ns"}; !equality.Semantic.DeepEqual(hosts, want) {
				t.Errorf("KIngress hosts %v, want %v", hosts, want)
			}
			// Each tag's in-cluster name, <tag>-<route>, is the Route's, pointing at the gateway.
			for _, tag := range []string{"current", "old"} {
				svc := env.Written(rt.Create, "Service", tag+"-hello").(*corev1.Service)
				if svc.Spec.Type != corev1.ServiceTypeExternalName || svc.Spec.ExternalName != gateway || !metav1.IsControlledBy(svc, r) ||
					svc.Labels[v1.RouteLabelKey] != "hello" || svc.Labels[v1.ServiceLabelKey] != "hello" {
					t.Errorf("created placeholder of tag %s: %+v", tag, svc)
				}
			}
		},
	}, {
		Name: "a tag's placeholder Service labelled cluster-local: the tag's URL and KIngress rule are in-cluster only, the label stays",
		Key:  key,
		Objects: []client.Object{rte(tagSplit), cfg("hello-00002", ready), rev1, rev("hello-00002", corev1.ConditionTrue),
			placeholder(r), tagPlaceholder(r, "current"), privately(tagPlaceholder(r, "old"))},
		WantWrites: []string{"create Ingress ns/hello", "status Route ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus([]v1.TrafficTarget{
				{Tag: "current", RevisionName: "hello-00002", LatestRevision: ptr(true), Percent: ptr(int64(75)), URL: "http://current-hello.ns.example.com"},
				{Tag: "old", RevisionName: "hello-00001", LatestRevision: ptr(false), Percent: ptr(int64(25)), URL: "http://old-hello.ns.svc.cluster.local"},
			}, rt.Unknown(duck.ConditionReady, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured), assigned, notConfigd, noTLS)(t, env)
			if hosts, want := ruleHosts(env, rt.Create), []string{"hello.ns.example.com", "hello.ns", "current-hello.ns.example.com", "current-hello.ns", "old-hello.ns"}; !equality.Semantic.DeepEqual(hosts, want) {
				t.Errorf("KIngress hosts %v, want %v", hosts, want)
			}
			stored := &corev1.Service{}
			if !env.Get(t, rt.Key(ns, "old-hello"), stored) || stored.Labels[v1.VisibilityLabelKey] != v1.VisibilityClusterLocal {
				t.Errorf("the user's label is gone: %v", stored.Labels)
			}
		},
	}, {
		Name: "a labelled tag placeholder Service that drifted is put back with the user's label kept",
		Key:  key,
		Objects: []client.Object{rte(tagSplit), cfg("hello-00002", ready), rev1, rev("hello-00002", corev1.ConditionTrue),
			placeholder(r), tagPlaceholder(r, "current"), func() client.Object {
				s := privately(tagPlaceholder(r, "old"))
				s.Spec.ExternalName = "elsewhere.example.com"
				delete(s.Labels, v1.RouteLabelKey)
				return s
			}()},
		WantWrites: []string{"create Ingress ns/hello", "status Route ns/hello", "update Service ns/old-hello"},
		Check: func(t *testing.T, env *rt.Env) {
			s := env.Written(rt.Update, "Service", "old-hello").(*corev1.Service)
			if s.Spec.ExternalName != gateway || s.Labels[v1.RouteLabelKey] != "hello" || s.Labels[v1.VisibilityLabelKey] != v1.VisibilityClusterLocal {
				t.Errorf("updated placeholder of tag old: %+v", s)
			}
			if tr := written(t, env).Status.Traffic; len(tr) != 2 || tr[1].URL != "http://old-hello.ns.svc.cluster.local" {
				t.Errorf("status.traffic %+v, want old's URL in-cluster", tr)
			}
		},
	}, {
		Name: "the Route's own placeholder Service labelled: its URL is in-cluster, its tags stay external (as Knative)",
		Key:  key,
		Objects: []client.Object{rte(tagSplit), cfg("hello-00002", ready), rev1, rev("hello-00002", corev1.ConditionTrue),
			privately(placeholder(r)), tagPlaceholder(r, "current"), tagPlaceholder(r, "old")},
		WantWrites: []string{"create Ingress ns/hello", "status Route ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			got := written(t, env)
			if got.Status.URL != "http://hello.ns.svc.cluster.local" || got.Status.Traffic[0].URL != "http://current-hello.ns.example.com" {
				t.Errorf("url %q, traffic %+v", got.Status.URL, got.Status.Traffic)
			}
			if hosts, want := ruleHosts(env, rt.Create), []string{"hello.ns", "current-hello.ns.example.com", "current-hello.ns", "old-hello.ns.example.com", "old-hello.ns"}; !equality.Semantic.DeepEqual(hosts, want) {
				t.Errorf("KIngress hosts %v, want %v", hosts, want)
			}
		},
	}, {
		Name: "a cluster-local Route: every tag is cluster-local, whatever its placeholder Service says",
		Key:  key,
		Objects: []client.Object{rte(tagSplit, func(r *v1.Route) { r.Labels[v1.VisibilityLabelKey] = v1.VisibilityClusterLocal }),
			cfg("hello-00002", ready), rev1, rev("hello-00002", corev1.ConditionTrue), placeholder(r), tagPlaceholder(r, "current"), tagPlaceholder(r, "old")},
		WantWrites: []string{"create Ingress ns/hello", "status Route ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			got := written(t, env)
			if got.Status.URL != "http://hello.ns.svc.cluster.local" || got.Status.Traffic[0].URL != "http://current-hello.ns.svc.cluster.local" ||
				got.Status.Traffic[1].URL != "http://old-hello.ns.svc.cluster.local" {
				t.Errorf("url %q, traffic %+v", got.Status.URL, got.Status.Traffic)
			}
			for _, rule := range env.Written(rt.Create, "Ingress", "hello").(*netv1alpha1.Ingress).Spec.Rules {
				if rule.Visibility != netv1alpha1.IngressVisibilityClusterLocal {
					t.Errorf("a %s rule for %v", rule.Visibility, rule.Hosts)
				}
			}
		},
	}, {
		Name: "a tag removed: its placeholder Service is deleted; another owner's, and one of another Route, are left alone",
		Key:  key,
		Objects: []client.Object{rte(), cfgReady, rev1, placeholder(r), ingress(r, toLatest, ingReady), tagPlaceholder(r, "old"),
			notOwned(tagPlaceholder(r, "theirs")), func() client.Object {
				other := rte(func(o *v1.Route) { o.Name, o.UID = "other", "other-uid" })
				return tagPlaceholder(other, "old")
			}()},
		WantWrites: []string{"delete Service ns/old-hello", "status Route ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			for _, name := range []string{"theirs-hello", "old-other"} {
				if !env.Get(t, rt.Key(ns, name), &corev1.Service{}) {
					t.Errorf("Service %s deleted", name)
				}
			}
		},
	}, {
		Name: "a tag's placeholder Service name is taken: NotOwned on IngressReady, the tag stays external",
		Key:  key,
		Objects: []client.Object{rte(tagSplit), cfg("hello-00002", ready), rev1, rev("hello-00002", corev1.ConditionTrue),
			placeholder(r), tagPlaceholder(r, "current"), notOwned(privately(tagPlaceholder(r, "old")))},
		WantWrites: []string{"create Ingress ns/hello", "status Route ns/hello"},
		WantEvents: []string{`Warning NotOwned hello: There is an existing placeholder Service "old-hello" that we do not own.`},
		Check: func(t *testing.T, env *rt.Env) {
			got := written(t, env)
			rt.CheckConditions(t, "Route", got.Status.Conditions,
				rt.False(duck.ConditionReady, duck.ReasonNotOwned, `There is an existing placeholder Service "old-hello" that we do not own.`),
				assigned, rt.False(v1.RouteConditionIngressReady, duck.ReasonNotOwned, `There is an existing placeholder Service "old-hello" that we do not own.`), noTLS)
			if got.Status.Traffic[1].URL != "http://old-hello.ns.example.com" {
				t.Errorf("traffic %+v", got.Status.Traffic)
			}
		},
	}, {
		Name: "traffic not resolved: the tags' placeholder Services are neither made nor deleted",
		Key:  key,
		Objects: []client.Object{rte(traffic(v1.TrafficTarget{Tag: "next", RevisionName: "hello-00009", Percent: ptr(int64(100))})),
			placeholder(r), tagPlaceholder(r, "old")},
		WantWrites: []string{"status Route ns/hello"},
		WantEvents: []string{`Warning RevisionMissing hello: Revision "hello-00009" referenced in traffic not found.`},
	}, {
		Name:       "the Configuration is missing: ConfigurationMissing, no KIngress, and the Route waits for it",
		Key:        key,
		Objects:    []client.Object{rte()},
		WantWrites: []string{"create Service ns/hello", "status Route ns/hello"},
		WantEvents: []string{"Warning ConfigurationMissing hello: " + missingCfg},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus(nil, rt.False(duck.ConditionReady, v1.ReasonConfigurationMissing, missingCfg),
				rt.False(v1.RouteConditionAllTrafficAssigned, v1.ReasonConfigurationMissing, missingCfg), notConfigd, noTLS)(t, env)
			tracked(t, trk)
		},
	}, {
		Name:       "the Configuration has no ready Revision yet: RevisionMissing, Unknown",
		Key:        key,
		Objects:    []client.Object{rte(), cfg("", rt.Unknown(duck.ConditionReady, "", "")), placeholder(r)},
		WantWrites: []string{"status Route ns/hello"},
		Check: wantStatus(nil, rt.Unknown(duck.ConditionReady, v1.ReasonRevisionMissing, `Configuration "hello" is waiting for a Revision to become ready.`),
			rt.Unknown(v1.RouteConditionAllTrafficAssigned, v1.ReasonRevisionMissing, `Configuration "hello" is waiting for a Revision to become ready.`), notConfigd, noTLS),
	}, {
		Name:       "the Configuration failed with no ready Revision: RevisionMissing, False",
		Key:        key,
		Objects:    []client.Object{rte(), cfg("", rt.False(duck.ConditionReady, v1.ReasonRevisionFailed, "boom")), placeholder(r)},
		WantWrites: []string{"status Route ns/hello"},
		WantEvents: []string{`Warning RevisionMissing hello: Configuration "hello" does not have any ready Revision.`},
		Check: wantStatus(nil, rt.False(duck.ConditionReady, v1.ReasonRevisionMissing, `Configuration "hello" does not have any ready Revision.`),
			rt.False(v1.RouteConditionAllTrafficAssigned, v1.ReasonRevisionMissing, `Configuration "hello" does not have any ready Revision.`), notConfigd, noTLS),
	}, {
		Name:       "a named Revision is missing: RevisionMissing, False",
		Key:        key,
		Objects:    []client.Object{rte(traffic(v1.TrafficTarget{RevisionName: "hello-00009", Percent: ptr(int64(100))})), placeholder(r)},
		WantWrites: []string{"status Route ns/hello"},
		WantEvents: []string{`Warning RevisionMissing hello: Revision "hello-00009" referenced in traffic not found.`},
		Check: wantStatus(nil, rt.False(duck.ConditionReady, v1.ReasonRevisionMissing, `Revision "hello-00009" referenced in traffic not found.`),
			rt.False(v1.RouteConditionAllTrafficAssigned, v1.ReasonRevisionMissing, `Revision "hello-00009" referenced in traffic not found.`), notConfigd, noTLS),
	}, {
		Name: "a named Revision is not ready yet: the KIngress and status.traffic stay as they were",
		Key:  key,
		Objects: []client.Object{rte(traffic(v1.TrafficTarget{RevisionName: "hello-00002", Percent: ptr(int64(100))}), func(r *v1.Route) {
			r.Status.Traffic = toLatest
		}), rev("hello-00002", corev1.ConditionUnknown), placeholder(r), ingress(r, toLatest, ingReady)},
		WantWrites: []string{"status Route ns/hello"},
		Check: wantStatus(toLatest, rt.Unknown(duck.ConditionReady, v1.ReasonRevisionMissing, `Revision "hello-00002" is not yet ready.`),
			rt.Unknown(v1.RouteConditionAllTrafficAssigned, v1.ReasonRevisionMissing, `Revision "hello-00002" is not yet ready.`), ingressOK, noTLS),
	}, {
		Name:       "traffic that slipped past admission: InvalidTraffic",
		Key:        key,
		Objects:    []client.Object{rte(traffic(v1.TrafficTarget{ConfigurationName: "hello", Percent: ptr(int64(90))})), cfgReady, rev1, placeholder(r)},
		WantWrites: []string{"status Route ns/hello"},
		WantEvents: []string{"Warning InvalidTraffic hello: traffic percents sum to 90, not 100"},
		Check: wantStatus(nil, rt.False(duck.ConditionReady, v1.ReasonInvalidTraffic, "traffic percents sum to 90, not 100"),
			rt.False(v1.RouteConditionAllTrafficAssigned, v1.ReasonInvalidTraffic, "traffic percents sum to 90, not 100"), notConfigd, noTLS),
	}, {
		Name:       "the KIngress's name is taken: NotOwned, left alone",
		Key:        key,
		Objects:    []client.Object{rte(), cfgReady, rev1, placeholder(r), notOwned(ingress(r, nil, ingReady))},
		WantWrites: []string{"status Route ns/hello"},
		WantEvents: []string{`Warning NotOwned hello: There is an existing Ingress "hello" that we do not own.`},
		Check: wantStatus(toLatest, rt.False(duck.ConditionReady, duck.ReasonNotOwned, `There is an existing Ingress "hello" that we do not own.`),
			assigned, rt.False(v1.RouteConditionIngressReady, duck.ReasonNotOwned, `There is an existing Ingress "hello" that we do not own.`), noTLS),
	}, {
		Name:       "the placeholder Service's name is taken: NotOwned; the KIngress is still created",
		Key:        key,
		Objects:    []client.Object{rte(), cfgReady, rev1, notOwned(placeholder(r))},
		WantWrites: []string{"create Ingress ns/hello", "status Route ns/hello"},
		WantEvents: []string{`Warning NotOwned hello: There is an existing placeholder Service "hello" that we do not own.`},
		Check: wantStatus(toLatest, rt.False(duck.ConditionReady, duck.ReasonNotOwned, `There is an existing placeholder Service "hello" that we do not own.`),
			assigned, rt.False(v1.RouteConditionIngressReady, duck.ReasonNotOwned, `There is an existing placeholder Service "hello" that we do not own.`), noTLS),
	}, {
		Name:    "a refused KIngress: CreationFailed on IngressReady, retried after the back-off",
		Key:     key,
		Objects: []client.Object{rte(), cfgReady, rev1, placeholder(r)},
		Failures: []rt.Failure{{Verb: rt.Create, Kind: "Ingress",
			Err: rt.Forbidden("ingresses.networking.internal.knative.dev", "hello", "denied by policy")}},
		WantWrites: []string{"status Route ns/hello"},
		WantEvents: []string{"Warning CreationFailed hello: " + refusedIng},
		WantResult: reconcile.Result{RequeueAfter: refusal.DefaultInitial},
		Check: wantStatus(toLatest, rt.False(duck.ConditionReady, duck.ReasonCreationFailed, refusedIng),
			assigned, rt.False(v1.RouteConditionIngressReady, duck.ReasonCreationFailed, refusedIng), noTLS),
	}, {
		Name:       "the KIngress failed: its reason on IngressReady",
		Key:        key,
		Objects:    []client.Object{rte(), cfgReady, rev1, placeholder(r), ingress(r, toLatest, &duck.Condition{Type: duck.ConditionReady, Status: corev1.ConditionFalse, Reason: "Conflict", Message: "host taken"})},
		WantWrites: []string{"status Route ns/hello"},
		WantEvents: []string{"Warning Conflict hello: host taken"},
		Check: wantStatus(toLatest, rt.False(duck.ConditionReady, "Conflict", "host taken"),
			assigned, rt.False(v1.RouteConditionIngressReady, "Conflict", "host taken"), noTLS),
	}, {
		Name: "a placeholder Service that drifted is put back",
		Key:  key,
		Objects: []client.Object{rte(), cfgReady, rev1, func() client.Object {
			s := placeholder(r)
			s.Spec.ExternalName = "elsewhere.example.com"
			return s
		}(), ingress(r, toLatest, ingReady)},
		WantWrites: []string{"update Service ns/hello", "status Route ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus(toLatest, ready, assigned, ingressOK, noTLS)(t, env)
			if s := env.Written(rt.Update, "Service", "hello").(*corev1.Service); s.Spec.ExternalName != gateway {
				t.Errorf("placeholder ExternalName %q", s.Spec.ExternalName)
			}
		},
	}}, build)
}
