package resources

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

func revision(annotations map[string]string, ports ...corev1.ContainerPort) *v1.Revision {
	rev := &v1.Revision{
		ObjectMeta: metav1.ObjectMeta{Name: "hello-00001", Namespace: "ns", UID: "uid-1",
			Labels: map[string]string{v1.ConfigurationLabelKey: "hello"}, Annotations: annotations},
		Spec: v1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: "img", Ports: ports}}}},
	}
	rev.SetDefaults(context.Background())
	return rev
}

func TestMakeDeployment(t *testing.T) {
	tests := []struct {
		name  string
		ports []corev1.ContainerPort
		port  int32
	}{
		{"default port", nil, 8080},
		{"user port", []corev1.ContainerPort{{ContainerPort: 9000}}, 9000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rev := revision(nil, tc.ports...)
			d := MakeDeployment(rev, 120, 1)
			if d.Name != "hello-00001-deployment" || !metav1.IsControlledBy(d, rev) {
				t.Errorf("metadata = %+v", d.ObjectMeta)
			}
			if *d.Spec.ProgressDeadlineSeconds != 120 || *d.Spec.Replicas != 1 {
				t.Errorf("spec = %+v", d.Spec)
			}
			if d.Spec.Selector.MatchLabels[v1.RevisionLabelKey] != "hello-00001" || d.Spec.Template.Labels[v1.RevisionLabelKey] != "hello-00001" ||
				d.Spec.Template.Labels[v1.ConfigurationLabelKey] != "hello" || d.Spec.Template.Labels[v1.RevisionUIDLabelKey] != "uid-1" {
				t.Errorf("labels = %v / %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
			}
			c := d.Spec.Template.Spec.Containers[0]
			if c.Name != v1.DefaultUserContainerName || c.Ports[0].ContainerPort != tc.port {
				t.Errorf("container = %+v", c)
			}
			if !hasEnv(c.Env, "PORT") || c.ReadinessProbe.TCPSocket.Port.IntValue() != int(tc.port) || c.ReadinessProbe.PeriodSeconds != 10 {
				t.Errorf("env/probe = %+v %+v", c.Env, c.ReadinessProbe)
			}
			if rev.Spec.Containers[0].Env != nil {
				t.Error("MakeDeployment changed the Revision")
			}
		})
	}
}

func TestProgressDeadline(t *testing.T) {
	for _, tc := range []struct {
		annotation string
		want       int32
	}{{"", 600}, {"30s", 30}, {"10m", 600}, {"2m", 120}, {"0s", 600}} {
		rev := revision(map[string]string{v1.ProgressDeadlineAnnotationKey: tc.annotation})
		if got := ProgressDeadline(rev, 10*time.Minute); got != tc.want {
			t.Errorf("ProgressDeadline(%q) = %d, want %d", tc.annotation, got, tc.want)
		}
	}
}

// TestDrain: every container of a leaving pod sleeps, before SIGTERM, long enough for
// the gateways to stop sending it requests and for the last ones sent to finish (the
// Revision's timeout), and the grace period leaves the app time to exit after that.
// What the PodSpec says otherwise is replaced, as Knative replaces it.
func TestDrain(t *testing.T) {
	tests := []struct {
		name       string
		timeout    *int64
		user       func(*corev1.PodSpec)
		sleep      int64
		grace      int64
		containers int
	}{
		{name: "default timeout", sleep: 10 + 300, grace: 10 + 300 + 30, containers: 1},
		{name: "short timeout", timeout: ptr[int64](2), sleep: 12, grace: 42, containers: 1},
		{name: "long timeout", timeout: ptr[int64](3600), sleep: 3610, grace: 3640, containers: 1},
		{name: "user's preStop, grace and a sidecar", timeout: ptr[int64](60), sleep: 70, grace: 100, containers: 2,
			user: func(ps *corev1.PodSpec) {
				ps.TerminationGracePeriodSeconds = ptr[int64](1)
				ps.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
					Exec: &corev1.ExecAction{Command: []string{"kill", "1"}}}}
				ps.Containers = append(ps.Containers, corev1.Container{Name: "sidecar", Image: "side"})
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rev := revision(nil)
			if tc.timeout != nil {
				rev.Spec.TimeoutSeconds = tc.timeout
			}
			if tc.user != nil {
				tc.user(&rev.Spec.PodSpec)
			}
			ps := MakeDeployment(rev, 120, 1).Spec.Template.Spec
			if g := ps.TerminationGracePeriodSeconds; g == nil || *g != tc.grace {
				t.Errorf("terminationGracePeriodSeconds = %v, want %d", deref(g), tc.grace)
			}
			if len(ps.Containers) != tc.containers {
				t.Fatalf("%d containers, want %d", len(ps.Containers), tc.containers)
			}
			for _, c := range ps.Containers {
				want := &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{Sleep: &corev1.SleepAction{Seconds: tc.sleep}}}
				if !equality.Semantic.DeepEqual(c.Lifecycle, want) {
					t.Errorf("container %q lifecycle = %+v, want a preStop sleep of %d s", c.Name, c.Lifecycle, tc.sleep)
				}
			}
		})
	}
	// A Revision that admission did not default drains for the default timeout.
	rev := revision(nil)
	rev.Spec.TimeoutSeconds = nil
	if got := PreStopSleepSeconds(rev); got != 310 {
		t.Errorf("without timeoutSeconds: preStop sleep %d s, want 310", got)
	}
}

func deref(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

// A Route reaching a Revision relabels it (routingState pending → active); its pods
// must not roll for that.
func TestMakeDeploymentIgnoresRouting(t *testing.T) {
	pending, active := revision(nil), revision(nil)
	pending.Labels[v1.RoutingStateLabelKey] = string(v1.RoutingStatePending)
	active.Labels[v1.RoutingStateLabelKey] = string(v1.RoutingStateActive)
	active.Labels[v1.RouteLabelKey] = "hello"
	active.Annotations = map[string]string{v1.RoutingStateModifiedAnnotation: "2026-12-05T01:00:00Z", v1.RoutesAnnotationKey: "hello"}
	a, b := MakeDeployment(pending, 600, 1), MakeDeployment(active, 600, 1)
	if !equality.Semantic.DeepEqual(a, b) {
		t.Errorf("the Deployment changed with the routing labels:\n%v\n%v", a.Labels, b.Labels)
	}
	if _, ok := a.Spec.Template.Labels[v1.RoutingStateLabelKey]; ok {
		t.Errorf("pod template labels %v carry routingState", a.Spec.Template.Labels)
	}
}
