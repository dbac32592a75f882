package configuration_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/configuration"
	"github.com/ferry-serving/ferry/internal/reconciler/configuration/resources"
	rt "github.com/ferry-serving/ferry/internal/reconciler/kit/reconcilertest"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
)

const ns = "ns"

var key = rt.Key(ns, "hello")

func ptr[T any](v T) *T { return &v }

// cfg is the Configuration reconciled, at generation gen, owned by the Service hello.
func cfg(gen int64, opts ...func(*v1.Configuration)) *v1.Configuration {
	c := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello", UID: "cfg-uid", Generation: gen,
		Labels: map[string]string{v1.ServiceLabelKey: "hello", v1.ServiceUIDLabelKey: "svc-uid", "team": "a"}}}
	c.Spec.Template.ObjectMeta.Labels = map[string]string{"app": "hello"}
	c.Spec.Template.ObjectMeta.Annotations = map[string]string{"note": "x", corev1.LastAppliedConfigAnnotation: "{}"}
	c.Spec.Template.Spec.Containers = []corev1.Container{{Image: "ferry.test/hello"}}
	for _, o := range opts {
		o(c)
	}
	return c
}

// withStatus gives the Configuration a status it wrote earlier.
func withStatus(latestCreated, latestReady string, ready duck.Condition) func(*v1.Configuration) {
	return func(c *v1.Configuration) {
		c.Status.ObservedGeneration = c.Generation
		c.Status.LatestCreatedRevisionName, c.Status.LatestReadyRevisionName = latestCreated, latestReady
		c.Status.Conditions = []duck.Condition{ready}
	}
}

// rev is the Configuration's Revision of generation gen with Ready of the given
// status (and message boom when False).
func rev(gen int64, ready corev1.ConditionStatus, opts ...func(*v1.Revision)) *v1.Revision {
	name := "hello-0000" + strconv.FormatInt(gen, 10)
	r := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("rev-uid-" + strconv.FormatInt(gen, 10)), Generation: 1,
		Labels: map[string]string{v1.ConfigurationLabelKey: "hello", v1.ConfigurationGenerationLabelKey: strconv.FormatInt(gen, 10)},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "serving.knative.dev/v1", Kind: "Configuration", Name: "hello", UID: "cfg-uid",
			Controller: ptr(true), BlockOwnerDeletion: ptr(true)}}}}
	r.Spec.Containers = []corev1.Container{{Image: "ferry.test/hello"}}
	r.Status.ObservedGeneration = 1
	c := duck.Condition{Type: duck.ConditionReady, Status: ready}
	if ready == corev1.ConditionFalse {
		c.Reason, c.Message = v1.ReasonContainerMissing, "boom"
	}
	r.Status.Conditions = []duck.Condition{c}
	for _, o := range opts {
		o(r)
	}
	return r
}

func notOwned(r *v1.Revision) { r.OwnerReferences = nil }

// wantStatus checks the written status: conditions, latest created and latest ready.
func wantStatus(latestCreated, latestReady string, conds ...duck.Condition) func(*testing.T, *rt.Env) {
	return func(t *testing.T, env *rt.Env) {
		t.Helper()
		o := env.Written(rt.Status, "Configuration", "hello")
		if o == nil {
			t.Fatal("no status written")
		}
		c := o.(*v1.Configuration)
		if c.Status.ObservedGeneration != c.Generation {
			t.Errorf("observedGeneration %d, generation %d", c.Status.ObservedGeneration, c.Generation)
		}
		if c.Status.LatestCreatedRevisionName != latestCreated || c.Status.LatestReadyRevisionName != latestReady {
			t.Errorf("latest created %q, latest ready %q; want %q, %q", c.Status.LatestCreatedRevisionName, c.Status.LatestReadyRevisionName, latestCreated, latestReady)
		}
		rt.CheckConditions(t, "Configuration", c.Status.Conditions, conds...)
	}
}

var (
	ready   = rt.True(duck.ConditionReady)
	onItWay = rt.Unknown(duck.ConditionReady, "", "")
)

func build(env *rt.Env) reconcile.Reconciler {
	return &configuration.Reconciler{Base: env.Base(), APIReader: env.Client}
}

func TestReconcileTable(t *testing.T) {
	refusedMsg := `revisions.serving.knative.dev "hello-00001" is forbidden: exceeded quota: count/revisions.serving.knative.dev=0`
	taken := `The revision name "hello-blue" is taken by a Revision that is not this Configuration's or whose spec is not its template's.`
	// blue is generation gen of a Configuration whose template names its Revision
	// hello-blue (image ferry.test/blue); green, generation 2, names it hello-green.
	blue := func(gen int64, opts ...func(*v1.Configuration)) *v1.Configuration {
		return cfg(gen, append([]func(*v1.Configuration){func(c *v1.Configuration) {
			c.Spec.Template.ObjectMeta.Name = "hello-blue"
			c.Spec.Template.Spec.Containers[0].Image = "ferry.test/blue"
		}}, opts...)...)
	}
	// made is the Revision the Configuration made of its template, as it stored it
	// (defaulted), at the Configuration's generation, in the given Ready state.
	made := func(c *v1.Configuration, ready corev1.ConditionStatus) *v1.Revision {
		r := resources.MakeRevision(context.Background(), c)
		r.UID, r.Generation = types.UID("rev-uid-"+r.Name), 1
		r.Status.ObservedGeneration = 1
		r.Status.Conditions = []duck.Condition{{Type: duck.ConditionReady, Status: ready}}
		return r
	}
	green := cfg(2, func(c *v1.Configuration) { c.Spec.Template.ObjectMeta.Name = "hello-green" })
	rt.Run(t, []rt.Case{{
		Name: "the Configuration is gone: nothing is written",
		Key:  key,
	}, {
		Name: "the Configuration is being deleted: nothing is written",
		Key:  key,
		Objects: []client.Object{cfg(1, func(c *v1.Configuration) {
			c.DeletionTimestamp = &metav1.Time{Time: time.Unix(1700000000, 0)}
			c.Finalizers = []string{"test/keep"}
		})},
	}, {
		Name:       "first reconcile creates the Revision of generation 1",
		Key:        key,
		Objects:    []client.Object{cfg(1)},
		WantWrites: []string{"create Revision ns/hello-00001", "status Configuration ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus("hello-00001", "", onItWay)(t, env)
			r := env.Written(rt.Create, "Revision", "hello-00001").(*v1.Revision)
			for k, want := range map[string]string{
				v1.ConfigurationLabelKey: "hello", v1.ConfigurationGenerationLabelKey: "1", v1.ConfigurationUIDLabelKey: "cfg-uid",
				v1.ServiceLabelKey: "hello", v1.ServiceUIDLabelKey: "svc-uid", "app": "hello",
				v1.RoutingStateLabelKey: "pending",
			} {
				if r.Labels[k] != want {
					t.Errorf("label %s = %q, want %q", k, r.Labels[k], want)
				}
			}
			if _, ok := r.Labels["team"]; ok || len(r.Labels) != 7 {
				t.Errorf("labels %v: the Configuration's own labels other than the Service's must not be copied", r.Labels)
			}
			if len(r.Annotations) != 1 || r.Annotations["note"] != "x" {
				t.Errorf("annotations %v, want the template's without last-applied", r.Annotations)
			}
			if !metav1.IsControlledBy(r, cfg(1)) || r.Spec.Containers[0].Name != "user-container" || *r.Spec.TimeoutSeconds != 300 ||
				r.Spec.Containers[0].Image != "ferry.test/hello" {
				t.Errorf("revision = %+v", r)
			}
		},
	}, {
		Name:       "the Revision is Ready: so is the Configuration",
		Key:        key,
		Objects:    []client.Object{cfg(1), rev(1, corev1.ConditionTrue)},
		WantWrites: []string{"status Configuration ns/hello"},
		Check:      wantStatus("hello-00001", "hello-00001", ready),
	}, {
		Name:    "nothing changed: nothing is written",
		Key:     key,
		Objects: []client.Object{cfg(1, withStatus("hello-00001", "hello-00001", ready)), rev(1, corev1.ConditionTrue)},
	}, {
		Name:       "a new generation gets its Revision; the older one keeps serving until it is Ready",
		Key:        key,
		Objects:    []client.Object{cfg(2, withStatus("hello-00001", "hello-00001", ready)), rev(1, corev1.ConditionTrue)},
		WantWrites: []string{"create Revision ns/hello-00002", "status Configuration ns/hello"},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus("hello-00002", "hello-00001", onItWay)(t, env)
			if g := env.Written(rt.Create, "Revision", "hello-00002").GetLabels()[v1.ConfigurationGenerationLabelKey]; g != "2" {
				t.Errorf("generation label %q", g)
			}
		},
	}, {
		Name:       "the new Revision is Ready: latest ready moves to it",
		Key:        key,
		Objects:    []client.Object{cfg(2, withStatus("hello-00002", "hello-00001", onItWay)), rev(1, corev1.ConditionTrue), rev(2, corev1.ConditionTrue)},
		WantWrites: []string{"status Configuration ns/hello"},
		Check:      wantStatus("hello-00002", "hello-00002", ready),
	}, {
		Name:       "the latest Revision failed: RevisionFailed with its message, a Warning Event, the older one keeps serving",
		Key:        key,
		Objects:    []client.Object{cfg(2, withStatus("hello-00002", "hello-00001", onItWay)), rev(1, corev1.ConditionTrue), rev(2, corev1.ConditionFalse)},
		WantWrites: []string{"status Configuration ns/hello"},
		WantEvents: []string{`Warning RevisionFailed hello: Revision "hello-00002" failed with message: boom.`},
		Check:      wantStatus("hello-00002", "hello-00001", rt.False(duck.ConditionReady, v1.ReasonRevisionFailed, `Revision "hello-00002" failed with message: boom.`)),
	}, {
		Name: "latest ready never moves back to an older Revision",
		Key:  key,
		Objects: []client.Object{cfg(2, withStatus("hello-00002", "hello-00002", ready)), rev(1, corev1.ConditionTrue),
			rev(2, corev1.ConditionUnknown)},
		WantWrites: []string{"status Configuration ns/hello"},
		Check:      wantStatus("hello-00002", "hello-00002", onItWay),
	}, {
		Name: "Revisions the Configuration does not control are not its latest ready",
		Key:  key,
		Objects: []client.Object{cfg(2, withStatus("hello-00002", "", onItWay)), rev(1, corev1.ConditionTrue, notOwned),
			rev(2, corev1.ConditionUnknown)},
	}, {
		Name: "the chosen Revision name is taken by another Configuration's Revision: RevisionNameTaken",
		Key:  key,
		Objects: []client.Object{cfg(2, withStatus("hello-00001", "hello-00001", ready), func(c *v1.Configuration) {
			c.Spec.Template.ObjectMeta.Name = "hello-blue"
		}), rev(1, corev1.ConditionTrue), rev(1, corev1.ConditionTrue, func(r *v1.Revision) {
			r.Name = "hello-blue"
			r.Labels[v1.ConfigurationLabelKey] = "other"
			r.OwnerReferences[0].Name, r.OwnerReferences[0].UID = "other", "other-uid"
		})},
		WantWrites: []string{"status Configuration ns/hello"},
		WantEvents: []string{"Warning RevisionNameTaken hello: " + taken},
		Check:      wantStatus("hello-00001", "hello-00001", rt.False(duck.ConditionReady, v1.ReasonRevisionNameTaken, taken)),
	}, {
		Name: "the chosen Revision name is held by an older generation with another spec: RevisionNameTaken",
		Key:  key,
		Objects: []client.Object{cfg(2, withStatus("hello-blue", "hello-blue", ready), func(c *v1.Configuration) {
			c.Spec.Template.ObjectMeta.Name = "hello-blue"
			c.Spec.Template.Spec.Containers[0].Image = "ferry.test/green"
		}), made(blue(1), corev1.ConditionTrue)},
		WantWrites: []string{"status Configuration ns/hello"},
		WantEvents: []string{"Warning RevisionNameTaken hello: " + taken},
		Check:      wantStatus("hello-blue", "hello-blue", rt.False(duck.ConditionReady, v1.ReasonRevisionNameTaken, taken)),
	}, {
		// Knative's CheckNameAvailability: same name, same spec, this Configuration's.
		Name: "rolled back to a named Revision's template: it is the latest created and ready again, its labels untouched",
		Key:  key,
		Objects: []client.Object{blue(3, withStatus("hello-green", "hello-green", ready), func(c *v1.Configuration) {
			// Labels and annotations are not compared.
			c.Spec.Template.ObjectMeta.Labels["app"] = "hello-again"
		}), made(blue(1), corev1.ConditionTrue), made(green, corev1.ConditionTrue)},
		WantWrites: []string{"status Configuration ns/hello"},
		Check:      wantStatus("hello-blue", "hello-blue", ready),
	}, {
		Name: "rolled back to a named Revision not Ready: the one serving keeps serving until it is",
		Key:  key,
		Objects: []client.Object{blue(3, withStatus("hello-green", "hello-green", ready)),
			made(blue(1), corev1.ConditionUnknown), made(green, corev1.ConditionTrue)},
		WantWrites: []string{"status Configuration ns/hello"},
		Check:      wantStatus("hello-blue", "hello-green", onItWay),
	}, {
		Name: "a named Revision of the same spec that another Configuration controls: RevisionNameTaken",
		Key:  key,
		Objects: []client.Object{blue(3, withStatus("hello-green", "hello-green", ready)), made(green, corev1.ConditionTrue),
			func() *v1.Revision {
				r := made(blue(1), corev1.ConditionTrue)
				r.OwnerReferences[0].UID = "other-uid"
				return r
			}()},
		WantWrites: []string{"status Configuration ns/hello"},
		WantEvents: []string{"Warning RevisionNameTaken hello: " + taken},
		Check:      wantStatus("hello-green", "hello-green", rt.False(duck.ConditionReady, v1.ReasonRevisionNameTaken, taken)),
	}, {
		Name: "a chosen Revision name without the Configuration's prefix: InvalidRevisionName",
		Key:  key,
		Objects: []client.Object{cfg(1, func(c *v1.Configuration) {
			c.Spec.Template.ObjectMeta.Name = "blue"
		})},
		WantWrites: []string{"status Configuration ns/hello"},
		WantEvents: []string{`Warning InvalidRevisionName hello: revision name "blue" must have the prefix "hello-"`},
		Check:      wantStatus("", "", rt.False(duck.ConditionReady, v1.ReasonInvalidRevisionName, `revision name "blue" must have the prefix "hello-"`)),
	}, {
		Name:    "a refused Revision: RevisionFailed with the API server's message, retried after the back-off",
		Key:     key,
		Objects: []client.Object{cfg(1)},
		Failures: []rt.Failure{{Verb: rt.Create, Kind: "Revision",
			Err: rt.Forbidden("revisions.serving.knative.dev", "hello-00001", "exceeded quota: count/revisions.serving.knative.dev=0")}},
		WantWrites: []string{"status Configuration ns/hello"},
		WantEvents: []string{"Warning RevisionFailed hello: Revision creation failed with message: " + refusedMsg + "."},
		WantResult: reconcile.Result{RequeueAfter: refusal.DefaultInitial},
		Check: func(t *testing.T, env *rt.Env) {
			wantStatus("", "", rt.False(duck.ConditionReady, v1.ReasonRevisionFailed, "Revision creation failed with message: "+refusedMsg+"."))(t, env)
			env.QuietWithinBackOff(t)
		},
	}, {
		Name:    "AlreadyExists that the API server cannot explain: an error, retried",
		Key:     key,
		Objects: []client.Object{cfg(1)},
		Failures: []rt.Failure{{Verb: rt.Create, Kind: "Revision",
			Err: apierrors.NewAlreadyExists(schema.GroupResource{Group: "serving.knative.dev", Resource: "revisions"}, "hello-00001")}},
		WantErr: `revisions.serving.knative.dev "hello-00001" not found`,
	}}, build)
}
