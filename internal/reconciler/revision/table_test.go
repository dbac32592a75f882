package revision_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	rt "github.com/ferry-serving/ferry/internal/reconciler/kit/reconcilertest"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
	"github.com/ferry-serving/ferry/internal/reconciler/revision"
	"github.com/ferry-serving/ferry/internal/reconciler/revision/resources"
)

const (
	ns       = "ns"
	depName  = "hello-00001-deployment"
	deadline = 120 * time.Second
)

var key = rt.Key(ns, "hello-00001")

func ptr[T any](v T) *T { return &v }

func rev(opts ...func(*v1.Revision)) *v1.Revision {
	r := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello-00001", UID: "rev-uid", Generation: 1,
		Labels:      map[string]string{v1.ConfigurationLabelKey: "hello", v1.ServiceLabelKey: "hello"},
		Annotations: map[string]string{"note": "x"}}}
	r.Spec.Containers = []corev1.Container{{Image: "ferry.test/hello"}}
	for _, o := range opts {
		o(r)
	}
	return r
}

// readyStatus is the status of a Revision that was Ready and Active.
func readyStatus(r *v1.Revision) {
	r.Status.ObservedGeneration = 1
	r.Status.Conditions = []duck.Condition{rt.True(duck.ConditionReady), rt.True(v1.RevisionConditionResourcesAvailable),
		rt.True(v1.RevisionConditionContainerHealthy), rt.True(v1.RevisionConditionActive)}
	// Active does not make the Revision Ready: it is informational.
	r.Status.Conditions[3].Severity = duck.ConditionSeverityInfo
}

func defaulted(r *v1.Revision) *v1.Revision {
	d := r.DeepCopy()
	d.SetDefaults(context.Background())
	return d
}

// deployment is the Deployment the Revision wants, with replicas ready of replicas,
// its status observed and Available as Kubernetes would say.
func deployment(replicas, ready int32, opts ...func(*appsv1.Deployment)) *appsv1.Deployment {
	d := resources.MakeDeployment(defaulted(rev()), int32(deadline/time.Second), 1)
	d.UID, d.Generation = "dep-uid", 1
	d.Spec.Replicas = ptr(replicas)
	d.Status.ObservedGeneration = 1
	d.Status.Replicas, d.Status.ReadyReplicas = replicas, ready
	available := corev1.ConditionFalse
	if ready >= replicas {
		available = corev1.ConditionTrue
	}
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: available}}
	for _, o := range opts {
		o(d)
	}
	return d
}

// pa is the PodAutoscaler the Revision wants, at scale desired with actual ready, Active
// as given.
func pa(desired, actual int32, active duck.Condition) *av1alpha1.PodAutoscaler {
	p := resources.MakePodAutoscaler(defaulted(rev()), config.DefaultAutoscaler())
	p.UID, p.Generation = "pa-uid", 1
	p.Status.ObservedGeneration = 1
	p.Status.DesiredScale, p.Status.ActualScale = ptr(desired), ptr(actual)
	p.Status.Conditions = []duck.Condition{active}
	return p
}

func notOwned(o client.Object) client.Object {
	o.SetOwnerReferences(nil)
	return o
}

// pod is a pod of the Revision in the given state.
func pod(name string, status corev1.PodStatus) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels: map[string]string{v1.RevisionLabelKey: "hello-00001"}}, Status: status}
}

func waiting(reason string) corev1.PodStatus {
	return corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "user-container", Image: "ferry.test/hello",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}}}
}

func wantStatus(desired, actual int32, conds ...duck.Condition) func(*testing.T, *rt.Env) {
	return func(t *testing.T, env *rt.Env) {
		t.Helper()
		o := env.Written(rt.Status, "Revision", "hello-00001")
		if o == nil {
			t.Fatal("no status written")
		}
		r := o.(*v1.Revision)
		if r.Status.ObservedGeneration != r.Generation {
			t.Errorf("observedGeneration %d, generation %d", r.Status.ObservedGeneration, r.Generation)
		}
		if r.Status.DesiredReplicas == nil || *r.Status.DesiredReplicas != desired || r.Status.ActualReplicas == nil || *r.Status.ActualReplicas != actual {
			t.Errorf("replicas desired %v, actual %v; want %d, %d", r.Status.DesiredReplicas, r.Status.ActualReplicas, desired, actual)
		}
		rt.CheckConditions(t, "Revision", r.Status.Conditions, conds...)
	}
}

var (
	ready     = rt.True(duck.ConditionReady)
	available = rt.True(v1.RevisionConditionResourcesAvailable)
	healthy   = rt.True(v1.RevisionConditionContainerHealthy)
	active    = rt.True(v1.RevisionConditionActive)
	deploying = rt.Unknown(v1.RevisionConditionResourcesAvailable, v1.ReasonDeploying, "")
	paActive  = rt.True(av1alpha1.PodAutoscalerConditionActive)
)

func build(env *rt.Env) reconcile.Reconciler {
	b := env.Base()
	b.Config = func() *config.Config {
		c := config.Default()
		c.Deployment.ProgressDeadline = deadline
		return c
	}
	return &revision.Reconciler{Base: b}
}

// withoutDrain makes a Deployment as Ferry made it before pods drained: no preStop,
// the API server's default grace period.
func withoutDrain(d *appsv1.Deployment) {
	resources.WithoutDrain(&d.Spec.Template.Spec)
	d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr(int64(corev1.DefaultTerminationGracePeriodSeconds))
}

func TestReconcileTable(t *testing.T) {
	notOwnedDep := `There is an existing Deployment "hello-00001-deployment" that we do not own.`
	refusedDep := `failed to create Deployment "hello-00001-deployment": deployments.apps "hello-00001-deployment" is forbidden: exceeded quota: count/deployments.apps=0`
	rt.Run(t, []rt.Case{{
		Name: "the Revision is gone: nothing is written",
		Key:  key,
	}, {
		Name: "the Revision is being deleted: nothing is written",
		Key:  key,
		Objects: []client.Object{rev(func(r *v1.Revision) {
			r.DeletionTimestamp = &metav1.Time{Time: time.Unix(1700000000, 0)}
			r.Finalizers = []string{"test/keep"}
		})},
	}, {
		Name:       "first reconcile creates the Deployment and the PodAutoscaler",
		Key:        key,
		Objects:    []client.Object{rev()},
		WantWrites: []string{"create Deployment ns/hello-00001-deployment", "create PodAutoscaler ns/hello-00001", "status Revision ns/hello-00001"},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus(1, 0, rt.Unknown(duck.ConditionReady, v1.ReasonDeploying, ""), deploying,
				rt.Unknown(v1.RevisionConditionContainerHealthy, "", ""), rt.Unknown(v1.RevisionConditionActive, v1.ReasonDeploying, ""))(t, env)
			d, want := env.Written(rt.Create, "Deployment", depName).(*appsv1.Deployment), deployment(1, 0)
			if !equality.Semantic.DeepEqual(d.Spec, want.Spec) || !equality.Semantic.DeepEqual(d.Labels, want.Labels) ||
				!metav1.IsControlledBy(d, rev()) || *d.Spec.ProgressDeadlineSeconds != 120 || *d.Spec.Replicas != 1 {
				t.Errorf("created Deployment\n got %+v\nwant %+v", d, want)
			}
			p, wantPA := env.Written(rt.Create, "PodAutoscaler", "hello-00001").(*av1alpha1.PodAutoscaler), pa(1, 0, paActive)
			if !equality.Semantic.DeepEqual(p.Spec, wantPA.Spec) || !equality.Semantic.DeepEqual(p.Annotations, wantPA.Annotations) ||
				!metav1.IsControlledBy(p, rev()) || p.Class() != av1alpha1.KPA || p.Spec.ScaleTargetRef.Name != depName {
				t.Errorf("created PodAutoscaler\n got %+v\nwant %+v", p, wantPA)
			}
		},
	}, {
		Name:       "the Deployment is available and the PodAutoscaler Active: Ready",
		Key:        key,
		Objects:    []client.Object{rev(), deployment(1, 1), pa(1, 1, paActive)},
		WantWrites: []string{"status Revision ns/hello-00001"},
		Check:      wantStatus(1, 1, ready, available, healthy, active),
	}, {
		Name:    "nothing changed: nothing is written",
		Key:     key,
		Objects: []client.Object{rev(readyStatus, func(r *v1.Revision) { r.Status.DesiredReplicas, r.Status.ActualReplicas = ptr(int32(1)), ptr(int32(1)) }), deployment(1, 1), pa(1, 1, paActive)},
	}, {
		Name:    "a Deployment an older Ferry made, without the drain: not rolled for it alone",
		Key:     key,
		Objects: []client.Object{rev(readyStatus, func(r *v1.Revision) { r.Status.DesiredReplicas, r.Status.ActualReplicas = ptr(int32(1)), ptr(int32(1)) }), deployment(1, 1, withoutDrain), pa(1, 1, paActive)},
	}, {
		Name: "a Deployment an older Ferry made, without K_REVISION and the like: not rolled for it alone",
		Key:  key,
		Objects: []client.Object{rev(readyStatus, func(r *v1.Revision) { r.Status.DesiredReplicas, r.Status.ActualReplicas = ptr(int32(1)), ptr(int32(1)) }),
			deployment(1, 1, func(d *appsv1.Deployment) { resources.WithoutKnativeEnv(&d.Spec.Template.Spec) }), pa(1, 1, paActive)},
	}, {
		Name: "a Deployment an older Ferry made, rolled for another change: it gets the drain too",
		Key:  key,
		Objects: []client.Object{rev(readyStatus, func(r *v1.Revision) {
			r.Annotations[v1.ProgressDeadlineAnnotationKey] = "300s"
			r.Status.DesiredReplicas, r.Status.ActualReplicas = ptr(int32(1)), ptr(int32(1))
		}), deployment(1, 1, withoutDrain, func(d *appsv1.Deployment) { resources.WithoutKnativeEnv(&d.Spec.Template.Spec) }), pa(1, 1, paActive)},
		WantWrites: []string{"update Deployment ns/hello-00001-deployment", "update PodAutoscaler ns/hello-00001"},
		Check: func(t *testing.T, env *rt.Env) {
			d := env.Written(rt.Update, "Deployment", depName).(*appsv1.Deployment)
			if !resources.Drains(&d.Spec.Template.Spec) || d.Spec.Template.Spec.TerminationGracePeriodSeconds == nil {
				t.Errorf("updated Deployment's pods: lifecycle %+v, grace %v; want the drain", d.Spec.Template.Spec.Containers[0].Lifecycle, d.Spec.Template.Spec.TerminationGracePeriodSeconds)
			}
			if !resources.HasKnativeEnv(&d.Spec.Template.Spec) {
				t.Errorf("updated Deployment's env %v: want K_REVISION and the like", d.Spec.Template.Spec.Containers[0].Env)
			}
		},
	}, {
		Name: "a new progress deadline: the Deployment is updated, its replicas left to the autoscaler",
		Key:  key,
		Objects: []client.Object{rev(readyStatus, func(r *v1.Revision) {
			r.Annotations[v1.ProgressDeadlineAnnotationKey] = "300s"
			r.Status.DesiredReplicas, r.Status.ActualReplicas = ptr(int32(3)), ptr(int32(3))
		}), deployment(3, 3), pa(3, 3, paActive)},
		WantWrites: []string{"update Deployment ns/hello-00001-deployment", "update PodAutoscaler ns/hello-00001"},
		Check: func(t *testing.T, env *rt.Env) {
			d := env.Written(rt.Update, "Deployment", depName).(*appsv1.Deployment)
			if *d.Spec.ProgressDeadlineSeconds != 300 || *d.Spec.Replicas != 3 || d.Spec.Template.Annotations[v1.ProgressDeadlineAnnotationKey] != "300s" {
				t.Errorf("updated Deployment: deadline %d, replicas %d, template annotations %v", *d.Spec.ProgressDeadlineSeconds, *d.Spec.Replicas, d.Spec.Template.Annotations)
			}
			p := env.Written(rt.Update, "PodAutoscaler", "hello-00001").(*av1alpha1.PodAutoscaler)
			if p.Annotations[v1.ProgressDeadlineAnnotationKey] != "300s" {
				t.Errorf("updated PodAutoscaler annotations %v", p.Annotations)
			}
		},
	}, {
		Name:       "the Deployment's name is taken: NotOwned, the PodAutoscaler still created",
		Key:        key,
		Objects:    []client.Object{rev(), notOwned(deployment(1, 1))},
		WantWrites: []string{"create PodAutoscaler ns/hello-00001", "status Revision ns/hello-00001"},
		WantEvents: []string{"Warning NotOwned hello-00001: " + notOwnedDep},
		Check: func(t *testing.T, env *rt.Env) {
			o := env.Written(rt.Status, "Revision", "hello-00001").(*v1.Revision)
			rt.CheckConditions(t, "Revision", o.Status.Conditions, rt.False(duck.ConditionReady, duck.ReasonNotOwned, notOwnedDep),
				rt.False(v1.RevisionConditionResourcesAvailable, duck.ReasonNotOwned, notOwnedDep), rt.Unknown(v1.RevisionConditionContainerHealthy, "", ""))
		},
	}, {
		Name:       "the PodAutoscaler's name is taken: NotOwned",
		Key:        key,
		Objects:    []client.Object{rev(), deployment(1, 1), notOwned(pa(1, 1, paActive))},
		WantWrites: []string{"status Revision ns/hello-00001"},
		WantEvents: []string{`Warning NotOwned hello-00001: There is an existing PodAutoscaler "hello-00001" that we do not own.`},
		Check: func(t *testing.T, env *rt.Env) {
			o := env.Written(rt.Status, "Revision", "hello-00001").(*v1.Revision)
			msg := `There is an existing PodAutoscaler "hello-00001" that we do not own.`
			rt.CheckConditions(t, "Revision", o.Status.Conditions, rt.False(duck.ConditionReady, duck.ReasonNotOwned, msg),
				rt.False(v1.RevisionConditionResourcesAvailable, duck.ReasonNotOwned, msg), rt.Unknown(v1.RevisionConditionContainerHealthy, "", ""))
		},
	}, {
		Name:    "a refused Deployment: CreationFailed, one Warning Event, retried after the back-off",
		Key:     key,
		Objects: []client.Object{rev()},
		Failures: []rt.Failure{{Verb: rt.Create, Kind: "Deployment",
			Err: rt.Forbidden("deployments.apps", depName, "exceeded quota: count/deployments.apps=0")}},
		WantWrites: []string{"create PodAutoscaler ns/hello-00001", "status Revision ns/hello-00001"},
		WantEvents: []string{"Warning CreationFailed hello-00001: " + refusedDep},
		WantResult: reconcile.Result{RequeueAfter: refusal.DefaultInitial},
		Check: func(t *testing.T, env *rt.Env) {
			o := env.Written(rt.Status, "Revision", "hello-00001").(*v1.Revision)
			rt.CheckConditions(t, "Revision", o.Status.Conditions, rt.False(duck.ConditionReady, duck.ReasonCreationFailed, refusedDep),
				rt.False(v1.RevisionConditionResourcesAvailable, duck.ReasonCreationFailed, refusedDep), rt.Unknown(v1.RevisionConditionContainerHealthy, "", ""))
			env.QuietWithinBackOff(t)
		},
	}, {
		Name: "the Deployment exceeded its progress deadline: ProgressDeadlineExceeded",
		Key:  key,
		Objects: []client.Object{rev(), deployment(1, 0, func(d *appsv1.Deployment) {
			d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing,
				Status: corev1.ConditionFalse, Reason: v1.ReasonProgressDeadlineExceeded})
		}), pa(1, 0, rt.Unknown(av1alpha1.PodAutoscalerConditionActive, av1alpha1.ReasonQueued, av1alpha1.MessageQueued))},
		WantWrites: []string{"status Revision ns/hello-00001"},
		WantEvents: []string{"Warning ProgressDeadlineExceeded hello-00001: Unable to create pods for more than 120 seconds."},
		Check: wantStatus(1, 0, rt.False(duck.ConditionReady, v1.ReasonProgressDeadlineExceeded, "Unable to create pods for more than 120 seconds."),
			rt.False(v1.RevisionConditionResourcesAvailable, v1.ReasonProgressDeadlineExceeded, "Unable to create pods for more than 120 seconds."),
			rt.Unknown(v1.RevisionConditionContainerHealthy, "", ""),
			rt.Unknown(v1.RevisionConditionActive, av1alpha1.ReasonQueued, av1alpha1.MessageQueued)),
	}, {
		Name: "the ReplicaSet cannot create pods (a quota on pods): its reason and message at once",
		Key:  key,
		Objects: []client.Object{rev(), deployment(1, 0, func(d *appsv1.Deployment) {
			d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure,
				Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: `pods "x" is forbidden: exceeded quota: nothing`})
		}), pa(1, 0, rt.Unknown(av1alpha1.PodAutoscalerConditionActive, av1alpha1.ReasonQueued, av1alpha1.MessageQueued))},
		WantWrites: []string{"status Revision ns/hello-00001"},
		WantEvents: []string{`Warning FailedCreate hello-00001: pods "x" is forbidden: exceeded quota: nothing`},
		Check: wantStatus(1, 0, rt.False(duck.ConditionReady, "FailedCreate", `pods "x" is forbidden: exceeded quota: nothing`),
			rt.False(v1.RevisionConditionResourcesAvailable, "FailedCreate", `pods "x" is forbidden: exceeded quota: nothing`),
			rt.Unknown(v1.RevisionConditionContainerHealthy, "", ""),
			rt.Unknown(v1.RevisionConditionActive, av1alpha1.ReasonQueued, av1alpha1.MessageQueued)),
	}, {
		Name: "a pod cannot pull its image: ContainerMissing",
		Key:  key,
		Objects: []client.Object{rev(), deployment(1, 0), pa(1, 0, rt.Unknown(av1alpha1.PodAutoscalerConditionActive, av1alpha1.ReasonQueued, av1alpha1.MessageQueued)),
			pod("p1", corev1.PodStatus{}), pod("p2", waiting("ImagePullBackOff"))},
		WantWrites: []string{"status Revision ns/hello-00001"},
		WantEvents: []string{`Warning ContainerMissing hello-00001: Unable to fetch image "ferry.test/hello": the kubelet cannot pull it.`},
		Check: wantStatus(1, 0, rt.False(duck.ConditionReady, v1.ReasonContainerMissing, `Unable to fetch image "ferry.test/hello": the kubelet cannot pull it.`),
			deploying,
			rt.False(v1.RevisionConditionContainerHealthy, v1.ReasonContainerMissing, `Unable to fetch image "ferry.test/hello": the kubelet cannot pull it.`),
			rt.Unknown(v1.RevisionConditionActive, av1alpha1.ReasonQueued, av1alpha1.MessageQueued)),
	}, {
		Name: "a container exits: ExitCode with its message",
		Key:  key,
		Objects: []client.Object{rev(), deployment(1, 0), pa(1, 0, rt.Unknown(av1alpha1.PodAutoscalerConditionActive, av1alpha1.ReasonQueued, av1alpha1.MessageQueued)),
			pod("p1", corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "user-container",
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "boom"}}}}})},
		WantWrites: []string{"status Revision ns/hello-00001"},
		WantEvents: []string{"Warning ExitCode1 hello-00001: Container failed with: boom"},
		Check: wantStatus(1, 0, rt.False(duck.ConditionReady, v1.ExitCodeReason(1), "Container failed with: boom"), deploying,
			rt.False(v1.RevisionConditionContainerHealthy, v1.ExitCodeReason(1), "Container failed with: boom"),
			rt.Unknown(v1.RevisionConditionActive, av1alpha1.ReasonQueued, av1alpha1.MessageQueued)),
	}, {
		Name: "a pod cannot be scheduled: its reason on ResourcesAvailable",
		Key:  key,
		Objects: []client.Object{rev(), deployment(1, 0), pa(1, 0, rt.Unknown(av1alpha1.PodAutoscalerConditionActive, av1alpha1.ReasonQueued, av1alpha1.MessageQueued)),
			pod("p1", corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
				Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient cpu."}}})},
		WantWrites: []string{"status Revision ns/hello-00001"},
		WantEvents: []string{"Warning Unschedulable hello-00001: 0/1 nodes are available: 1 Insufficient cpu."},
		Check: wantStatus(1, 0, rt.False(duck.ConditionReady, "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu."),
			rt.False(v1.RevisionConditionResourcesAvailable, "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu."),
			rt.Unknown(v1.RevisionConditionContainerHealthy, "", ""),
			rt.Unknown(v1.RevisionConditionActive, av1alpha1.ReasonQueued, av1alpha1.MessageQueued)),
	}, {
		Name: "pods of other Revisions do not count",
		Key:  key,
		Objects: []client.Object{rev(), deployment(1, 0), pa(1, 0, rt.Unknown(av1alpha1.PodAutoscalerConditionActive, av1alpha1.ReasonQueued, av1alpha1.MessageQueued)),
			func() client.Object {
				p := pod("other", waiting("ErrImagePull"))
				p.Labels[v1.RevisionLabelKey] = "other-00001"
				return p
			}()},
		WantWrites: []string{"status Revision ns/hello-00001"},
		Check: wantStatus(1, 0, rt.Unknown(duck.ConditionReady, v1.ReasonDeploying, ""), deploying, rt.Unknown(v1.RevisionConditionContainerHealthy, "", ""),
			rt.Unknown(v1.RevisionConditionActive, av1alpha1.ReasonQueued, av1alpha1.MessageQueued)),
	}, {
		Name: "scaled to zero: Active False NoTraffic, still Ready, no Event",
		Key:  key,
		Objects: []client.Object{rev(readyStatus), deployment(0, 0),
			pa(0, 0, rt.False(av1alpha1.PodAutoscalerConditionActive, av1alpha1.ReasonNoTraffic, av1alpha1.MessageNoTraffic))},
		WantWrites: []string{"status Revision ns/hello-00001"},
		Check: wantStatus(0, 0, ready, available, healthy,
			rt.False(v1.RevisionConditionActive, av1alpha1.ReasonNoTraffic, av1alpha1.MessageNoTraffic)),
	}, {
		Name: "the autoscaler scales up: a Deployment generation not yet observed leaves ResourcesAvailable",
		Key:  key,
		Objects: []client.Object{rev(readyStatus), deployment(3, 1, func(d *appsv1.Deployment) { d.Generation = 2 }),
			pa(3, 1, paActive)},
		WantWrites: []string{"status Revision ns/hello-00001"},
		Check:      wantStatus(3, 1, ready, available, healthy, active),
	}}, build)
}

// TestLogURL: status.logUrl follows config-observability's
// logging.revision-url-template, and goes when the template does.
func TestLogURL(t *testing.T) {
	replicas := func(r *v1.Revision) { r.Status.DesiredReplicas, r.Status.ActualReplicas = ptr(int32(1)), ptr(int32(1)) }
	logURL := func(want string) func(*testing.T, *rt.Env) {
		return func(t *testing.T, env *rt.Env) {
			if r := env.Written(rt.Status, "Revision", "hello-00001").(*v1.Revision); r.Status.LogURL != want {
				t.Errorf("logUrl %q, want %q", r.Status.LogURL, want)
			}
		}
	}
	for _, tc := range []struct {
		template string
		cases    []rt.Case
	}{{
		template: "http://logs.example.com/?uid=${REVISION_UID}&again=${REVISION_UID}",
		cases: []rt.Case{{
			Name:       "the template names the Revision's UID",
			Key:        key,
			Objects:    []client.Object{rev(readyStatus, replicas), deployment(1, 1), pa(1, 1, paActive)},
			WantWrites: []string{"status Revision ns/hello-00001"},
			Check:      logURL("http://logs.example.com/?uid=rev-uid&again=rev-uid"),
		}},
	}, {
		template: "",
		cases: []rt.Case{{
			Name: "no template: the logUrl goes",
			Key:  key,
			Objects: []client.Object{rev(readyStatus, replicas, func(r *v1.Revision) { r.Status.LogURL = "http://old/" }),
				deployment(1, 1), pa(1, 1, paActive)},
			WantWrites: []string{"status Revision ns/hello-00001"},
			Check:      logURL(""),
		}},
	}} {
		rt.Run(t, tc.cases, func(env *rt.Env) reconcile.Reconciler {
			r := build(env).(*revision.Reconciler)
			inner := r.Config
			r.Config = func() *config.Config {
				c := *inner()
				o := *c.Observability
				o.RevisionURLTemplate = tc.template
				c.Observability = &o
				return &c
			}
			return r
		})
	}
}
