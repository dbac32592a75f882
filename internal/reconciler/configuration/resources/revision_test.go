package resources

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/kmeta"
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

// TestRevisionName: a name that fits is <config>-<generation> as before Ferry hashed
// (existing Revisions keep their names); a longer one is Knative's hashed name of 63.
func TestRevisionName(t *testing.T) {
	n := func(l int) string { return strings.Repeat("c", l) }
	long63 := "the-longest-name-knative-accepts-for-a-service-is-63-characters"
	for _, tc := range []struct {
		name, template string
		gen            int64
		want           string
	}{
		{name: "hello", gen: 1, want: "hello-00001"},
		{name: "hello", gen: 123456, want: "hello-123456"},
		{name: n(57), gen: 1, want: n(57) + "-00001"},
		{name: n(58), gen: 1, want: kmeta.ChildName(n(58), "-00001")},
		{name: long63, gen: 1, want: "the-longest-name-knative-0b3fa7fd5cddc016fb1060803dcc2532-00001"},
		{name: long63, gen: 2, want: kmeta.ChildName(long63, "-00002")},
		{name: n(58), template: n(58) + "-blue", gen: 1, want: n(58) + "-blue"},
	} {
		cfg := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Name: tc.name, Generation: tc.gen}}
		cfg.Spec.Template.ObjectMeta.Name = tc.template
		got := RevisionName(cfg)
		if got != tc.want {
			t.Errorf("RevisionName(%q, generation %d, template %q) = %q, want %q", tc.name, tc.gen, tc.template, got, tc.want)
		}
		if len(got) > 63 {
			t.Errorf("RevisionName(%q) = %q has %d characters", tc.name, got, len(got))
		}
		if rev := MakeRevision(context.Background(), cfg); rev.Labels[v1.ConfigurationLabelKey] != tc.name {
			t.Errorf("configuration label = %q, want the Configuration's name %q", rev.Labels[v1.ConfigurationLabelKey], tc.name)
		}
	}
}

// A Revision is pending until a Route reaches it, and active from its creation when a
// Route already follows its Configuration's latest Revision (Knative's routes
// annotation on the Configuration).
func TestMakeRevisionRoutingState(t *testing.T) {
	for _, tt := range []struct {
		name        string
		annotations map[string]string
		want        v1.RoutingState
		routes      string
	}{
		{name: "no Route follows it", want: v1.RoutingStatePending},
		{name: "a Route follows it", annotations: map[string]string{v1.RoutesAnnotationKey: "hello"}, want: v1.RoutingStateActive, routes: "hello"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "ns", Generation: 1, Annotations: tt.annotations}}
			cfg.Spec.Template.Spec.Containers = []corev1.Container{{Image: "img"}}
			rev := MakeRevision(context.Background(), cfg)
			if got := v1.RoutingState(rev.Labels[v1.RoutingStateLabelKey]); got != tt.want || rev.Annotations[v1.RoutesAnnotationKey] != tt.routes {
				t.Errorf("routingState %q, routes %q; want %q, %q", got, rev.Annotations[v1.RoutesAnnotationKey], tt.want, tt.routes)
			}
		})
	}
}

func TestIsLatestCreated(t *testing.T) {
	// at is the Configuration at generation gen, its template named name ("" for none)
	// with the given image.
	at := func(gen int64, name, image string) *v1.Configuration {
		c := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "ns", UID: "cfg-uid", Generation: gen}}
		c.Spec.Template.ObjectMeta.Name = name
		c.Spec.Template.Spec.Containers = []corev1.Container{{Image: image}}
		return c
	}
	stored := func(c *v1.Configuration) *v1.Revision { return MakeRevision(context.Background(), c) }
	stranger := stored(at(1, "hello-blue", "blue"))
	stranger.OwnerReferences[0].UID = "other-uid"
	relabeled := stored(at(1, "hello-blue", "blue"))
	relabeled.Labels["team"], relabeled.Annotations = "a", map[string]string{"note": "x"}
	tests := []struct {
		name string
		rev  *v1.Revision
		cfg  *v1.Configuration
		want bool
	}{
		{"of the current generation", stored(at(2, "", "blue")), at(2, "", "green"), true},
		{"named, an older generation of the same spec (a rollback)", stored(at(1, "hello-blue", "blue")), at(3, "hello-blue", "blue"), true},
		{"named, the same spec, labels and annotations added by a user", relabeled, at(3, "hello-blue", "blue"), true},
		{"named, an older generation of another spec", stored(at(1, "hello-blue", "blue")), at(3, "hello-blue", "green"), false},
		{"named, the same spec, another Configuration's", stranger, at(3, "hello-blue", "blue"), false},
		{"not named, an older generation of the same spec", stored(at(1, "", "blue")), at(3, "", "blue"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsLatestCreated(tc.rev, MakeRevision(context.Background(), tc.cfg), tc.cfg); got != tc.want {
				t.Errorf("IsLatestCreated = %v, want %v", got, tc.want)
			}
		})
	}
}
