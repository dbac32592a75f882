package route_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	rt "github.com/ferry-serving/ferry/internal/reconciler/kit/reconcilertest"
	"github.com/ferry-serving/ferry/internal/reconciler/route"
	"github.com/ferry-serving/ferry/internal/reconciler/route/rollout"
	"github.com/ferry-serving/ferry/internal/tracker"
)

// TestRolloutTable: the reconciler reads the rollout state from the KIngress, writes
// the step's split and state back, shows the split in status.traffic and requeues for
// the next step; all by the clock it is given.
func TestRolloutTable(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	networkSeconds := 0
	build := func(env *rt.Env) reconcile.Reconciler {
		b := env.Base()
		b.Clock = rt.Clock(func() time.Time { return now })
		b.Config = func() *config.Config {
			c := config.Default()
			c.Network.RolloutDurationSeconds = networkSeconds
			return c
		}
		return &route.Reconciler{Base: b, Tracker: tracker.New(func(types.NamespacedName) {}, 0).SetScheme(env.Scheme), GatewayHost: gateway}
	}
	withDuration := func(d string) func(*v1.Route) {
		return func(r *v1.Route) { r.Annotations = map[string]string{"serving.knative.dev/rollout-duration": d} }
	}
	r := rte(withDuration("6s"))
	target := func(rev string, percent int64) v1.TrafficTarget {
		return v1.TrafficTarget{RevisionName: rev, LatestRevision: ptr(true), Percent: ptr(percent)}
	}
	state := func(params rollout.Params, revs ...rollout.RevisionRollout) *rollout.Rollout {
		return &rollout.Rollout{Configurations: []*rollout.ConfigurationRollout{{ConfigurationName: "hello", Percent: 100, Revisions: revs, StepParams: params}}}
	}
	rr := func(name string, percent int) rollout.RevisionRollout {
		return rollout.RevisionRollout{RevisionName: name, Percent: percent}
	}
	// both adds to s the state of the tag current's host, paced as s, serving revs.
	both := func(s *rollout.Rollout, revs ...rollout.RevisionRollout) *rollout.Rollout {
		c := *s.Configurations[0]
		c.Tag, c.Revisions = "current", revs
		return &rollout.Rollout{Configurations: append(s.Configurations, &c)}
	}
	// tagged puts targets on the tag current, as status.traffic shows them.
	tagged := func(targets ...v1.TrafficTarget) []v1.TrafficTarget {
		for i := range targets {
			targets[i].Tag, targets[i].URL = "current", "http://current-hello.ns.example.com"
		}
		return targets
	}
	// served is the KIngress serving split with state, Ready for its generation.
	served := func(route *v1.Route, s *rollout.Rollout, split ...v1.TrafficTarget) *netv1alpha1.Ingress {
		ing := ingress(route, split, ingReady)
		if s != nil {
			ing.Annotations[rollout.Annotation] = s.String()
		}
		return ing
	}
	// wantIngress checks the updated KIngress's split and state (nil: no annotation).
	wantIngress := func(t *testing.T, env *rt.Env, s *rollout.Rollout, split ...v1.TrafficTarget) {
		t.Helper()
		ing := env.Written(rt.Update, "Ingress", "hello").(*netv1alpha1.Ingress)
		want := ingress(r, split, nil)
		if got := ing.Spec.Rules[0].HTTP.Paths[0].Splits; !equalSplits(got, want.Spec.Rules[0].HTTP.Paths[0].Splits) {
			t.Errorf("KIngress split %+v", got)
		}
		got, ok := ing.Annotations[rollout.Annotation]
		switch {
		case s == nil && ok:
			t.Errorf("rollout annotation %s, want none", got)
		case s != nil && got != s.String():
			t.Errorf("rollout annotation\n got %s\nwant %s", got, s)
		}
	}
	rolling := rt.Unknown(v1.RouteConditionIngressReady, v1.ReasonRolloutInProgress, v1.MessageRolloutInProgress)
	rollingReady := rt.Unknown(duck.ConditionReady, v1.ReasonRolloutInProgress, v1.MessageRolloutInProgress)
	cfg2, rev1, rev2 := cfg("hello-00002", ready), rev("hello-00001", corev1.ConditionTrue), rev("hello-00002", corev1.ConditionTrue)
	start := rollout.Params{StartTime: now.Add(-2 * time.Second).UnixNano()}
	paced := rollout.Params{StartTime: start.StartTime, StepDuration: int64(time.Second), StepSize: 25, NextStepTime: now.UnixNano()}
	steady := state(rollout.Params{}, rr("hello-00001", 100))

	rt.Run(t, []rt.Case{{
		Name:       "a new Revision: 1 % of the traffic, the pace waits for the KIngress",
		Key:        key,
		Objects:    []client.Object{r, cfg2, rev1, rev2, placeholder(r), served(r, steady, target("hello-00001", 100))},
		WantWrites: []string{"update Ingress ns/hello", "status Route ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			split := []v1.TrafficTarget{target("hello-00001", 99), target("hello-00002", 1)}
			wantIngress(t, env, state(rollout.Params{StartTime: now.UnixNano()}, rr("hello-00001", 99), rr("hello-00002", 1)), split...)
			wantStatus(split, rollingReady, assigned, rolling, noTLS)(t, env)
		},
	}, {
		Name: "the KIngress serves the 1 %: the pace is set, the Route requeued for the first step",
		Key:  key,
		Objects: []client.Object{r, cfg2, rev1, rev2, placeholder(r),
			served(r, state(start, rr("hello-00001", 99), rr("hello-00002", 1)), target("hello-00001", 99), target("hello-00002", 1))},
		WantWrites: []string{"update Ingress ns/hello", "status Route ns/hello"},
		// 6 s: 2 s for the 1 %, 4 s left in 2 s steps of 50 %.
		WantResult: reconcile.Result{RequeueAfter: 2 * time.Second},
		Check: func(t *testing.T, env *rt.Env) {
			split := []v1.TrafficTarget{target("hello-00001", 99), target("hello-00002", 1)}
			p := rollout.Params{StartTime: start.StartTime, StepDuration: int64(2 * time.Second), StepSize: 50, NextStepTime: now.Add(2 * time.Second).UnixNano()}
			wantIngress(t, env, state(p, rr("hello-00001", 99), rr("hello-00002", 1)), split...)
			wantStatus(split, rollingReady, assigned, rolling, noTLS)(t, env)
		},
	}, {
		Name: "a step is due: the split moves, the next step is scheduled",
		Key:  key,
		Objects: []client.Object{r, cfg2, rev1, rev2, placeholder(r),
			served(r, state(paced, rr("hello-00001", 74), rr("hello-00002", 26)), target("hello-00001", 74), target("hello-00002", 26))},
		WantWrites: []string{"update Ingress ns/hello", "status Route ns/hello"},
		WantResult: reconcile.Result{RequeueAfter: time.Second},
		Check: func(t *testing.T, env *rt.Env) {
			split := []v1.TrafficTarget{target("hello-00001", 49), target("hello-00002", 51)}
			p := paced
			p.NextStepTime = now.Add(time.Second).UnixNano()
			wantIngress(t, env, state(p, rr("hello-00001", 49), rr("hello-00002", 51)), split...)
			wantStatus(split, rollingReady, assigned, rolling, noTLS)(t, env)
		},
	}, {
		Name: "a newer Revision mid-rollout: a new rollout from the current split",
		Key:  key,
		Objects: []client.Object{r, cfg("hello-00003", ready), rev1, rev2, rev("hello-00003", corev1.ConditionTrue), placeholder(r),
			served(r, state(paced, rr("hello-00001", 74), rr("hello-00002", 26)), target("hello-00001", 74), target("hello-00002", 26))},
		WantWrites: []string{"update Ingress ns/hello", "status Route ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			split := []v1.TrafficTarget{target("hello-00001", 74), target("hello-00002", 25), target("hello-00003", 1)}
			s := state(rollout.Params{StartTime: now.UnixNano()}, rr("hello-00001", 74), rr("hello-00002", 25), rr("hello-00003", 1))
			wantIngress(t, env, s, split...)
			wantStatus(split, rollingReady, assigned, rolling, noTLS)(t, env)
		},
	}, {
		Name: "the last step: all to the new Revision, the state records it",
		Key:  key,
		Objects: []client.Object{r, cfg2, rev1, rev2, placeholder(r),
			served(r, state(paced, rr("hello-00001", 24), rr("hello-00002", 76)), target("hello-00001", 24), target("hello-00002", 76))},
		WantWrites: []string{"update Ingress ns/hello", "status Route ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			wantIngress(t, env, state(rollout.Params{}, rr("hello-00002", 100)), target("hello-00002", 100))
			wantStatus([]v1.TrafficTarget{target("hello-00002", 100)},
				rt.Unknown(duck.ConditionReady, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured), assigned, notConfigd, noTLS)(t, env)
		},
	}, {
		Name: "the duration removed mid-rollout: all to the new Revision at once, the state goes",
		Key:  key,
		Objects: []client.Object{rte(), cfg2, rev1, rev2, placeholder(r),
			served(r, state(paced, rr("hello-00001", 74), rr("hello-00002", 26)), target("hello-00001", 74), target("hello-00002", 26))},
		WantWrites: []string{"update Ingress ns/hello", "status Route ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			wantIngress(t, env, nil, target("hello-00002", 100))
			wantStatus([]v1.TrafficTarget{target("hello-00002", 100)},
				rt.Unknown(duck.ConditionReady, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured), assigned, notConfigd, noTLS)(t, env)
		},
	}, {
		Name: "config-network's rollout-duration when the Route has none",
		Key:  key,
		Before: func(*testing.T, *rt.Env) {
			networkSeconds = 6
			t.Cleanup(func() { networkSeconds = 0 })
		},
		Objects:    []client.Object{rte(), cfg2, rev1, rev2, placeholder(r), served(rte(), steady, target("hello-00001", 100))},
		WantWrites: []string{"update Ingress ns/hello", "status Route ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			split := []v1.TrafficTarget{target("hello-00001", 99), target("hello-00002", 1)}
			wantIngress(t, env, state(rollout.Params{StartTime: now.UnixNano()}, rr("hello-00001", 99), rr("hello-00002", 1)), split...)
		},
	}, {
		Name: "a tag on the latest: its host rolls with the default split, in the same KIngress update",
		Key:  key,
		Objects: []client.Object{rte(withDuration("6s"), traffic(v1.TrafficTarget{ConfigurationName: "hello", Percent: ptr(int64(100)), Tag: "current"})),
			cfg2, rev1, rev2, placeholder(r), tagPlaceholder(r, "current"),
			served(r, both(steady, rr("hello-00001", 100)), tagged(target("hello-00001", 100))...)},
		WantWrites: []string{"update Ingress ns/hello", "status Route ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			split := []v1.TrafficTarget{target("hello-00001", 99), target("hello-00002", 1)}
			started := rollout.Params{StartTime: now.UnixNano()}
			wantIngress(t, env, both(state(started, rr("hello-00001", 99), rr("hello-00002", 1)), rr("hello-00001", 99), rr("hello-00002", 1)), split...)
			ing := env.Written(rt.Update, "Ingress", "hello").(*netv1alpha1.Ingress)
			if got := ing.Spec.Rules[2]; got.Hosts[0] != "current-hello.ns.example.com" || !equalSplits(got.HTTP.Paths[0].Splits, ing.Spec.Rules[0].HTTP.Paths[0].Splits) {
				t.Errorf("tag rule %v splits %+v, want the default split's", got.Hosts, got.HTTP.Paths[0].Splits)
			}
			wantStatus(tagged(split...), rollingReady, assigned, rolling, noTLS)(t, env)
		},
	}, {
		Name: "a named Revision moves at once",
		Key:  key,
		Objects: []client.Object{rte(withDuration("6s"), traffic(v1.TrafficTarget{RevisionName: "hello-00002", Percent: ptr(int64(100))})),
			rev1, rev2, placeholder(r), served(r, steady, target("hello-00001", 100))},
		WantWrites: []string{"update Ingress ns/hello", "status Route ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			to2 := v1.TrafficTarget{RevisionName: "hello-00002", LatestRevision: ptr(false), Percent: ptr(int64(100))}
			wantIngress(t, env, &rollout.Rollout{}, to2)
		},
	}}, build)
}

func equalSplits(a, b []netv1alpha1.IngressBackendSplit) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].ServiceName != b[i].ServiceName || a[i].Percent != b[i].Percent {
			return false
		}
	}
	return true
}
