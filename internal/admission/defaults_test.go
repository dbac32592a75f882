package admission

import (
	"testing"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestDefaultService(t *testing.T) {
	cfg := config.Default()
	s := service(nil)
	DefaultService(cfg, s, nil, "alice")
	rs := s.Spec.Template.Spec
	if *rs.TimeoutSeconds != 300 || *rs.ContainerConcurrency != 0 || rs.EnableServiceLinks == nil || *rs.EnableServiceLinks {
		t.Errorf("timeout %v cc %v links %v", *rs.TimeoutSeconds, *rs.ContainerConcurrency, rs.EnableServiceLinks)
	}
	if rs.ResponseStartTimeoutSeconds != nil {
		t.Errorf("responseStartTimeoutSeconds %d, want unset when equal to the timeout", *rs.ResponseStartTimeoutSeconds)
	}
	c := rs.Containers[0]
	if c.Name != "user-container" {
		t.Errorf("name %q", c.Name)
	}
	if p := c.ReadinessProbe; p == nil || p.TCPSocket == nil || p.TCPSocket.Port.IntVal != 0 || p.SuccessThreshold != 1 {
		t.Errorf("readiness probe %+v", p)
	}
	if len(s.Spec.Traffic) != 1 || *s.Spec.Traffic[0].Percent != 100 || !*s.Spec.Traffic[0].LatestRevision {
		t.Errorf("traffic %+v", s.Spec.Traffic)
	}
	if s.Annotations[creatorAnnotation] != "alice" || s.Annotations[modifierAnnotation] != "alice" {
		t.Errorf("annotations %v", s.Annotations)
	}

	// Idempotent, and an update with no spec change keeps the annotations.
	again := s.DeepCopy()
	DefaultService(cfg, again, s, "bob")
	if again.Annotations[modifierAnnotation] != "alice" {
		t.Errorf("lastModifier changed without a spec change: %v", again.Annotations)
	}
}

func TestDefaultFromConfig(t *testing.T) {
	cfg := config.Default()
	cfg.Defaults.RevisionTimeoutSeconds = 120
	cfg.Defaults.RevisionResponseStartTimeoutSeconds = 60
	cfg.Defaults.ContainerConcurrency = 10
	cfg.Defaults.UserContainerNameTemplate = "{{.Name}}-ctr"
	cpu := resource.MustParse("100m")
	cfg.Defaults.RevisionCPURequest = &cpu
	s := service(func(s *servingv1.Service) {
		s.Spec.Template.Spec.TimeoutSeconds = ptr(int64(0))
		s.Spec.Template.Spec.Containers = []corev1.Container{
			{Image: "a", Ports: []corev1.ContainerPort{{ContainerPort: 8080}}},
			{Image: "b"},
			{Name: "hello-ctr-1", Image: "c"},
		}
	})
	DefaultService(cfg, s, nil, "")
	rs := s.Spec.Template.Spec
	if *rs.TimeoutSeconds != 120 || *rs.ContainerConcurrency != 10 || rs.ResponseStartTimeoutSeconds == nil || *rs.ResponseStartTimeoutSeconds != 60 {
		t.Errorf("timeouts %v %v cc %v", *rs.TimeoutSeconds, rs.ResponseStartTimeoutSeconds, *rs.ContainerConcurrency)
	}
	var names []string
	for _, c := range rs.Containers {
		names = append(names, c.Name)
	}
	if names[0] != "hello-ctr-0" || names[1] != "hello-ctr-2" || names[2] != "hello-ctr-1" {
		t.Errorf("names %v", names)
	}
	if rs.Containers[1].ReadinessProbe != nil {
		t.Error("a sidecar got a readiness probe")
	}
	if q := rs.Containers[0].Resources.Requests[corev1.ResourceCPU]; q.String() != "100m" {
		t.Errorf("cpu request %v", q.String())
	}
}

func TestDefaultReadOnlyMounts(t *testing.T) {
	s := service(func(s *servingv1.Service) {
		s.Spec.Template.Spec.Volumes = []corev1.Volume{
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "x"}}},
			{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		}
		s.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "s", MountPath: "/s"}, {Name: "e", MountPath: "/e"}}
	})
	DefaultService(config.Default(), s, nil, "")
	m := s.Spec.Template.Spec.Containers[0].VolumeMounts
	if !m[0].ReadOnly || m[1].ReadOnly {
		t.Errorf("mounts %+v", m)
	}
}

func TestConfigurationKeepsBYOTemplate(t *testing.T) {
	cfg := config.Default()
	old := &servingv1.Configuration{Spec: service(func(s *servingv1.Service) { s.Spec.Template.ObjectMeta.Name = "c-v1" }).Spec.ConfigurationSpec}
	c := old.DeepCopy()
	DefaultConfiguration(cfg, c, old, "bob")
	if c.Spec.Template.Spec.TimeoutSeconds != nil {
		t.Error("a template that keeps its name was defaulted")
	}
}

func ptr[T any](v T) *T { return &v }
