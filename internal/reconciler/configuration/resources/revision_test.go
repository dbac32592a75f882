package resources

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

func TestMakeRevision(t *testing.T) {
	cfg := &v1.Configuration{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "ns", UID: "cfg-uid", Generation: 7,
			Labels: map[string]string{v1.ServiceLabelKey: "hello", v1.ServiceUIDLabelKey: "svc-uid", "team": "a"}},
		Spec: v1.ConfigurationSpec{Template: v1.RevisionTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"},
				Annotations: map[string]string{"a": "b", corev1.LastAppliedConfigAnnotation: "{}"}},
			Spec: v1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: "img"}}}},
		}},
	}
	rev := MakeRevision(context.Background(), cfg)
	if rev.Name != "hello-00007" || rev.Namespace != "ns" || !metav1.IsControlledBy(rev, cfg) {
		t.Errorf("metadata = %+v", rev.ObjectMeta)
	}
	want := map[string]string{
		"app": "x", v1.ConfigurationLabelKey: "hello", v1.ConfigurationGenerationLabelKey: "7",
		v1.ConfigurationUIDLabelKey: "cfg-uid", v1.ServiceLabelKey: "hello", v1.ServiceUIDLabelKey: "svc-uid",
	}
	for k, v := range want {
		if rev.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, rev.Labels[k], v)
		}
	}
	if _, ok := rev.Labels["team"]; ok {
		t.Error("Configuration labels other than the Service's must not reach the Revision")
	}
	if rev.Annotations["a"] != "b" || rev.Annotations[corev1.LastAppliedConfigAnnotation] != "" {
		t.Errorf("annotations = %v", rev.Annotations)
	}
	if rev.Spec.Containers[0].Name != v1.DefaultUserContainerName || *rev.Spec.TimeoutSeconds != 300 {
		t.Errorf("spec not defaulted: %+v", rev.Spec)
	}
	if cfg.Spec.Template.Spec.TimeoutSeconds != nil {
		t.Error("MakeRevision wrote defaults into the Configuration")
	}
	if Generation(rev) != 7 {
		t.Errorf("Generation = %d", Generation(rev))
	}

	cfg.Spec.Template.ObjectMeta.Name = "hello-blue"
	if RevisionName(cfg) != "hello-blue" || CheckRevisionName(cfg) != nil {
		t.Error("BYO name")
	}
	cfg.Spec.Template.ObjectMeta.Name = "blue"
	if CheckRevisionName(cfg) == nil {
		t.Error("a BYO name without the Configuration's prefix must be refused")
	}
}
