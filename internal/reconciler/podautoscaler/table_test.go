package podautoscaler

// This table test is in the internal test package, unlike the other reconcilers':
// Controller makes the afterBurst queues and the pace, which a Reconciler built from
// its exported fields alone lacks (and panics), and the test gives its own. It sets
// nothing else unexported and calls no unexported function.

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	"github.com/ferry-serving/ferry/api/duck"
	"github.com/ferry-serving/ferry/internal/autoscaler"
	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
	"github.com/ferry-serving/ferry/internal/config"
	rt "github.com/ferry-serving/ferry/internal/reconciler/kit/reconcilertest"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
	"github.com/ferry-serving/ferry/internal/reconciler/podautoscaler/resources"
)

const (
	ns      = "ns"
	depName = "hello-00001-deployment"
)

var paKey = rt.Key(ns, "hello-00001")

func ptr[T any](v T) *T { return &v }

// activation is Knative's activation timeout under the default configuration: the
// progress deadline plus 30 s.
var activation = config.DefaultDeployment().ProgressDeadline + 30*time.Second

func newPA(annotations map[string]string, opts ...func(*av1alpha1.PodAutoscaler)) *av1alpha1.PodAutoscaler {
	p := &av1alpha1.PodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello-00001", UID: "pa-uid", Generation: 1,
		Labels: map[string]string{"serving.knative.dev/revision": "hello-00001"}, Annotations: annotations}}
	p.Spec.ScaleTargetRef = corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: depName}
	for _, o := range opts {
		o(p)
	}
	return p
}

// since gives the PodAutoscaler the status of one that has been in the Active state
// (True, or False with NoTraffic) since at, with its target initialized.
func since(status corev1.ConditionStatus, at time.Time, desired, actual int32) func(*av1alpha1.PodAutoscaler) {
	return func(p *av1alpha1.PodAutoscaler) {
		p.Status.ObservedGeneration = 1
		p.Status.ServiceName, p.Status.MetricsServiceName = p.Name, p.Name
		p.Status.DesiredScale, p.Status.ActualScale = ptr(desired), ptr(actual)
		act := duck.Condition{Type: av1alpha1.PodAutoscalerConditionActive, Status: status, LastTransitionTime: metav1.NewTime(at)}
		top := duck.Condition{Type: duck.ConditionReady, Status: status, LastTransitionTime: metav1.NewTime(at)}
		if status == corev1.ConditionFalse {
			act.Reason, act.Message = av1alpha1.ReasonNoTraffic, av1alpha1.MessageNoTraffic
			top.Reason, top.Message = act.Reason, act.Message
		}
		p.Status.Conditions = []duck.Condition{act, top,
			{Type: av1alpha1.PodAutoscalerConditionSKSReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)},
			{Type: av1alpha1.PodAutoscalerConditionScaleTargetInitialized, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(at)}}
	}
}

func deployment(replicas, ready int32) *appsv1.Deployment {
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: depName, UID: "dep-uid", Generation: 1,
		Labels: map[string]string{"serving.knative.dev/revision": "hello-00001"}}}
	d.Spec.Replicas = ptr(replicas)
	d.Status.ObservedGeneration, d.Status.Replicas, d.Status.ReadyReplicas = 1, replicas, ready
	return d
}

var (
	kpa      = map[string]string{av1alpha1.ClassAnnotationKey: av1alpha1.KPA}
	hpaClass = map[string]string{av1alpha1.ClassAnnotationKey: av1alpha1.HPA, "autoscaling.knative.dev/metric": "cpu",
		"autoscaling.knative.dev/target": "75", "autoscaling.knative.dev/min-scale": "2", "autoscaling.knative.dev/max-scale": "5",
		"autoscaling.knative.dev/window": "20s"}
	sks         = rt.True(av1alpha1.PodAutoscalerConditionSKSReady)
	initialized = rt.True(av1alpha1.PodAutoscalerConditionScaleTargetInitialized)
	initPending = rt.Unknown(av1alpha1.PodAutoscalerConditionScaleTargetInitialized, av1alpha1.ReasonInitializing, "")
	active      = rt.True(av1alpha1.PodAutoscalerConditionActive)
	queued      = rt.Unknown(av1alpha1.PodAutoscalerConditionActive, av1alpha1.ReasonQueued, av1alpha1.MessageQueued)
	noTraffic   = rt.False(av1alpha1.PodAutoscalerConditionActive, av1alpha1.ReasonNoTraffic, av1alpha1.MessageNoTraffic)
)

func with(m map[string]string, kv ...string) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// wantStatus checks the written status: scales and conditions (Ready derived).
func wantStatus(desired, actual int32, conds ...duck.Condition) func(*testing.T, *rt.Env) {
	return func(t *testing.T, env *rt.Env) {
		t.Helper()
		o := env.Written(rt.Status, "PodAutoscaler", "hello-00001")
		if o == nil {
			t.Fatal("no status written")
		}
		p := o.(*av1alpha1.PodAutoscaler)
		if p.Status.ObservedGeneration != 1 || p.Status.ServiceName != "hello-00001" || p.Status.MetricsServiceName != "hello-00001" {
			t.Errorf("status = %+v", p.Status)
		}
		if p.Status.DesiredScale == nil || *p.Status.DesiredScale != desired || p.Status.ActualScale == nil || *p.Status.ActualScale != actual {
			t.Errorf("desired scale %v, actual %v; want %d, %d", p.Status.DesiredScale, p.Status.ActualScale, desired, actual)
		}
		rt.CheckConditions(t, "PodAutoscaler", p.Status.Conditions, conds...)
	}
}

// ready is the PodAutoscaler's Ready as derived from its first False, else first
// Unknown, dependent.
func ready(c duck.Condition) duck.Condition {
	c.Type = duck.ConditionReady
	return c
}

// scaledTo checks the Deployment's replicas after the reconcile.
func scaledTo(n int32) func(*testing.T, *rt.Env) {
	return func(t *testing.T, env *rt.Env) {
		t.Helper()
		var d appsv1.Deployment
		env.Get(t, rt.Key(ns, depName), &d)
		if *d.Spec.Replicas != n {
			t.Errorf("Deployment replicas %d, want %d", *d.Spec.Replicas, n)
		}
		if w := env.Written(rt.Scale, "Deployment", depName); w != nil && !equality.Semantic.DeepEqual(*w.(*appsv1.Deployment).Spec.Replicas, n) {
			t.Errorf("scale write of %d", *w.(*appsv1.Deployment).Spec.Replicas)
		}
	}
}

func all(checks ...func(*testing.T, *rt.Env)) func(*testing.T, *rt.Env) {
	return func(t *testing.T, env *rt.Env) {
		t.Helper()
		for _, c := range checks {
			c(t, env)
		}
	}
}

func TestReconcileTable(t *testing.T) {
	now := time.Now().Truncate(time.Second)
	var as *autoscaler.Autoscaler
	// quiet is Backlog.Quiet's channel: closed unless a case has a user's change on
	// its way.
	var quiet chan struct{}
	// The queue that a change's end wakes postponed PodAutoscalers into.
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[reconcile.Request]())
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); q.ShutDown() })
	build := func(env *rt.Env) reconcile.Reconciler {
		as = autoscaler.New(func(types.NamespacedName) {})
		quiet = make(chan struct{})
		close(quiet)
		afterChange := newAfterBurst()
		if err := afterChange.Start(ctx, q); err != nil {
			panic(err)
		}
		b := env.Base()
		b.Status = b.Status.NotFailures(av1alpha1.ReasonNoTraffic)
		b.Config = config.Default
		b.Clock = rt.Clock(func() time.Time { return now })
		return &Reconciler{Base: b, Autoscaler: as,
			Quiet: func() <-chan struct{} { return quiet }, afterChange: afterChange, pace: newPace(ScaleToZeroRate)}
	}
	changeOnItsWay := func(*testing.T, *rt.Env) { quiet = make(chan struct{}) }
	// load has the gateway report concurrency for the Revision every second of the
	// last stable window and the next few, so that the average is exactly that
	// whenever the decision falls.
	load := func(concurrency float64) func(*testing.T, *rt.Env) {
		return func(t *testing.T, env *rt.Env) {
			wall := time.Now()
			for s := -70; s <= 5; s++ {
				as.Report(stats.Report{Time: wall.Add(time.Duration(s) * time.Second), Period: time.Second,
					Stats: []stats.Stat{{Namespace: ns, Revision: "hello-00001", AverageConcurrency: concurrency, Requests: concurrency}}})
			}
		}
	}
	longAgo := now.Add(-time.Hour)
	hpaNotOwned := `There is an existing HorizontalPodAutoscaler "hello-00001" that we do not own.`
	hpaRefused := `failed to create HorizontalPodAutoscaler "hello-00001": horizontalpodautoscalers.autoscaling "hello-00001" is forbidden: denied by policy`
	rt.Run(t, []rt.Case{{
		Name: "the PodAutoscaler is gone: nothing is written",
		Key:  paKey,
	}, {
		Name: "the PodAutoscaler is being deleted: nothing is written",
		Key:  paKey,
		Objects: []client.Object{newPA(kpa, func(p *av1alpha1.PodAutoscaler) {
			p.DeletionTimestamp = &metav1.Time{Time: longAgo}
			p.Finalizers = []string{"test/keep"}
		}), deployment(1, 1)},
	}, {
		Name:       "the Deployment does not exist yet: DeploymentMissing",
		Key:        paKey,
		Objects:    []client.Object{newPA(kpa)},
		WantWrites: []string{"status PodAutoscaler ns/hello-00001"},
		Check: func(t *testing.T, env *rt.Env) {
			p := env.Written(rt.Status, "PodAutoscaler", "hello-00001").(*av1alpha1.PodAutoscaler)
			rt.CheckConditions(t, "PodAutoscaler", p.Status.Conditions, rt.Unknown(duck.ConditionReady, "", ""),
				rt.Unknown(av1alpha1.PodAutoscalerConditionActive, "", ""), sks,
				rt.Unknown(av1alpha1.PodAutoscalerConditionScaleTargetInitialized, av1alpha1.ReasonDeploymentMissing, `The scale target "hello-00001-deployment" does not exist yet.`))
		},
	}, {
		Name:       "KPA, new, no pod ready yet: Queued until the activation timeout, the scale left alone",
		Key:        paKey,
		Objects:    []client.Object{newPA(kpa), deployment(1, 0)},
		WantWrites: []string{"status PodAutoscaler ns/hello-00001"},
		WantResult: reconcile.Result{RequeueAfter: activation},
		Check:      wantStatus(1, 0, ready(queued), queued, initPending, sks),
	}, {
		// After a controller restart nothing is known of the load for a stable window:
		// the scale is left alone and, as in Knative, desiredScale keeps the last
		// decision reported rather than the replicas of the moment.
		Name:       "KPA, no decision yet: the scale left alone, desiredScale kept",
		Key:        paKey,
		Objects:    []client.Object{newPA(kpa, since(corev1.ConditionTrue, longAgo, 5, 3)), deployment(3, 3)},
		WantWrites: []string{},
		Check: all(scaledTo(3), func(t *testing.T, env *rt.Env) {
			var p av1alpha1.PodAutoscaler
			env.Get(t, paKey, &p)
			if p.Status.DesiredScale == nil || *p.Status.DesiredScale != 5 {
				t.Errorf("desiredScale %v, want the last decision, 5", p.Status.DesiredScale)
			}
		}),
	}, {
		// A reconcile whose status write was held back already scaled the Deployment:
		// nothing to write to it, but the status reports the decision, not the last
		// status (Knative reports the scaler's bounded value, written or not).
		Name:       "KPA, the Deployment already at the decided scale: desiredScale is the decision",
		Key:        paKey,
		Objects:    []client.Object{newPA(kpa, since(corev1.ConditionTrue, longAgo, 1, 1)), deployment(8, 1)},
		Before:     load(500),
		WantWrites: []string{"status PodAutoscaler ns/hello-00001"},
		Check:      all(wantStatus(8, 1, ready(active), active, initialized, sks), scaledTo(8)),
	}, {
		Name:       "KPA, new, its pod ready: Active and initialized",
		Key:        paKey,
		Objects:    []client.Object{newPA(kpa), deployment(1, 1)},
		WantWrites: []string{"status PodAutoscaler ns/hello-00001"},
		Check:      wantStatus(1, 1, ready(active), active, initialized, sks),
	}, {
		Name:       "KPA, load: scaled up through the scale subresource",
		Key:        paKey,
		Objects:    []client.Object{newPA(kpa, since(corev1.ConditionTrue, longAgo, 1, 1)), deployment(1, 1)},
		Before:     load(500),
		WantWrites: []string{"scale Deployment ns/hello-00001-deployment", "status PodAutoscaler ns/hello-00001"},
		Check: all(wantStatus(8, 1, ready(active), active, initialized, sks), scaledTo(8), func(t *testing.T, env *rt.Env) {
			if w := env.Writes()[0]; w.Verb != rt.Scale || w.Patch != `{"spec":{"replicas":8}}` {
				t.Errorf("first write %v with patch %s, want the scale patch before the status", w, w.Patch)
			}
		}),
	}, {
		Name:       "KPA, load capped by max-scale",
		Key:        paKey,
		Objects:    []client.Object{newPA(with(kpa, "autoscaling.knative.dev/max-scale", "3"), since(corev1.ConditionTrue, longAgo, 1, 1)), deployment(1, 1)},
		Before:     load(500),
		WantWrites: []string{"scale Deployment ns/hello-00001-deployment", "status PodAutoscaler ns/hello-00001"},
		Check:      all(wantStatus(3, 1, ready(active), active, initialized, sks), scaledTo(3)),
	}, {
		Name:       "KPA, idle for a stable window: scaled to zero, NoTraffic, no Warning Event",
		Key:        paKey,
		Objects:    []client.Object{newPA(kpa, since(corev1.ConditionTrue, longAgo, 1, 1)), deployment(1, 1)},
		Before:     load(0),
		WantWrites: []string{"scale Deployment ns/hello-00001-deployment", "status PodAutoscaler ns/hello-00001"},
		Check:      all(wantStatus(0, 1, ready(noTraffic), noTraffic, initialized, sks), scaledTo(0)),
	}, {
		Name:    "KPA, idle for a stable window while a user's change is on its way: kept as it is until the change is Ready",
		Key:     paKey,
		Objects: []client.Object{newPA(kpa, since(corev1.ConditionTrue, longAgo, 1, 1)), deployment(1, 1)},
		Before: func(t *testing.T, env *rt.Env) {
			load(0)(t, env)
			changeOnItsWay(t, env)
		},
		WantWrites: []string{},
		Check:      scaledTo(1),
	}, {
		Name:       "KPA, idle but Active for less than a stable window: kept, looked at again when it ends",
		Key:        paKey,
		Objects:    []client.Object{newPA(kpa, since(corev1.ConditionTrue, now.Add(-10*time.Second), 1, 1)), deployment(1, 1)},
		Before:     load(0),
		WantResult: reconcile.Result{RequeueAfter: 50 * time.Second},
	}, {
		Name:       "KPA, idle with min-scale: raised to it",
		Key:        paKey,
		Objects:    []client.Object{newPA(with(kpa, "autoscaling.knative.dev/min-scale", "2"), since(corev1.ConditionTrue, longAgo, 1, 1)), deployment(1, 1)},
		Before:     load(0),
		WantWrites: []string{"scale Deployment ns/hello-00001-deployment", "status PodAutoscaler ns/hello-00001"},
		Check:      all(wantStatus(2, 1, ready(active), active, initialized, sks), scaledTo(2)),
	}, {
		Name:       "KPA, load at zero: woken, Queued until the activation timeout",
		Key:        paKey,
		Objects:    []client.Object{newPA(kpa, since(corev1.ConditionFalse, longAgo, 0, 0)), deployment(0, 0)},
		Before:     load(500),
		WantWrites: []string{"scale Deployment ns/hello-00001-deployment", "status PodAutoscaler ns/hello-00001"},
		WantResult: reconcile.Result{RequeueAfter: activation},
		Check:      all(wantStatus(8, 0, ready(queued), queued, initialized, sks), scaledTo(8)),
	}, {
		Name:    "KPA, at zero with no load known: nothing is written",
		Key:     paKey,
		Objects: []client.Object{newPA(kpa, since(corev1.ConditionFalse, longAgo, 0, 0)), deployment(0, 0)},
	}, {
		Name:    "another autoscaler's class: nothing is written",
		Key:     paKey,
		Objects: []client.Object{newPA(map[string]string{av1alpha1.ClassAnnotationKey: "other.autoscaling.example.com"}), deployment(1, 0)},
	}, {
		Name:       "HPA: the HorizontalPodAutoscaler is created as Knative shapes it",
		Key:        paKey,
		Objects:    []client.Object{newPA(hpaClass), deployment(2, 0)},
		WantWrites: []string{"create HorizontalPodAutoscaler ns/hello-00001", "status PodAutoscaler ns/hello-00001"},
		// Knative's HPA class is always Active; not initialized until min-scale pods.
		Check: all(wantStatus(2, 0, ready(rt.Unknown(av1alpha1.PodAutoscalerConditionScaleTargetInitialized, "", "")), active,
			rt.Unknown(av1alpha1.PodAutoscalerConditionScaleTargetInitialized, "", ""), sks), func(t *testing.T, env *rt.Env) {
			h := env.Written(rt.Create, "HorizontalPodAutoscaler", "hello-00001").(*autoscalingv2.HorizontalPodAutoscaler)
			s := h.Spec
			if s.ScaleTargetRef.Kind != "Deployment" || s.ScaleTargetRef.Name != depName || *s.MinReplicas != 2 || s.MaxReplicas != 5 ||
				len(s.Metrics) != 1 || s.Metrics[0].Resource == nil || s.Metrics[0].Resource.Name != corev1.ResourceCPU ||
				*s.Metrics[0].Resource.Target.AverageUtilization != 75 || *s.Behavior.ScaleDown.StabilizationWindowSeconds != 20 {
				t.Errorf("HPA spec = %+v", s)
			}
			if !metav1.IsControlledBy(h, newPA(hpaClass)) {
				t.Errorf("HPA owners %+v", h.OwnerReferences)
			}
		}),
	}, {
		Name: "HPA: pods ready, the HPA's desired and current replicas reported",
		Key:  paKey,
		Objects: []client.Object{newPA(hpaClass), deployment(3, 3), func() client.Object {
			h := resources.MakeHPA(newPA(hpaClass), config.DefaultAutoscaler())
			h.Status.DesiredReplicas, h.Status.CurrentReplicas = 4, 3
			return h
		}()},
		WantWrites: []string{"status PodAutoscaler ns/hello-00001"},
		Check:      wantStatus(4, 3, ready(active), active, initialized, sks),
	}, {
		Name: "HPA: a drifted HorizontalPodAutoscaler is put back",
		Key:  paKey,
		Objects: []client.Object{newPA(hpaClass), deployment(3, 3), func() client.Object {
			h := resources.MakeHPA(newPA(hpaClass), config.DefaultAutoscaler())
			h.Spec.MaxReplicas = 50
			return h
		}()},
		WantWrites: []string{"update HorizontalPodAutoscaler ns/hello-00001", "status PodAutoscaler ns/hello-00001"},
		Check: func(t *testing.T, env *rt.Env) {
			if h := env.Written(rt.Update, "HorizontalPodAutoscaler", "hello-00001").(*autoscalingv2.HorizontalPodAutoscaler); h.Spec.MaxReplicas != 5 {
				t.Errorf("HPA maxReplicas %d", h.Spec.MaxReplicas)
			}
		},
	}, {
		Name: "HPA: its name is taken: NotOwned",
		Key:  paKey,
		Objects: []client.Object{newPA(hpaClass), deployment(2, 0), func() client.Object {
			h := resources.MakeHPA(newPA(hpaClass), config.DefaultAutoscaler())
			h.OwnerReferences = nil
			return h
		}()},
		WantWrites: []string{"status PodAutoscaler ns/hello-00001"},
		WantEvents: []string{"Warning NotOwned hello-00001: " + hpaNotOwned},
		Check: func(t *testing.T, env *rt.Env) {
			p := env.Written(rt.Status, "PodAutoscaler", "hello-00001").(*av1alpha1.PodAutoscaler)
			rt.CheckConditions(t, "PodAutoscaler", p.Status.Conditions, rt.False(duck.ConditionReady, duck.ReasonNotOwned, hpaNotOwned),
				rt.False(av1alpha1.PodAutoscalerConditionActive, duck.ReasonNotOwned, hpaNotOwned),
				rt.Unknown(av1alpha1.PodAutoscalerConditionScaleTargetInitialized, "", ""), sks)
		},
	}, {
		Name:    "HPA: a refused HorizontalPodAutoscaler: CreationFailed, retried after the back-off",
		Key:     paKey,
		Objects: []client.Object{newPA(hpaClass), deployment(2, 0)},
		Failures: []rt.Failure{{Verb: rt.Create, Kind: "HorizontalPodAutoscaler",
			Err: rt.Forbidden("horizontalpodautoscalers.autoscaling", "hello-00001", "denied by policy")}},
		WantWrites: []string{"status PodAutoscaler ns/hello-00001"},
		WantEvents: []string{"Warning CreationFailed hello-00001: " + hpaRefused},
		WantResult: reconcile.Result{RequeueAfter: refusal.DefaultInitial},
		Check: func(t *testing.T, env *rt.Env) {
			p := env.Written(rt.Status, "PodAutoscaler", "hello-00001").(*av1alpha1.PodAutoscaler)
			rt.CheckConditions(t, "PodAutoscaler", p.Status.Conditions, rt.False(duck.ConditionReady, duck.ReasonCreationFailed, hpaRefused),
				rt.False(av1alpha1.PodAutoscalerConditionActive, duck.ReasonCreationFailed, hpaRefused),
				rt.Unknown(av1alpha1.PodAutoscalerConditionScaleTargetInitialized, "", ""), sks)
		},
	}}, build)
}
