package admission

import (
	"strings"
	"testing"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func service(mod func(*servingv1.Service)) *servingv1.Service {
	s := &servingv1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "default"},
		Spec: servingv1.ServiceSpec{ConfigurationSpec: servingv1.ConfigurationSpec{Template: servingv1.RevisionTemplateSpec{
			Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: "example.com/app:v1"}}}},
		}}},
	}
	if mod != nil {
		mod(s)
	}
	return s
}

func podSpec(s *servingv1.Service) *corev1.PodSpec { return &s.Spec.Template.Spec.PodSpec }
func ctr(s *servingv1.Service) *corev1.Container   { return &s.Spec.Template.Spec.Containers[0] }

func withFeatures(mod func(*config.Features)) *config.Config {
	c := config.Default()
	mod(c.Features)
	return c
}

// TestValidateService runs Service cases through defaulting then validation, as the
// API server does, and checks Knative's message and field path.
func TestValidateService(t *testing.T) {
	cases := []struct {
		name string
		cfg  *config.Config
		svc  *servingv1.Service
		want []string // each must appear in the error; nil: accepted
	}{
		{"minimal", nil, service(nil), nil},
		{"bad name", nil, service(func(s *servingv1.Service) { s.Name = "Hello.World" }), []string{"not a DNS 1035 label", ": metadata.name"}},
		{"autoscaling annotation on the Service", nil, service(func(s *servingv1.Service) {
			s.Annotations = map[string]string{"autoscaling.knative.dev/min-scale": "1"}
		}), []string{`invalid key name "autoscaling.knative.dev/min-scale": metadata.annotations`}},
		{"autoscaling annotation on the template", nil, service(func(s *servingv1.Service) {
			s.Spec.Template.ObjectMeta.Annotations = map[string]string{"autoscaling.knative.dev/min-scale": "1", "autoscaling.knative.dev/max-scale": "3"}
		}), nil},
		{"min-scale above max-scale", nil, service(func(s *servingv1.Service) {
			s.Spec.Template.ObjectMeta.Annotations = map[string]string{"autoscaling.knative.dev/min-scale": "5", "autoscaling.knative.dev/max-scale": "3"}
		}), []string{"max-scale=3 is less than min-scale=5: spec.template.metadata.annotations.autoscaling.knative.dev/max-scale, spec.template.metadata.annotations.autoscaling.knative.dev/min-scale"}},
		{"negative min-scale", nil, service(func(s *servingv1.Service) {
			s.Spec.Template.ObjectMeta.Annotations = map[string]string{"autoscaling.knative.dev/minScale": "-1"}
		}), []string{"expected 0 <= -1 <= 2147483647: spec.template.metadata.annotations.autoscaling.knative.dev/minScale"}},
		{"window too short", nil, service(func(s *servingv1.Service) {
			s.Spec.Template.ObjectMeta.Annotations = map[string]string{"autoscaling.knative.dev/window": "5s"}
		}), []string{"expected 6s <= 5s <= 1h0m0s: spec.template.metadata.annotations.autoscaling.knative.dev/window"}},
		{"target too small", nil, service(func(s *servingv1.Service) {
			s.Spec.Template.ObjectMeta.Annotations = map[string]string{"autoscaling.knative.dev/target": "0.001"}
		}), []string{"target 0.001 should be at least 0.01"}},
		{"initial-scale 0", nil, service(func(s *servingv1.Service) {
			s.Spec.Template.ObjectMeta.Annotations = map[string]string{"autoscaling.knative.dev/initial-scale": "0"}
		}), []string{"initial-scale=0 not allowed by cluster"}},
		{"rollout-duration", nil, service(func(s *servingv1.Service) {
			s.Annotations = map[string]string{"serving.knative.dev/rollout-duration": "2.5s"}
		}), []string{"rollout-duration=2.5s is not at second precision: metadata.annotations.serving.knative.dev/rollout-duration"}},
		{"rollout-duration ok", nil, service(func(s *servingv1.Service) {
			s.Annotations = map[string]string{"serving.knative.dev/rollout-duration": "120s"}
		}), nil},
		{"progress-deadline", nil, service(func(s *servingv1.Service) {
			s.Spec.Template.ObjectMeta.Annotations = map[string]string{"serving.knative.dev/progress-deadline": "nope"}
		}), []string{"invalid value: nope: spec.template.metadata.annotations.serving.knative.dev/progress-deadline"}},
		{"simulated service time and capacity", nil, service(func(s *servingv1.Service) {
			s.Spec.Template.ObjectMeta.Annotations = map[string]string{"serving.ferry.dev/simulated-service-time": "250ms", "serving.ferry.dev/simulated-capacity": "4"}
		}), nil},
		{"simulated service time not a duration", nil, service(func(s *servingv1.Service) {
			s.Spec.Template.ObjectMeta.Annotations = map[string]string{"serving.ferry.dev/simulated-service-time": "250"}
		}), []string{"invalid value: 250: spec.template.metadata.annotations.serving.ferry.dev/simulated-service-time"}},
		{"negative simulated service time", nil, service(func(s *servingv1.Service) {
			s.Spec.Template.ObjectMeta.Annotations = map[string]string{"serving.ferry.dev/simulated-service-time": "-1s"}
		}), []string{"invalid value: -1s: spec.template.metadata.annotations.serving.ferry.dev/simulated-service-time"}},
		{"simulated capacity 0", nil, service(func(s *servingv1.Service) {
			s.Spec.Template.ObjectMeta.Annotations = map[string]string{"serving.ferry.dev/simulated-capacity": "0"}
		}), []string{"invalid value: 0: spec.template.metadata.annotations.serving.ferry.dev/simulated-capacity"}},
		{"simulated capacity not a number", nil, service(func(s *servingv1.Service) {
			s.Spec.Template.ObjectMeta.Annotations = map[string]string{"serving.ferry.dev/simulated-capacity": "two"}
		}), []string{"invalid value: two: spec.template.metadata.annotations.serving.ferry.dev/simulated-capacity"}},
		{"serving-port is the program node's", nil, service(func(s *servingv1.Service) {
			s.Spec.Template.ObjectMeta.Annotations = map[string]string{"serving.ferry.dev/serving-port": "9000"}
		}), []string{"must not set the field(s): spec.template.metadata.annotations.serving.ferry.dev/serving-port"}},
		{"unknown networking annotation", nil, service(func(s *servingv1.Service) {
			s.Spec.Template.ObjectMeta.Annotations = map[string]string{"networking.knative.dev/foo": "x"}
		}), []string{`invalid key name "networking.knative.dev/foo": spec.template.metadata.annotations`}},
		{"BYO name without prefix", nil, service(func(s *servingv1.Service) { s.Spec.Template.ObjectMeta.Name = "other-v1" }),
			[]string{`invalid value: "other-v1" must have prefix "hello-": spec.template.metadata.name`}},
		{"BYO name with prefix", nil, service(func(s *servingv1.Service) { s.Spec.Template.ObjectMeta.Name = "hello-v1" }), nil},
		{"BYO name not DNS-1035", nil, service(func(s *servingv1.Service) { s.Spec.Template.ObjectMeta.Name = "hello_v1" }),
			[]string{"not a DNS 1035 label", "spec.template.metadata.name"}},
		{"BYO name with generateName parent", nil, service(func(s *servingv1.Service) {
			s.Name, s.GenerateName = "", "hello-"
			s.Spec.Template.ObjectMeta.Name = "hello-v1"
		}), []string{"must not set the field(s): spec.template.metadata.name"}},
		{"template generateName", nil, service(func(s *servingv1.Service) { s.Spec.Template.ObjectMeta.GenerateName = "hello-" }), nil},
		{"timeout over max", nil, service(func(s *servingv1.Service) { s.Spec.Template.Spec.TimeoutSeconds = ptr(int64(700)) }),
			[]string{"expected 0 <= 700 <= 600: spec.template.spec.timeoutSeconds"}},
		{"timeout under a raised max", func() *config.Config { c := config.Default(); c.Defaults.MaxRevisionTimeoutSeconds = 3600; return c }(),
			service(func(s *servingv1.Service) { s.Spec.Template.Spec.TimeoutSeconds = ptr(int64(700)) }), nil},
		{"containerConcurrency over the limit", nil, service(func(s *servingv1.Service) { s.Spec.Template.Spec.ContainerConcurrency = ptr(int64(1001)) }),
			[]string{"expected 0 <= 1001 <= 1000: spec.template.spec.containerConcurrency"}},
		{"nodeSelector off", nil, service(func(s *servingv1.Service) { podSpec(s).NodeSelector = map[string]string{"a": "b"} }),
			[]string{"must not set the field(s): spec.template.spec.nodeSelector"}},
		{"nodeSelector on", withFeatures(func(f *config.Features) { f.PodSpecNodeSelector = config.Enabled }),
			service(func(s *servingv1.Service) { podSpec(s).NodeSelector = map[string]string{"a": "b"} }), nil},
		{"nodeSelector allowed", withFeatures(func(f *config.Features) { f.PodSpecNodeSelector = config.Allowed }),
			service(func(s *servingv1.Service) { podSpec(s).NodeSelector = map[string]string{"a": "b"} }), nil},
		{"two disallowed fields", nil, service(func(s *servingv1.Service) {
			podSpec(s).NodeName = "n"
			podSpec(s).Tolerations = []corev1.Toleration{{Key: "k"}}
		}), []string{"must not set the field(s): spec.template.spec.nodeName, spec.template.spec.tolerations"}},
		{"automountServiceAccountToken false", nil, service(func(s *servingv1.Service) { podSpec(s).AutomountServiceAccountToken = ptr(false) }), nil},
		{"automountServiceAccountToken true", nil, service(func(s *servingv1.Service) { podSpec(s).AutomountServiceAccountToken = ptr(true) }),
			[]string{"must not set the field(s): spec.template.spec.automountServiceAccountToken"}},
		{"pod securityContext off", nil, service(func(s *servingv1.Service) {
			podSpec(s).SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(1))}
		}),
			[]string{"must not set the field(s): spec.template.spec.securityContext"}},
		{"pod securityContext sysctls", withFeatures(func(f *config.Features) { f.PodSpecSecurityContext = config.Enabled }),
			service(func(s *servingv1.Service) {
				podSpec(s).SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(1)), Sysctls: []corev1.Sysctl{{Name: "a"}}}
			}), []string{"must not set the field(s): spec.template.spec.securityContext.sysctls"}},
		{"runAsUser out of bounds", nil, service(func(s *servingv1.Service) {
			ctr(s).SecurityContext = &corev1.SecurityContext{RunAsUser: ptr(int64(-1))}
		}),
			[]string{"expected 0 <= -1 <= 2147483647: spec.template.spec.containers[0].securityContext.runAsUser"}},
		{"privileged", nil, service(func(s *servingv1.Service) { ctr(s).SecurityContext = &corev1.SecurityContext{Privileged: ptr(true)} }),
			[]string{"must not set the field(s): spec.template.spec.containers[0].securityContext.privileged"}},
		{"capabilities add", nil, service(func(s *servingv1.Service) {
			ctr(s).SecurityContext = &corev1.SecurityContext{Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"NET_ADMIN"}}}
		}), []string{"must not set the field(s): spec.template.spec.containers[0].securityContext.capabilities.add"}},
		{"reserved env", nil, service(func(s *servingv1.Service) { ctr(s).Env = []corev1.EnvVar{{Name: "K_SERVICE", Value: "x"}} }),
			[]string{`"K_SERVICE" is a reserved environment variable: spec.template.spec.containers[0].env[0].name`}},
		{"fieldRef off", nil, service(func(s *servingv1.Service) {
			ctr(s).Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
		}), []string{"must not set the field(s): spec.template.spec.containers[0].env[0].valueFrom.fieldRef"}},
		{"envFrom neither", nil, service(func(s *servingv1.Service) { ctr(s).EnvFrom = []corev1.EnvFromSource{{Prefix: "x"}} }),
			[]string{"expected exactly one, got neither: spec.template.spec.containers[0].envFrom[0].configMapRef, spec.template.spec.containers[0].envFrom[0].secretRef"}},
		{"reserved port", nil, service(func(s *servingv1.Service) { ctr(s).Ports = []corev1.ContainerPort{{ContainerPort: 8012}} }),
			[]string{"invalid value: 8012 is a reserved port: spec.template.spec.containers[0].ports.containerPort"}},
		{"port name", nil, service(func(s *servingv1.Service) { ctr(s).Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: 8080}} }),
			[]string{"Port name web is not allowed: spec.template.spec.containers[0].ports"}},
		{"hostPort", nil, service(func(s *servingv1.Service) { ctr(s).Ports = []corev1.ContainerPort{{ContainerPort: 8080, HostPort: 80}} }),
			[]string{"must not set the field(s): spec.template.spec.containers[0].ports.hostPort"}},
		{"UDP", nil, service(func(s *servingv1.Service) {
			ctr(s).Ports = []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolUDP}}
		}),
			[]string{"invalid value: UDP: spec.template.spec.containers[0].ports.protocol"}},
		{"two ports", nil, service(func(s *servingv1.Service) {
			ctr(s).Ports = []corev1.ContainerPort{{ContainerPort: 8080}, {ContainerPort: 8081}}
		}),
			[]string{"more than one container port is set: spec.template.spec.containers[*].ports"}},
		{"multi-container without a port", nil, service(func(s *servingv1.Service) {
			podSpec(s).Containers = append(podSpec(s).Containers, corev1.Container{Image: "example.com/side"})
		}), []string{"missing field(s): spec.template.spec.containers[*].ports"}},
		{"multi-container with a port", nil, service(func(s *servingv1.Service) {
			ctr(s).Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
			podSpec(s).Containers = append(podSpec(s).Containers, corev1.Container{Image: "example.com/side"})
		}), nil},
		{"multi-container off", withFeatures(func(f *config.Features) { f.MultiContainer = config.Disabled }), service(func(s *servingv1.Service) {
			ctr(s).Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
			podSpec(s).Containers = append(podSpec(s).Containers, corev1.Container{Image: "example.com/side"})
		}), []string{"multi-container is off, but found 2 containers"}},
		{"sidecar probe", nil, service(func(s *servingv1.Service) {
			ctr(s).Ports = []corev1.ContainerPort{{ContainerPort: 8080}}
			podSpec(s).Containers = append(podSpec(s).Containers, corev1.Container{Image: "example.com/side",
				LivenessProbe: &corev1.Probe{PeriodSeconds: 3, ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"x"}}}}})
		}), []string{"must not set the field(s): spec.template.spec.containers[1].livenessProbe.ProbeHandler, spec.template.spec.containers[1].livenessProbe.periodSeconds"}},
		{"duplicate container names", nil, service(func(s *servingv1.Service) {
			ctr(s).Name, ctr(s).Ports = "a", []corev1.ContainerPort{{ContainerPort: 8080}}
			podSpec(s).Containers = append(podSpec(s).Containers, corev1.Container{Name: "a", Image: "example.com/side"})
		}), []string{`duplicate container name "a": spec.template.spec.containers[1].name`}},
		{"queue-proxy name", nil, service(func(s *servingv1.Service) { ctr(s).Name = "queue-proxy" }),
			[]string{`"queue-proxy" is a reserved container name: spec.template.spec.containers[0].name`}},
		{"bad image", nil, service(func(s *servingv1.Service) { ctr(s).Image = "Example.com/UPPER:v1@sha256:nope" }),
			[]string{"Failed to parse image reference: spec.template.spec.containers[0].image"}},
		{"lifecycle", nil, service(func(s *servingv1.Service) { ctr(s).Lifecycle = &corev1.Lifecycle{} }),
			[]string{"must not set the field(s): spec.template.spec.containers[0].lifecycle"}},
		{"tty", nil, service(func(s *servingv1.Service) { ctr(s).TTY = true }),
			[]string{"must not set the field(s): spec.template.spec.containers[0].tty"}},
		{"terminationMessagePolicy", nil, service(func(s *servingv1.Service) { ctr(s).TerminationMessagePolicy = "Sometimes" }),
			[]string{"invalid value: Sometimes: spec.template.spec.containers[0].terminationMessagePolicy"}},
		{"probe port mismatch", nil, service(func(s *servingv1.Service) {
			ctr(s).ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("other")}}}
		}), []string{"invalid value: other: spec.template.spec.containers[0].readinessProbe.httpGet.port"}},
		{"probe scheme in lower case", nil, service(func(s *servingv1.Service) {
			ctr(s).ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Scheme: "http"}}}
			ctr(s).LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Scheme: "Https"}}}
		}), nil},
		{"probe scheme neither HTTP nor HTTPS", nil, service(func(s *servingv1.Service) {
			ctr(s).ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Scheme: "ftp"}}}
		}), []string{"invalid value: ftp: spec.template.spec.containers[0].readinessProbe.httpGet.scheme"}},
		{"probe header name", nil, service(func(s *servingv1.Service) {
			ctr(s).LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
				HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Ok", Value: "1"}, {Name: "not a header", Value: "1"}}}}}
		}), []string{"invalid value: not a header: spec.template.spec.containers[0].livenessProbe.httpGet.httpHeaders[1].name"}},
		{"exec probe without a command", nil, service(func(s *servingv1.Service) {
			ctr(s).LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{}}}
		}), []string{"missing field(s): spec.template.spec.containers[0].livenessProbe.exec.command"}},
		{"grpc probe mode", nil, service(func(s *servingv1.Service) {
			mode := corev1.GRPCProbeModeTLS
			ctr(s).LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 8080, Mode: &mode}}}
		}), []string{"must not set the field(s): spec.template.spec.containers[0].livenessProbe.grpc.mode"}},
		{"probe with two handlers", nil, service(func(s *servingv1.Service) {
			ctr(s).LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
				HTTPGet: &corev1.HTTPGetAction{}, TCPSocket: &corev1.TCPSocketAction{}}}
		}), []string{"expected exactly one, got both: spec.template.spec.containers[0].livenessProbe.httpGet, spec.template.spec.containers[0].livenessProbe.tcpSocket"}},
		{"probe without handler", nil, service(func(s *servingv1.Service) { ctr(s).LivenessProbe = &corev1.Probe{PeriodSeconds: 1} }),
			[]string{"expected exactly one, got neither: spec.template.spec.containers[0].livenessProbe.exec"}},
		{"aggressive probe with failureThreshold", nil, service(func(s *servingv1.Service) {
			ctr(s).ReadinessProbe = &corev1.Probe{FailureThreshold: 2, ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}}
		}), []string{"failureThreshold is disallowed when periodSeconds is zero: spec.template.spec.containers[0].readinessProbe.failureThreshold"}},
		{"readiness probe periodSeconds negative", nil, service(func(s *servingv1.Service) {
			ctr(s).ReadinessProbe = &corev1.Probe{PeriodSeconds: -1, ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}}
		}), []string{"expected 0 <= -1 <= 2147483647: spec.template.spec.containers[0].readinessProbe.periodSeconds"}},
		{"secret volume", nil, service(func(s *servingv1.Service) {
			podSpec(s).Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "x"}}}}
			ctr(s).VolumeMounts = []corev1.VolumeMount{{Name: "s", MountPath: "/etc/s"}}
		}), nil},
		{"volume not mounted", nil, service(func(s *servingv1.Service) {
			podSpec(s).Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "x"}}}}
		}), []string{`volume with name "s" not mounted: spec.template.spec.volumes[0].name`}},
		{"mount without volume", nil, service(func(s *servingv1.Service) {
			ctr(s).VolumeMounts = []corev1.VolumeMount{{Name: "s", MountPath: "/etc/s"}}
		}),
			[]string{"volumeMount has no matching volume: spec.template.spec.containers[0].volumeMounts[0].name"}},
		{"reserved mount path", nil, service(func(s *servingv1.Service) {
			podSpec(s).Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "x"}}}}
			ctr(s).VolumeMounts = []corev1.VolumeMount{{Name: "s", MountPath: "/dev/log/"}}
		}), []string{`mountPath "/dev/log" is a reserved path: spec.template.spec.containers[0].volumeMounts[0].mountPath`}},
		{"relative mount path", nil, service(func(s *servingv1.Service) {
			podSpec(s).Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "x"}}}}
			ctr(s).VolumeMounts = []corev1.VolumeMount{{Name: "s", MountPath: "etc"}}
		}), []string{"invalid value: etc: spec.template.spec.containers[0].volumeMounts[0].mountPath"}},
		{"duplicate volumes", nil, service(func(s *servingv1.Service) {
			v := corev1.Volume{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "x"}}}
			podSpec(s).Volumes = []corev1.Volume{v, v}
			ctr(s).VolumeMounts = []corev1.VolumeMount{{Name: "s", MountPath: "/a"}}
		}), []string{`duplicate volume name "s": spec.template.spec.volumes[1].name`}},
		{"emptyDir writable", nil, service(func(s *servingv1.Service) {
			podSpec(s).Volumes = []corev1.Volume{{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			ctr(s).VolumeMounts = []corev1.VolumeMount{{Name: "e", MountPath: "/data"}}
		}), nil},
		{"emptyDir off", withFeatures(func(f *config.Features) { f.PodSpecVolumesEmptyDir = config.Disabled }), service(func(s *servingv1.Service) {
			podSpec(s).Volumes = []corev1.Volume{{Name: "e", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			ctr(s).VolumeMounts = []corev1.VolumeMount{{Name: "e", MountPath: "/data"}}
		}), []string{"must not set the field(s): spec.template.spec.volumes[0].emptyDir"}},
		{"hostPath", nil, service(func(s *servingv1.Service) {
			podSpec(s).Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
			ctr(s).VolumeMounts = []corev1.VolumeMount{{Name: "h", MountPath: "/data"}}
		}), []string{"must not set the field(s): spec.template.spec.volumes[0].hostPath"}},
		{"PVC needs the flag", withFeatures(func(f *config.Features) { f.PodSpecPersistentVolumeClaim = config.Enabled }), service(func(s *servingv1.Service) {
			podSpec(s).Volumes = []corev1.Volume{{Name: "p", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}
			ctr(s).VolumeMounts = []corev1.VolumeMount{{Name: "p", MountPath: "/data"}}
		}), []string{"Persistent volume write support is disabled, but found persistent volume claim c that is not read-only"}},
		{"init containers off", nil, service(func(s *servingv1.Service) {
			podSpec(s).InitContainers = []corev1.Container{{Image: "example.com/init"}}
		}),
			[]string{"must not set the field(s): spec.template.spec.initContainers"}},
		{"init containers on", withFeatures(func(f *config.Features) { f.PodSpecInitContainers = config.Enabled }),
			service(func(s *servingv1.Service) {
				podSpec(s).InitContainers = []corev1.Container{{Image: "example.com/init"}}
			}), nil},
		{"serviceAccountName", nil, service(func(s *servingv1.Service) { podSpec(s).ServiceAccountName = "Not_Valid" }),
			[]string{"spec.template.spec.serviceAccountName"}},
		{"resources claims", nil, service(func(s *servingv1.Service) { ctr(s).Resources.Claims = []corev1.ResourceClaim{{Name: "c"}} }),
			[]string{"must not set the field(s): spec.template.spec.containers[0].resources.claims"}},
		{"resources", nil, service(func(s *servingv1.Service) {
			ctr(s).Resources.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}), nil},
		{"traffic sum", nil, service(func(s *servingv1.Service) {
			s.Spec.Traffic = []servingv1.TrafficTarget{{LatestRevision: ptr(true), Percent: ptr(int64(90))}}
		}), []string{"Traffic targets sum to 90, want 100: spec.traffic"}},
		{"traffic configurationName in Service", nil, service(func(s *servingv1.Service) {
			s.Spec.Traffic = []servingv1.TrafficTarget{{ConfigurationName: "x", Percent: ptr(int64(100))}}
		}), []string{"must not set the field(s): spec.traffic[0].configurationName"}},
		{"traffic duplicate tag", nil, service(func(s *servingv1.Service) {
			s.Spec.Traffic = []servingv1.TrafficTarget{{Tag: "a", Percent: ptr(int64(50))}, {Tag: "a", RevisionName: "hello-1", Percent: ptr(int64(50))}}
		}), []string{`Multiple definitions for "a": spec.traffic[0].tag, spec.traffic[1].tag`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg == nil {
				cfg = config.Default()
			}
			DefaultService(cfg, tc.svc, nil, "alice")
			err := ValidateService(cfg, tc.svc, nil).Errors()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err.Error(), w)
				}
			}
		})
	}
}

func TestValidateUpdates(t *testing.T) {
	cfg := config.Default()
	old := service(func(s *servingv1.Service) { s.Spec.Template.ObjectMeta.Name = "hello-v1" })
	DefaultService(cfg, old, nil, "alice")

	changed := old.DeepCopy()
	changed.Spec.Template.Spec.Containers[0].Image = "example.com/app:v2"
	DefaultService(cfg, changed, old, "bob")
	if err := ValidateService(cfg, changed, old).Errors(); err == nil || !strings.Contains(err.Error(), "Saw the following changes without a name change (-old +new): spec.template.metadata.name") {
		t.Errorf("template changed without a name change: %v", err)
	}
	if changed.Annotations[modifierAnnotation] != "bob" || changed.Annotations[creatorAnnotation] != "alice" {
		t.Errorf("annotations after an update by bob: %v", changed.Annotations)
	}

	renamed := changed.DeepCopy()
	renamed.Spec.Template.ObjectMeta.Name = "hello-v2"
	if err := ValidateService(cfg, renamed, old).Errors(); err != nil {
		t.Errorf("template and name changed: %v", err)
	}

	forged := old.DeepCopy()
	forged.Annotations[creatorAnnotation] = "mallory"
	if err := ValidateService(cfg, forged, old).Errors(); err == nil || !strings.Contains(err.Error(), "annotation value is immutable: metadata.annotations.serving.knative.dev/creator") {
		t.Errorf("creator changed: %v", err)
	}
	modifier := old.DeepCopy()
	modifier.Annotations[modifierAnnotation] = "mallory"
	if err := ValidateService(cfg, modifier, old).Errors(); err == nil || !strings.Contains(err.Error(), "invalid value: mallory: metadata.annotations.serving.knative.dev/lastModifier") {
		t.Errorf("lastModifier changed without a spec change: %v", err)
	}
}

func TestValidateConfigurationRevisionRoute(t *testing.T) {
	cfg := config.Default()
	c := &servingv1.Configuration{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{servingv1.ServiceLabelKey: "s"}},
		Spec: service(nil).Spec.ConfigurationSpec}
	DefaultConfiguration(cfg, c, nil, "")
	if err := ValidateConfiguration(cfg, c, nil); err == nil || !strings.Contains(err.Error(), "missing field(s): metadata.labels.serving.knative.dev/service") {
		t.Errorf("service label without owner: %v", err)
	}
	c.OwnerReferences = []metav1.OwnerReference{{Kind: "Service", Name: "s", APIVersion: "serving.knative.dev/v1", UID: "u"}}
	if err := ValidateConfiguration(cfg, c, nil).Errors(); err != nil {
		t.Errorf("owned: %v", err)
	}

	r := &servingv1.Revision{ObjectMeta: metav1.ObjectMeta{Name: "r-1", Annotations: map[string]string{"autoscaling.knative.dev/max-scale": "x"}},
		Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: "example.com/a"}}}}}
	DefaultRevision(cfg, r, nil)
	if err := ValidateRevision(cfg, r, nil); err == nil || !strings.Contains(err.Error(), "invalid value: x: metadata.annotations.autoscaling.knative.dev/max-scale") {
		t.Errorf("revision max-scale: %v", err)
	}
	r.Annotations = map[string]string{"serving.ferry.dev/simulated-capacity": "-3"}
	if err := ValidateRevision(cfg, r, nil); err == nil || !strings.Contains(err.Error(), "invalid value: -3: metadata.annotations.serving.ferry.dev/simulated-capacity") {
		t.Errorf("revision simulated-capacity: %v", err)
	}
	r.Annotations = nil
	r2 := r.DeepCopy()
	r2.Spec.Containers[0].Image = "example.com/b"
	if err := ValidateRevision(cfg, r2, r); err == nil || !strings.Contains(err.Error(), "Immutable fields changed (-old +new): spec") {
		t.Errorf("revision spec changed: %v", err)
	}

	rt := &servingv1.Route{ObjectMeta: metav1.ObjectMeta{Name: "rt.x"}}
	DefaultRoute(cfg, rt, nil, "alice")
	err := ValidateRoute(cfg, rt, nil)
	for _, w := range []string{"not a DNS 1035 label", "metadata.name", "Traffic targets sum to 0, want 100: spec.traffic"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("route: %v, want %q", err, w)
		}
	}
	if rt.Annotations[creatorAnnotation] != "alice" {
		t.Errorf("route annotations %v", rt.Annotations)
	}
	rt = &servingv1.Route{ObjectMeta: metav1.ObjectMeta{Name: "rt"}, Spec: servingv1.RouteSpec{Traffic: []servingv1.TrafficTarget{
		{RevisionName: "a", ConfigurationName: "b", Percent: ptr(int64(100))}}}}
	DefaultRoute(cfg, rt, nil, "")
	if err := ValidateRoute(cfg, rt, nil); err == nil || !strings.Contains(err.Error(), "expected exactly one, got both: spec.traffic[0].configurationName, spec.traffic[0].revisionName") {
		t.Errorf("route both names: %v", err)
	}
}

func TestWarnings(t *testing.T) {
	cfg := config.Default()
	s := service(nil)
	DefaultService(cfg, s, nil, "")
	w := ValidateService(cfg, s, nil).Warnings()
	if w == nil || !strings.Contains(w.Error(), "Kubernetes default value is insecure") {
		t.Errorf("warnings: %v", w)
	}
	cfg.Features.SecurePodDefaults = config.Enabled
	s = service(nil)
	DefaultService(cfg, s, nil, "")
	if errs := ValidateService(cfg, s, nil); errs != nil {
		t.Errorf("secure-pod-defaults: %v", errs)
	}
}

// target-burst-capacity is accepted, but a value other than -1 is a warning: it
// decides nothing in Ferry, whose gateway is always in the request path.
func TestTargetBurstCapacityWarns(t *testing.T) {
	cfg := config.Default()
	cfg.Features.SecurePodDefaults = config.Enabled // no other warning
	for v, warns := range map[string]bool{"-1": false, "0": true, "211": true} {
		s := service(func(s *servingv1.Service) {
			s.Spec.Template.ObjectMeta.Annotations = map[string]string{"autoscaling.knative.dev/target-burst-capacity": v}
		})
		DefaultService(cfg, s, nil, "")
		errs := ValidateService(cfg, s, nil)
		if errs.Errors() != nil {
			t.Fatalf("%s: refused: %v", v, errs.Errors())
		}
		w := errs.Warnings()
		if got := w != nil && strings.Contains(w.Error(), "has no effect in Ferry: the gateway is always in the request path") &&
			strings.Contains(w.Error(), "target-burst-capacity"); got != warns {
			t.Errorf("target-burst-capacity %s: warnings %v, want a warning: %v", v, w, warns)
		}
	}
}

// rollout-duration is accepted without a warning: Routes roll out gradually.
func TestRolloutDurationDoesNotWarn(t *testing.T) {
	cfg := config.Default()
	cfg.Features.SecurePodDefaults = config.Enabled // no other warning
	for _, v := range []string{"0s", "60s"} {
		s := service(func(s *servingv1.Service) {
			s.Annotations = map[string]string{"serving.knative.dev/rollout-duration": v}
		})
		DefaultService(cfg, s, nil, "")
		errs := ValidateService(cfg, s, nil)
		if errs.Errors() != nil {
			t.Fatalf("%s: refused: %v", v, errs.Errors())
		}
		if w := errs.Warnings(); w != nil {
			t.Errorf("rollout-duration %s: warnings %v, want none", v, w)
		}
	}
}

func TestFieldErrorFormat(t *testing.T) {
	err := ErrDisallowedFields("b").ViaField("spec").Also(ErrDisallowedFields("a").ViaFieldIndex("containers", 0).ViaField("spec"),
		ErrOutOfBoundsValue(7, 0, 5, "x").ViaKey("k").ViaField("m"))
	want := "expected 0 <= 7 <= 5: m[k].x\nmust not set the field(s): spec.b, spec.containers[0].a"
	if err.Error() != want {
		t.Errorf("got %q, want %q", err.Error(), want)
	}
	if (*FieldError)(nil).Also(nil) != nil {
		t.Error("nil.Also(nil) is not nil")
	}
}

func TestKeyPaths(t *testing.T) {
	err := validateQueueSidecarAnnotations(map[string]string{"queue.sidecar.serving.knative.dev/cpu-resource-limit": "one"}).
		ViaField("metadata.annotations").ViaField("spec", "template")
	if want := "invalid value: one: spec.template.metadata.annotations[queue.sidecar.serving.knative.dev/cpu-resource-limit]"; err.Error() != want {
		t.Errorf("got %q, want %q", err.Error(), want)
	}
}

// TestValidateAutoscalingAnnotations checks the template's autoscaling.knative.dev/*
// annotations as Knative's autoscaling.ValidateAnnotations does, against the live
// config-autoscaler.
func TestValidateAutoscalingAnnotations(t *testing.T) {
	const p = "spec.template.metadata.annotations.autoscaling.knative.dev/"
	withAutoscaler := func(mod func(*config.Autoscaler)) *config.Config {
		c := config.Default()
		mod(c.Autoscaler)
		return c
	}
	zeroAllowed := withAutoscaler(func(a *config.Autoscaler) { a.AllowZeroInitialScale = true })
	limit10 := withAutoscaler(func(a *config.Autoscaler) { a.MaxScaleLimit, a.MaxScale = 10, 10 })
	hpaDefault := withAutoscaler(func(a *config.Autoscaler) { a.PodAutoscalerClass = "hpa.autoscaling.knative.dev" })
	noAutoscaler := config.Default()
	noAutoscaler.Autoscaler = nil
	cases := []struct {
		name string
		cfg  *config.Config
		anns map[string]string
		want []string // each must appear in the error; nil: accepted
	}{
		{"every annotation valid", nil, map[string]string{
			"autoscaling.knative.dev/class": "kpa.autoscaling.knative.dev", "autoscaling.knative.dev/metric": "rps",
			"autoscaling.knative.dev/target": "0.01", "autoscaling.knative.dev/target-utilization-percentage": "100",
			"autoscaling.knative.dev/window": "6s", "autoscaling.knative.dev/panic-window-percentage": "1",
			"autoscaling.knative.dev/panic-threshold-percentage": "1000", "autoscaling.knative.dev/min-scale": "1",
			"autoscaling.knative.dev/max-scale": "5", "autoscaling.knative.dev/activation-scale": "3",
			"autoscaling.knative.dev/initial-scale": "2", "autoscaling.knative.dev/scale-down-delay": "1h",
			"autoscaling.knative.dev/scale-to-zero-pod-retention-period": "0s", "autoscaling.knative.dev/target-burst-capacity": "-1",
			"autoscaling.knative.dev/metric-aggregation-algorithm": "weighted-exponential"}, nil},

		// initial-scale follows allow-zero-initial-scale.
		{"initial-scale 0 refused by default", nil, map[string]string{"autoscaling.knative.dev/initial-scale": "0"},
			[]string{"invalid value: 0: " + p + "initial-scale=0 not allowed by cluster"}},
		{"initial-scale 0 allowed by the cluster", zeroAllowed, map[string]string{"autoscaling.knative.dev/initial-scale": "0"}, nil},
		{"legacy initialScale 0 allowed by the cluster", zeroAllowed, map[string]string{"autoscaling.knative.dev/initialScale": "0"}, nil},
		{"initial-scale negative", zeroAllowed, map[string]string{"autoscaling.knative.dev/initial-scale": "-1"},
			[]string{p + "initial-scale must be greater than 0"}},
		{"initial-scale not a number", nil, map[string]string{"autoscaling.knative.dev/initialScale": "x"},
			[]string{"invalid value: x: " + p + "initialScale"}},
		{"no config-autoscaler: Knative's defaults", noAutoscaler, map[string]string{"autoscaling.knative.dev/initial-scale": "0"},
			[]string{"initial-scale=0 not allowed by cluster"}},

		// max-scale-limit.
		{"max-scale within the limit", limit10, map[string]string{"autoscaling.knative.dev/max-scale": "10"}, nil},
		{"max-scale above the limit", limit10, map[string]string{"autoscaling.knative.dev/max-scale": "11"},
			[]string{"expected 1 <= 11 <= 10: " + p + "max-scale"}},
		{"max-scale unlimited under a limit", limit10, map[string]string{"autoscaling.knative.dev/maxScale": "0"},
			[]string{"max-scale=0 (unlimited), must be less than 10: " + p + "maxScale"}},
		{"no max-scale under a limit", limit10, map[string]string{"autoscaling.knative.dev/min-scale": "2"}, nil},
		{"max-scale above the default's limit", nil, map[string]string{"autoscaling.knative.dev/max-scale": "100000"}, nil},

		// min, max and activation scale.
		{"max-scale not a number", nil, map[string]string{"autoscaling.knative.dev/max-scale": "many"},
			[]string{"invalid value: many: " + p + "max-scale"}},
		{"max-scale out of int32", nil, map[string]string{"autoscaling.knative.dev/max-scale": "3000000000"},
			[]string{"expected 0 <= 3000000000 <= 2147483647: " + p + "max-scale"}},
		{"min-scale above max-scale, legacy keys", nil, map[string]string{"autoscaling.knative.dev/minScale": "4", "autoscaling.knative.dev/maxScale": "2"},
			[]string{"max-scale=2 is less than min-scale=4"}},
		{"min-scale with unlimited max-scale", nil, map[string]string{"autoscaling.knative.dev/min-scale": "4", "autoscaling.knative.dev/max-scale": "0"}, nil},
		{"activation-scale below min-scale", nil, map[string]string{"autoscaling.knative.dev/min-scale": "4", "autoscaling.knative.dev/activation-scale": "3"},
			[]string{"min-scale=4 is greater than activation-scale=3: " + p + "activation-scale"}},
		{"activation-scale above max-scale", nil, map[string]string{"autoscaling.knative.dev/max-scale": "4", "autoscaling.knative.dev/activation-scale": "5"},
			[]string{"max-scale=4 is less than activation-scale=5: " + p + "activation-scale"}},
		{"activation-scale 1", nil, map[string]string{"autoscaling.knative.dev/activation-scale": "1"},
			[]string{"activation-scale=1 must be greater than 1: " + p + "activation-scale"}},
		{"activation-scale not a number", nil, map[string]string{"autoscaling.knative.dev/activation-scale": "two"},
			[]string{"invalid value: two: " + p + "activation-scale"}},

		// class and metric.
		{"unknown knative.dev class", nil, map[string]string{"autoscaling.knative.dev/class": "foo.autoscaling.knative.dev"},
			[]string{"invalid value: foo.autoscaling.knative.dev: " + p + "class"}},
		{"pluggable class", nil, map[string]string{"autoscaling.knative.dev/class": "custom.example.com", "autoscaling.knative.dev/metric": "anything"}, nil},
		{"cpu under the default KPA class", nil, map[string]string{"autoscaling.knative.dev/metric": "cpu"},
			[]string{"invalid value: cpu: " + p + "metric"}},
		{"cpu under the cluster's HPA default class", hpaDefault, map[string]string{"autoscaling.knative.dev/metric": "cpu"}, nil},
		{"concurrency under an explicit KPA class, HPA default", hpaDefault, map[string]string{
			"autoscaling.knative.dev/class": "kpa.autoscaling.knative.dev", "autoscaling.knative.dev/metric": "concurrency"}, nil},
		{"empty metric under HPA", nil, map[string]string{"autoscaling.knative.dev/class": "hpa.autoscaling.knative.dev", "autoscaling.knative.dev/metric": ""},
			[]string{"invalid value: : " + p + "metric"}},
		{"custom metric under HPA", nil, map[string]string{"autoscaling.knative.dev/class": "hpa.autoscaling.knative.dev", "autoscaling.knative.dev/metric": "queue-depth"}, nil},
		{"unknown algorithm under KPA", nil, map[string]string{"autoscaling.knative.dev/class": "kpa.autoscaling.knative.dev",
			"autoscaling.knative.dev/metricAggregationAlgorithm": "median"}, []string{"invalid value: median: " + p + "metricAggregationAlgorithm"}},
		{"algorithm unchecked without an explicit KPA class", nil, map[string]string{"autoscaling.knative.dev/metric-aggregation-algorithm": "median"}, nil},

		// floats.
		{"target under 0.01", nil, map[string]string{"autoscaling.knative.dev/target": "0.009"},
			[]string{"target 0.009 should be at least 0.01: " + p + "target"}},
		{"target not a number", nil, map[string]string{"autoscaling.knative.dev/target": "ten"}, []string{"invalid value: ten: " + p + "target"}},
		{"target-utilization-percentage 0", nil, map[string]string{"autoscaling.knative.dev/targetUtilizationPercentage": "0"},
			[]string{"expected 1 <= 0 <= 100: " + p + "targetUtilizationPercentage"}},
		{"panic-window-percentage 101", nil, map[string]string{"autoscaling.knative.dev/panic-window-percentage": "101"},
			[]string{"expected 1 <= 101 <= 100: " + p + "panic-window-percentage"}},
		{"panic-threshold-percentage 100", nil, map[string]string{"autoscaling.knative.dev/panicThresholdPercentage": "100"},
			[]string{"expected 110 <= 100 <= 1000: " + p + "panicThresholdPercentage"}},
		{"target-burst-capacity -2", nil, map[string]string{"autoscaling.knative.dev/target-burst-capacity": "-2"},
			[]string{"invalid value: -2: " + p + "target-burst-capacity"}},

		// durations.
		{"window over 1h", nil, map[string]string{"autoscaling.knative.dev/window": "2h"},
			[]string{"expected 6s <= 2h <= 1h0m0s: " + p + "window"}},
		{"window fraction", nil, map[string]string{"autoscaling.knative.dev/window": "6500ms"},
			[]string{"must be specified with at most second precision: " + p + "window"}},
		{"window bare seconds", nil, map[string]string{"autoscaling.knative.dev/window": "60"}, []string{"invalid value: 60: " + p + "window"}},
		{"scale-down-delay negative", nil, map[string]string{"autoscaling.knative.dev/scaleDownDelay": "-1s"},
			[]string{"expected 0s <= -1s <= 1h0m0s: " + p + "scaleDownDelay"}},
		{"scale-down-delay fraction", nil, map[string]string{"autoscaling.knative.dev/scale-down-delay": "1.5s"},
			[]string{"must be specified with at most second precision: " + p + "scale-down-delay"}},
		{"retention over 1h", nil, map[string]string{"autoscaling.knative.dev/scale-to-zero-pod-retention-period": "61m"},
			[]string{"expected 0s <= 61m <= 1h0m0s: " + p + "scale-to-zero-pod-retention-period"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			if cfg == nil {
				cfg = config.Default()
			}
			s := service(func(s *servingv1.Service) { s.Spec.Template.ObjectMeta.Annotations = tc.anns })
			DefaultService(cfg, s, nil, "alice")
			err := ValidateService(cfg, s, nil).Errors()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted, want %q", tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err.Error(), w)
				}
			}
		})
	}

	// A Revision's own annotations are checked against the same configuration.
	r := &servingv1.Revision{ObjectMeta: metav1.ObjectMeta{Name: "r-1", Annotations: map[string]string{"autoscaling.knative.dev/initial-scale": "0"}},
		Spec: servingv1.RevisionSpec{PodSpec: corev1.PodSpec{Containers: []corev1.Container{{Image: "example.com/app:v1"}}}}}
	DefaultRevision(zeroAllowed, r, nil)
	if err := ValidateRevision(zeroAllowed, r, nil).Errors(); err != nil {
		t.Errorf("revision initial-scale 0 with the cluster allowing it: %v", err)
	}
	if err := ValidateRevision(config.Default(), r, nil); err == nil ||
		!strings.Contains(err.Error(), "invalid value: 0: metadata.annotations.autoscaling.knative.dev/initial-scale=0 not allowed by cluster") {
		t.Errorf("revision initial-scale 0 by default: %v", err)
	}
}
