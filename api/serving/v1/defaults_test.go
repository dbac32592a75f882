package v1

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-serving/ferry/api/defaulting"
)

// withDefaults is a context whose config-defaults are Knative's changed by change.
func withDefaults(change func(*defaulting.Defaults)) context.Context {
	d := defaulting.DefaultDefaults()
	change(d)
	return defaulting.ToContext(context.Background(), &defaulting.Config{Defaults: d, Features: defaulting.DefaultFeatures()})
}

// TestRevisionSpecDefaults pins Knative's RevisionSpec.SetDefaults
// (pkg/apis/serving/v1/revision_defaults.go and its test table) where Ferry's two
// defaulting paths used to disagree: the reconcilers' had its own constants, named
// extra containers by their index and left a timeout of 0 alone.
func TestRevisionSpecDefaults(t *testing.T) {
	tcp := &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}, SuccessThreshold: 1}
	tests := []struct {
		name string
		ctx  context.Context
		in   RevisionSpec
		want RevisionSpec
	}{{
		name: "no configuration in the context: Knative's defaults",
		ctx:  context.Background(),
		in:   RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{}}}},
		want: RevisionSpec{TimeoutSeconds: ptr(int64(300)), ContainerConcurrency: ptr(int64(0)), PodSpec: corev1.PodSpec{
			EnableServiceLinks: ptr(false),
			Containers:         []corev1.Container{{Name: "user-container", ReadinessProbe: tcp}},
		}},
	}, {
		name: "config-defaults from the context",
		ctx: withDefaults(func(d *defaulting.Defaults) {
			d.RevisionTimeoutSeconds, d.ContainerConcurrency, d.UserContainerNameTemplate = 120, 10, "main"
		}),
		in: RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{}}}},
		want: RevisionSpec{TimeoutSeconds: ptr(int64(120)), ContainerConcurrency: ptr(int64(10)), PodSpec: corev1.PodSpec{
			EnableServiceLinks: ptr(false),
			Containers:         []corev1.Container{{Name: "main", ReadinessProbe: tcp}},
		}},
	}, {
		name: "a timeout of 0 is defaulted",
		// revision-response-start-timeout-seconds follows the timeout when not given.
		ctx: withDefaults(func(d *defaulting.Defaults) {
			d.RevisionTimeoutSeconds, d.RevisionResponseStartTimeoutSeconds = 456, 456
		}),
		in:   RevisionSpec{TimeoutSeconds: ptr(int64(0)), ContainerConcurrency: ptr(int64(1)), PodSpec: corev1.PodSpec{EnableServiceLinks: ptr(true)}},
		want: RevisionSpec{TimeoutSeconds: ptr(int64(456)), ContainerConcurrency: ptr(int64(1)), PodSpec: corev1.PodSpec{EnableServiceLinks: ptr(true)}},
	}, {
		name: "idle and response-start timeouts only below the timeout",
		ctx: withDefaults(func(d *defaulting.Defaults) {
			d.RevisionIdleTimeoutSeconds, d.RevisionResponseStartTimeoutSeconds = 100, 300
		}),
		in:   RevisionSpec{ContainerConcurrency: ptr(int64(1)), PodSpec: corev1.PodSpec{EnableServiceLinks: ptr(true)}},
		want: RevisionSpec{TimeoutSeconds: ptr(int64(300)), IdleTimeoutSeconds: ptr(int64(100)), ContainerConcurrency: ptr(int64(1)), PodSpec: corev1.PodSpec{EnableServiceLinks: ptr(true)}},
	}, {
		name: "enable-service-links unset in config-defaults leaves it unset",
		ctx:  withDefaults(func(d *defaulting.Defaults) { d.EnableServiceLinks = nil }),
		in:   RevisionSpec{TimeoutSeconds: ptr(int64(1)), ContainerConcurrency: ptr(int64(1))},
		want: RevisionSpec{TimeoutSeconds: ptr(int64(1)), ContainerConcurrency: ptr(int64(1))},
	}, {
		// Knative's "multiple containers with some names empty": the suffixes count
		// on past the names users took, in order, whatever the index.
		name: "several containers, some named",
		ctx:  context.Background(),
		in: RevisionSpec{TimeoutSeconds: ptr(int64(1)), ContainerConcurrency: ptr(int64(1)), PodSpec: corev1.PodSpec{
			EnableServiceLinks: ptr(true),
			Containers: []corev1.Container{
				{}, {Name: "user-container-0", Ports: []corev1.ContainerPort{{ContainerPort: 8888}}}, {Name: "user-container-3"},
				{}, {Name: "user-container-5"}, {}, {}, {Name: "user-container-4"},
			},
			InitContainers: []corev1.Container{{}, {Name: "init-container-0"}},
		}},
		want: RevisionSpec{TimeoutSeconds: ptr(int64(1)), ContainerConcurrency: ptr(int64(1)), PodSpec: corev1.PodSpec{
			EnableServiceLinks: ptr(true),
			Containers: []corev1.Container{
				{Name: "user-container-1"}, {Name: "user-container-0", Ports: []corev1.ContainerPort{{ContainerPort: 8888}}, ReadinessProbe: tcp},
				{Name: "user-container-3"}, {Name: "user-container-2"}, {Name: "user-container-5"}, {Name: "user-container-6"},
				{Name: "user-container-7"}, {Name: "user-container-4"},
			},
			InitContainers: []corev1.Container{{Name: "init-container-1"}, {Name: "init-container-0"}},
		}},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := *tc.in.DeepCopy()
			got.SetDefaults(tc.ctx)
			if !equality.Semantic.DeepEqual(got, tc.want) {
				t.Errorf("SetDefaults:\n got %+v\nwant %+v", got, tc.want)
			}
			again := *got.DeepCopy()
			again.SetDefaults(tc.ctx)
			if !equality.Semantic.DeepEqual(again, got) {
				t.Errorf("not idempotent:\n got %+v\nthen %+v", got, again)
			}
		})
	}
}

// TestTrafficDefaults pins Knative's TrafficTarget.SetDefaults
// (pkg/apis/serving/v1/route_defaults.go, "implied zero percent"): a missing percent is
// 0, which the reconcilers' defaulting used to leave nil.
func TestTrafficDefaults(t *testing.T) {
	rt := &Route{Spec: RouteSpec{Traffic: []TrafficTarget{{RevisionName: "r-1", Percent: ptr(int64(100))}, {Tag: "latest"}}}}
	rt.SetDefaults(context.Background())
	want := []TrafficTarget{
		{RevisionName: "r-1", Percent: ptr(int64(100)), LatestRevision: ptr(false)},
		{Tag: "latest", Percent: ptr(int64(0)), LatestRevision: ptr(true)},
	}
	if !equality.Semantic.DeepEqual(rt.Spec.Traffic, want) {
		t.Errorf("Route traffic = %+v", rt.Spec.Traffic)
	}

	empty := &Route{}
	empty.SetDefaults(context.Background())
	if empty.Spec.Traffic != nil {
		t.Errorf("a Route's empty traffic was defaulted: %+v", empty.Spec.Traffic)
	}
	svc := &Service{}
	svc.SetDefaults(context.Background())
	if !equality.Semantic.DeepEqual(svc.Spec.Traffic, []TrafficTarget{{Percent: ptr(int64(100)), LatestRevision: ptr(true)}}) {
		t.Errorf("Service traffic = %+v", svc.Spec.Traffic)
	}
}

// TestDefaultsWithinUpdate: an update defaults no Revision, no template that keeps its
// user-chosen name, and no enableServiceLinks, as Knative's webhook on an update.
func TestDefaultsWithinUpdate(t *testing.T) {
	rev := &Revision{}
	rev.SetDefaults(WithinUpdate(context.Background(), rev.DeepCopy()))
	if rev.Spec.TimeoutSeconds != nil {
		t.Error("a Revision was defaulted in an update")
	}

	old := &Configuration{Spec: ConfigurationSpec{Template: RevisionTemplateSpec{ObjectMeta: metav1.ObjectMeta{Name: "c-v1"}}}}
	cfg := old.DeepCopy()
	cfg.SetDefaults(WithinUpdate(context.Background(), old))
	if cfg.Spec.Template.Spec.TimeoutSeconds != nil {
		t.Error("a template that keeps its name was defaulted")
	}

	cfg.Spec.Template.ObjectMeta.Name = "c-v2"
	cfg.SetDefaults(WithinUpdate(context.Background(), old))
	if rs := cfg.Spec.Template.Spec; rs.TimeoutSeconds == nil || rs.EnableServiceLinks != nil {
		t.Errorf("renamed template in an update: timeout %v, enableServiceLinks %v (want set, unset)", rs.TimeoutSeconds, rs.EnableServiceLinks)
	}
}

// TestContainerNameTemplate: the template runs on the parent's metadata.
func TestContainerNameTemplate(t *testing.T) {
	ctx := withDefaults(func(d *defaulting.Defaults) { d.UserContainerNameTemplate = "{{.Name}}-ctr" })
	svc := &Service{ObjectMeta: metav1.ObjectMeta{Name: "hello"}}
	svc.Spec.Template.Spec.Containers = []corev1.Container{{}}
	svc.SetDefaults(ctx)
	if got := svc.Spec.Template.Spec.Containers[0].Name; got != "hello-ctr" {
		t.Errorf("name = %q", got)
	}
}
