package integration

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/route/rollout"
)

// TestRollout follows a gradual rollout (serving.knative.dev/rollout-duration) on the
// real API server, reconcilers and gateway: at each step the Route's status.traffic
// sums to 100 and moves towards the new Revision only, and the split the gateway
// serves (requests counted per Revision) matches it; it ends with all traffic on the
// new Revision and the KIngress's annotation recording the finished rollout.
func TestRollout(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	listener := strings.TrimPrefix(startFerryAndGateway(t, true, ns), "http://")
	ctx := context.Background()

	svc := ksvc(ns, "roll", "ferry.test/roll")
	svc.Annotations = map[string]string{"serving.knative.dev/rollout-duration": "10s"}
	if err := testClient.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, testClient, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	const rev1, rev2 = "roll-00001", "roll-00002"
	host := "roll." + ns + ".example.com"
	if got, why := revisionAnswering(t, listener, host, ""); got != rev1 {
		t.Fatalf("before the update: answered by %q %s, want %s", got, why, rev1)
	}

	w := countRolloutWrites(t, ns)
	updateService(t, testClient, ns, "roll", func(s *v1.Service) {
		s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: "2"}}
	})

	followRollout(t, ns, "roll", listener, host, rev2, "", func(rt *v1.Route) (int64, error) {
		return rev2Percent(rt.Status.Traffic, rev1, rev2)
	})

	ing := &netv1alpha1.Ingress{}
	get(t, testClient, ns, "roll", ing)
	state := rollout.Parse(ing.Annotations[rollout.Annotation])
	want := &rollout.Rollout{Configurations: []*rollout.ConfigurationRollout{{ConfigurationName: "roll", Percent: 100,
		Revisions: []rollout.RevisionRollout{{RevisionName: rev2, Percent: 100}}}}}
	if !reflect.DeepEqual(state, want) {
		t.Errorf("rollout annotation %q, want %s", ing.Annotations[rollout.Annotation], want)
	}
	waitCondition(t, testClient, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)

	// The writes: one KIngress spec update per split (the 1 % and each step), one of
	// its annotation alone (the pace), a Route status per split.
	w.check(t)
}

// followRollout follows, until it ends, the rollout of rev2 on the Route and KIngress
// name, whose status.traffic gives rev2's percent on host by percent. A sample is
// the Route's status.traffic and the KIngress on both sides of a batch of requests
// to host: when neither changed, the gateway had programmed the KIngress, and the
// KIngress gave host the split status.traffic shows, the batch was served by that
// split. (The Route's status follows its KIngress being Ready: for a moment the
// gateway serves a split status.traffic does not show yet.) The gateway picks each request's Revision at
// random, so "served by that split" is a binomial bound (splitAgrees): loose for one
// batch, tight for all the batches of a percent pooled, which catches a gateway a
// step behind. The percent must go 0, 1 and up by steps to 100, never back, and at
// least three samples must match.
func followRollout(t *testing.T, ns, name, listener, host, rev2, where string, percent func(*v1.Route) (int64, error)) {
	t.Helper()
	const requests = 100
	var seen []int64 // rev2's percent in status.traffic, each new value
	matched := 0
	pooled := map[int64][2]int{} // percent -> requests served by rev2, requests
	eventually(t, 3*readyTimeout, func() (bool, string) {
		rt, ing := &v1.Route{}, &netv1alpha1.Ingress{}
		if !get(t, testClient, ns, name, rt) || !get(t, testClient, ns, name, ing) {
			return false, "no Route or KIngress"
		}
		p2, err := percent(rt)
		if err != nil {
			t.Fatalf("status.traffic %s: %v", split(rt.Status.Traffic), err)
		}
		if n := len(seen); n == 0 || seen[n-1] != p2 {
			if n > 0 && p2 < seen[n-1] {
				t.Fatalf("status.traffic moved back from %d %% to %d %% on %s%s", seen[n-1], p2, rev2, where)
			}
			seen = append(seen, p2)
			t.Logf("status.traffic %s; rollout state %s", split(rt.Status.Traffic), ing.Annotations[rollout.Annotation])
		}
		served := map[string]int{}
		for range requests {
			got, why := revisionAnswering(t, listener, host, "")
			if got == "" {
				t.Fatalf("a request to %s was not answered by a Revision: %s", host, why)
			}
			served[got]++
		}
		rtAfter, ingAfter := &v1.Route{}, &netv1alpha1.Ingress{}
		get(t, testClient, ns, name, rtAfter)
		get(t, testClient, ns, name, ingAfter)
		programmed := ing.Status.ObservedGeneration == ing.Generation && ing.IsReady() && ingressPercent(ing, host, rev2) == p2
		if programmed && ingAfter.Generation == ing.Generation && reflect.DeepEqual(rt.Status.Traffic, rtAfter.Status.Traffic) {
			if !splitAgrees(served[rev2], requests, p2) {
				t.Errorf("%s served %v for status.traffic %d %% on %s", host, served, p2, rev2)
			}
			pool := pooled[p2]
			pooled[p2] = [2]int{pool[0] + served[rev2], pool[1] + requests}
			matched++
		}
		done := p2 == 100 && rt.Status.GetCondition(v1.RouteConditionReady).IsTrue()
		return done, fmt.Sprintf("%s at %d %%%s, served %v", rev2, p2, where, served)
	})
	t.Logf("%s's percent%s in status.traffic: %v; %d samples matched the gateway", rev2, where, seen, matched)
	if len(seen) < 3 || seen[0] != 0 || seen[1] != 1 {
		t.Errorf("status.traffic went %v on %s%s, want 0, 1 and the steps to 100", seen, rev2, where)
	}
	if matched < 3 {
		t.Errorf("only %d samples matched the gateway's split%s", matched, where)
	}
	for p2, pool := range pooled {
		if !splitAgrees(pool[0], pool[1], p2) {
			t.Errorf("%s served %d of %d requests at status.traffic %d %% on it%s", rev2, pool[0], pool[1], p2, where)
		}
	}
}

// splitAgrees says whether served of n requests, each sent to a Revision with
// probability percent/100, is what that split gives: exactly none or all at 0 and
// 100 %, else within five standard deviations of the binomial plus three requests
// (the skew at small percents), a false alarm about once in a million checks. For
// one batch of 100 at 50 % that is ±28 points; for ten batches pooled, ±8, less
// than a rollout's step.
func splitAgrees(served, n int, percent int64) bool {
	switch percent {
	case 0:
		return served == 0
	case 100:
		return served == n
	}
	p := float64(percent) / 100
	slack := 5*math.Sqrt(float64(n)*p*(1-p)) + 3
	return math.Abs(float64(served)-float64(n)*p) <= slack
}

// ingressPercent is rev2's percent of host's requests (those without a tag header)
// in the KIngress's spec; -1 when it has no such rule.
func ingressPercent(ing *netv1alpha1.Ingress, host, rev2 string) int64 {
	for _, rule := range ing.Spec.Rules {
		if rule.Visibility == netv1alpha1.IngressVisibilityClusterLocal || !slices.Contains(rule.Hosts, host) || rule.HTTP == nil {
			continue
		}
		for _, path := range rule.HTTP.Paths {
			if len(path.Headers) > 0 {
				continue
			}
			var p int64
			for _, split := range path.Splits {
				if split.ServiceName == rev2 {
					p += int64(split.Percent)
				}
			}
			return p
		}
	}
	return -1
}

// rolloutWrites counts the writes of a rollout, as the watch brings them.
type rolloutWrites struct {
	mu                                      sync.Mutex
	ingressSpec, ingressMeta, ingressStatus int
	serviceStatus, stepSize                 int
	// routeStatuses is each Route status written; trafficWrites, those that changed
	// status.traffic.
	routeStatuses []string
	trafficWrites int
	// splits are the status.traffic values written, to catch one written again (the
	// split went back); back is the first such.
	splits map[string]bool
	back   string
	// failed is a Route status written with Ready=False, which a rollout never is.
	failed string
}

// check asserts a finished rollout's writes: one KIngress spec update per split (the
// 1 % and each step), one of its annotation alone (the pace, every host's at once),
// and one Route status write of status.traffic per split, never going back to one
// shown before, and none with Ready=False. These are fixed by the rollout. How many
// other Route status writes there are depends on timing, so they are shown, not
// counted: the last step's IngressNotConfigured, for one, is written only when the
// gateway reports on the new generation later than the status settle time
// (docs/reconcilers.md).
func (w *rolloutWrites) check(t *testing.T) {
	t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("writes: KIngress spec %d, annotation only %d, status (gateway) %d; Route status %d (%d of status.traffic); Service status %d (step size %d)",
		w.ingressSpec, w.ingressMeta, w.ingressStatus, len(w.routeStatuses), w.trafficWrites, w.serviceStatus, w.stepSize)
	for i, s := range w.routeStatuses {
		t.Logf("Route status %d: %s", i+1, s)
	}
	if w.stepSize == 0 {
		t.Fatal("no pace seen")
	}
	splits := 1 + (99+w.stepSize-1)/w.stepSize
	if w.ingressSpec != splits || w.ingressMeta != 1 || w.trafficWrites != splits {
		t.Errorf("%d splits: want as many KIngress spec updates and Route status.traffic writes, and one KIngress update of the annotation alone", splits)
	}
	if w.back != "" {
		t.Errorf("status.traffic went back to a split it had shown: %s", w.back)
	}
	if w.failed != "" {
		t.Errorf("a Route status was written with Ready=False during the rollout: %s", w.failed)
	}
}

// routeStatusLine is what a Route status write says: its traffic and conditions.
func routeStatusLine(rt *v1.Route) string {
	var conds []string
	for _, c := range rt.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return fmt.Sprintf("%s; %s", split(rt.Status.Traffic), strings.Join(conds, " "))
}

// countRolloutWrites counts, from now until the test ends, the writes to the
// KIngresses, Routes and Services of ns.
func countRolloutWrites(t *testing.T, ns string) *rolloutWrites {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	c, err := client.NewWithWatch(testConfig, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	w := &rolloutWrites{splits: map[string]bool{}}
	count := func(n *int) {
		w.mu.Lock()
		*n++
		w.mu.Unlock()
	}
	ings := informIn(ctx, c, ns, func() client.ObjectList { return &netv1alpha1.IngressList{} }, &netv1alpha1.Ingress{},
		cache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
			old, ing := o.(*netv1alpha1.Ingress), n.(*netv1alpha1.Ingress)
			switch {
			case ing.Generation != old.Generation:
				count(&w.ingressSpec)
			case !equality.Semantic.DeepEqual(ing.Status, old.Status):
				count(&w.ingressStatus)
			case !equality.Semantic.DeepEqual(ing.Annotations, old.Annotations):
				count(&w.ingressMeta)
			}
			if s := rollout.Parse(ing.Annotations[rollout.Annotation]); s != nil && len(s.Configurations) > 0 {
				w.mu.Lock()
				w.stepSize = max(w.stepSize, s.Configurations[0].StepParams.StepSize)
				w.mu.Unlock()
			}
		}})
	routes := informIn(ctx, c, ns, func() client.ObjectList { return &v1.RouteList{} }, &v1.Route{},
		cache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
			old, rt := o.(*v1.Route), n.(*v1.Route)
			if equality.Semantic.DeepEqual(old.Status, rt.Status) {
				return
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			w.routeStatuses = append(w.routeStatuses, routeStatusLine(rt))
			if !equality.Semantic.DeepEqual(old.Status.Traffic, rt.Status.Traffic) {
				w.trafficWrites++
				was, now := split(old.Status.Traffic), split(rt.Status.Traffic)
				if w.splits[now] && w.back == "" {
					w.back = fmt.Sprintf("%s after %s", now, was)
				}
				w.splits[was], w.splits[now] = true, true
			}
			if rt.Status.GetCondition(v1.RouteConditionReady).IsFalse() && w.failed == "" {
				w.failed = routeStatusLine(rt)
			}
		}})
	services := informIn(ctx, c, ns, func() client.ObjectList { return &v1.ServiceList{} }, &v1.Service{},
		cache.ResourceEventHandlerFuncs{UpdateFunc: func(o, n any) {
			if !equality.Semantic.DeepEqual(o.(*v1.Service).Status, n.(*v1.Service).Status) {
				count(&w.serviceStatus)
			}
		}})
	if !cache.WaitForCacheSync(ctx.Done(), ings.HasSynced, routes.HasSynced, services.HasSynced) {
		t.Fatal("the watches did not sync")
	}
	return w
}

// rev2Percent checks a status.traffic of one Service's rollout (only rev1 and rev2,
// percents summing to 100) and returns rev2's percent.
func rev2Percent(traffic []v1.TrafficTarget, rev1, rev2 string) (int64, error) {
	var sum, p2 int64
	for _, tt := range traffic {
		if tt.Percent == nil || (tt.RevisionName != rev1 && tt.RevisionName != rev2) {
			return 0, fmt.Errorf("unexpected target %+v", tt)
		}
		sum += *tt.Percent
		if tt.RevisionName == rev2 {
			p2 += *tt.Percent
		}
	}
	if sum != 100 {
		return 0, fmt.Errorf("percents sum to %d", sum)
	}
	return p2, nil
}

// split is status.traffic as revision=percent pairs.
func split(traffic []v1.TrafficTarget) string {
	var parts []string
	for _, tt := range traffic {
		parts = append(parts, fmt.Sprintf("%s=%d", tt.RevisionName, *tt.Percent))
	}
	return strings.Join(parts, " ")
}

// TestRolloutTag follows a gradual rollout on a tag's own host: a Service whose
// default split and tag "latest" (0 % of the default split) both follow the latest
// Revision. The tag's host moves step by step, as status.traffic shows for the tag
// and as the gateway serves it, on the same steps as the default split: one KIngress
// update per step for both.
func TestRolloutTag(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	listener := strings.TrimPrefix(startFerryAndGateway(t, true, ns), "http://")
	ctx := context.Background()

	svc := ksvc(ns, "rolltag", "ferry.test/rolltag")
	svc.Annotations = map[string]string{"serving.knative.dev/rollout-duration": "10s"}
	yes := true
	hundred, zero := int64(100), int64(0)
	svc.Spec.Traffic = []v1.TrafficTarget{
		{LatestRevision: &yes, Percent: &hundred},
		{LatestRevision: &yes, Percent: &zero, Tag: "latest"},
	}
	if err := testClient.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, testClient, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	const rev1, rev2 = "rolltag-00001", "rolltag-00002"
	host := "latest-rolltag." + ns + ".example.com"
	if got, why := revisionAnswering(t, listener, host, ""); got != rev1 {
		t.Fatalf("before the update: the tag's host answered by %q %s, want %s", got, why, rev1)
	}

	w := countRolloutWrites(t, ns)
	updateService(t, testClient, ns, "rolltag", func(s *v1.Service) {
		s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: "2"}}
	})

	followRollout(t, ns, "rolltag", listener, host, rev2, " on the tag's host", func(rt *v1.Route) (int64, error) {
		var def, tag []v1.TrafficTarget
		for _, tt := range rt.Status.Traffic {
			if tt.Tag == "latest" {
				tag = append(tag, tt)
			} else {
				def = append(def, tt)
			}
		}
		if len(tag) == 1 && (tag[0].RevisionName == rev1 || tag[0].RevisionName == rev2) {
			// Its host serves the tag's one Revision, whatever its share of the default split.
			tag[0].Percent = &hundred
		}
		p2, err := rev2Percent(tag, rev1, rev2)
		if err != nil {
			return 0, fmt.Errorf("for the tag: %w", err)
		}
		// Both hosts started on the same reconcile and step on the same clock.
		if d2, err := rev2Percent(def, rev1, rev2); err != nil || d2 != p2 {
			return 0, fmt.Errorf("the default split at %d %% (%v), the tag's host at %d %%", d2, err, p2)
		}
		return p2, nil
	})

	ing := &netv1alpha1.Ingress{}
	get(t, testClient, ns, "rolltag", ing)
	state := rollout.Parse(ing.Annotations[rollout.Annotation])
	done := []rollout.RevisionRollout{{RevisionName: rev2, Percent: 100}}
	want := &rollout.Rollout{Configurations: []*rollout.ConfigurationRollout{
		{ConfigurationName: "rolltag", Percent: 100, Revisions: done},
		{ConfigurationName: "rolltag", Tag: "latest", Percent: 100, Revisions: done},
	}}
	if !reflect.DeepEqual(state, want) {
		t.Errorf("rollout annotation %q, want %s", ing.Annotations[rollout.Annotation], want)
	}

	// The writes: the tag's host adds none, so they are the same as without it.
	w.check(t)
}
