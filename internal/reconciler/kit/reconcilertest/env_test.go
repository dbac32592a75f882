package reconcilertest

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/index"
)

func TestEnv(t *testing.T) {
	ctx := context.Background()
	rev := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "r-00001", Generation: 1,
		Labels: map[string]string{v1.ConfigurationLabelKey: "r"}}}
	rev.Status.ObservedGeneration = 1
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d", Generation: 1}}
	env := New(t, []client.Object{rev, dep}, Failure{Verb: Create, Kind: "Configuration", Name: "no", Err: Forbidden("configurations.serving.knative.dev", "no", "quota"), Times: 1})

	// Seeded status is kept; the index answers.
	list := &v1.RevisionList{}
	Must(t, env.Client.List(ctx, list, client.InNamespace("ns"), client.MatchingFields{index.RevisionsByConfiguration: "r"}))
	if len(list.Items) != 1 || list.Items[0].Status.ObservedGeneration != 1 {
		t.Fatalf("listed %+v", list.Items)
	}

	// A refused create, once; then it goes through as generation 1 with a UID.
	cfg := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "no"}}
	if err := env.Client.Create(ctx, cfg.DeepCopy()); !apierrors.IsForbidden(err) || err.Error() != `configurations.serving.knative.dev "no" is forbidden: quota` {
		t.Fatalf("create: %v", err)
	}
	Must(t, env.Client.Create(ctx, cfg))
	if cfg.Generation != 1 || cfg.UID == "" {
		t.Errorf("created %+v", cfg.ObjectMeta)
	}
	// An update of the spec raises the generation, of the metadata does not.
	cfg.Labels = map[string]string{"a": "b"}
	Must(t, env.Client.Update(ctx, cfg))
	cfg.Spec.Template.ObjectMeta.Name = "no-x"
	Must(t, env.Client.Update(ctx, cfg))
	if cfg.Generation != 2 {
		t.Errorf("generation %d after a label and a spec update, want 2", cfg.Generation)
	}

	// Status and scale writes.
	Must(t, env.Client.Status().Patch(ctx, rev, client.RawPatch(types.MergePatchType, []byte(`{"status":{"observedGeneration":7}}`))))
	Must(t, env.Client.SubResource("scale").Patch(ctx, dep, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`)),
		&client.SubResourcePatchOptions{SubResourceBody: &autoscalingv1.Scale{}}))
	got := &appsv1.Deployment{}
	env.Get(t, Key("ns", "d"), got)
	if *got.Spec.Replicas != 3 || got.Generation != 2 {
		t.Errorf("after scale: replicas %d, generation %d", *got.Spec.Replicas, got.Generation)
	}
	Must(t, env.Client.Delete(ctx, cfg))

	want := []string{"create Configuration ns/no", "delete Configuration ns/no", "scale Deployment ns/d", "status Revision ns/r-00001",
		"update Configuration ns/no", "update Configuration ns/no"}
	if got := env.WriteList(); len(got) != len(want) {
		t.Fatalf("writes %v, want %v", got, want)
	} else {
		for i := range want {
			if got[i] != want[i] {
				t.Errorf("writes %v, want %v", got, want)
				break
			}
		}
	}
	if s := env.Written(Status, "Revision", "r-00001").(*v1.Revision); s.Status.ObservedGeneration != 7 {
		t.Errorf("status write recorded %+v", s.Status)
	}
}
