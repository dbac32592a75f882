package resources

import (
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/apis/core"
	k8scorev1 "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/kubernetes/pkg/apis/core/validation"
)

// TestKubeletProbes: every probe Knative's admission takes (and Ferry's) becomes, in the
// Deployment, one the API server accepts, checked here with the API server's own
// defaulting and validation, and means what it meant to Knative's prober.
func TestKubeletProbes(t *testing.T) {
	servingPort := []corev1.ContainerPort{{Name: "http1", ContainerPort: 9000}}
	http := func(a corev1.HTTPGetAction) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &a}}
	}
	tcp := func(a corev1.TCPSocketAction) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &a}}
	}
	tests := []struct {
		name  string
		ports []corev1.ContainerPort
		probe *corev1.Probe
		// readiness and liveness are the probes the kubelet gets for it (liveness
		// stands for startup too); nil: the same as readiness.
		readiness, liveness *corev1.Probe
	}{
		{name: "Knative's default: tcpSocket port 0", ports: servingPort,
			probe:     &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}, SuccessThreshold: 1},
			readiness: tcp(corev1.TCPSocketAction{Port: intstr.FromInt32(9000)})},
		{name: "no handler: tcpSocket on the serving port", ports: servingPort,
			probe:     &corev1.Probe{PeriodSeconds: 3},
			readiness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9000)}}, PeriodSeconds: 3}},
		{name: "scheme in lower case", ports: servingPort,
			probe:     http(corev1.HTTPGetAction{Path: "/healthz", Scheme: "http"}),
			readiness: http(corev1.HTTPGetAction{Path: "/healthz", Scheme: "HTTP", Port: intstr.FromInt32(9000)})},
		{name: "https in mixed case", ports: servingPort,
			probe:     http(corev1.HTTPGetAction{Path: "/", Scheme: "Https", Port: intstr.FromInt32(9000)}),
			readiness: http(corev1.HTTPGetAction{Path: "/", Scheme: "HTTPS", Port: intstr.FromInt32(9000)})},
		{name: "no scheme, no path, no port: the API server's defaults", ports: servingPort,
			probe:     http(corev1.HTTPGetAction{}),
			readiness: http(corev1.HTTPGetAction{Port: intstr.FromInt32(9000)})},
		{name: "port by the serving port's name", ports: servingPort,
			probe:     http(corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http1")}),
			readiness: http(corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("http1")})},
		{name: "another port by number", ports: servingPort,
			probe:     http(corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(9001)}),
			readiness: http(corev1.HTTPGetAction{Path: "/ready", Port: intstr.FromInt32(9001)})},
		{name: "host, headers and a path without its slash", ports: servingPort,
			probe: http(corev1.HTTPGetAction{Path: "healthz?full=1", Host: "localhost", Scheme: "http",
				HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "1"}}}),
			readiness: http(corev1.HTTPGetAction{Path: "healthz?full=1", Scheme: "HTTP", Port: intstr.FromInt32(9000),
				HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "1"}}}),
			liveness: http(corev1.HTTPGetAction{Path: "healthz?full=1", Host: "localhost", Scheme: "HTTP", Port: intstr.FromInt32(9000),
				HTTPHeaders: []corev1.HTTPHeader{{Name: "X-Probe", Value: "1"}}})},
		{name: "tcpSocket with a host", ports: servingPort,
			probe:     tcp(corev1.TCPSocketAction{Host: "127.0.0.1"}),
			readiness: tcp(corev1.TCPSocketAction{Port: intstr.FromInt32(9000)}),
			liveness:  tcp(corev1.TCPSocketAction{Host: "127.0.0.1", Port: intstr.FromInt32(9000)})},
		{name: "tcpSocket by name", ports: servingPort,
			probe:     tcp(corev1.TCPSocketAction{Port: intstr.FromString("http1")}),
			readiness: tcp(corev1.TCPSocketAction{Port: intstr.FromString("http1")})},
		{name: "grpc port 0, default port", ports: nil,
			probe:     &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Service: ptr("")}}},
			readiness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 8080, Service: ptr("")}}}},
		{name: "grpc with a service", ports: servingPort,
			probe:     &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000, Service: ptr("health")}}},
			readiness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9000, Service: ptr("health")}}}},
		{name: "exec", ports: servingPort,
			probe:     &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}}},
			readiness: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"cat", "/tmp/ready"}}}}},
		{name: "terminationGracePeriodSeconds", ports: servingPort,
			probe:     &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{}}, TerminationGracePeriodSeconds: ptr[int64](5)},
			readiness: tcp(corev1.TCPSocketAction{Port: intstr.FromInt32(9000)}),
			liveness:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9000)}}, TerminationGracePeriodSeconds: ptr[int64](5)}},
		{name: "containerPort 0 is the default port", ports: []corev1.ContainerPort{{Name: "http1"}},
			probe:     tcp(corev1.TCPSocketAction{Port: intstr.FromString("http1")}),
			readiness: tcp(corev1.TCPSocketAction{Port: intstr.FromString("http1")})},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rev := revision(nil, tc.ports...)
			c := &rev.Spec.Containers[0]
			c.ReadinessProbe, c.LivenessProbe, c.StartupProbe = tc.probe.DeepCopy(), tc.probe.DeepCopy(), tc.probe.DeepCopy()
			before := rev.DeepCopy()
			d := MakeDeployment(rev, 600, 1)
			if errs := apiServerErrors(t, d.Spec.Template); len(errs) != 0 {
				t.Errorf("the API server would refuse the Deployment: %v", errs.ToAggregate())
			}
			liveness := tc.liveness
			if liveness == nil {
				liveness = tc.readiness
			}
			got := d.Spec.Template.Spec.Containers[0]
			for _, p := range []struct {
				name      string
				got, want *corev1.Probe
			}{{"readinessProbe", got.ReadinessProbe, tc.readiness}, {"livenessProbe", got.LivenessProbe, liveness}, {"startupProbe", got.StartupProbe, liveness}} {
				want := p.want.DeepCopy()
				defaultProbe(want)
				if !equality.Semantic.DeepEqual(p.got, want) {
					t.Errorf("%s:\n got %s\nwant %s", p.name, describe(p.got), describe(want))
				}
			}
			if !equality.Semantic.DeepEqual(rev, before) {
				t.Error("MakeDeployment changed the Revision")
			}
		})
	}
}

// apiServerErrors is what the API server says of a pod template: its defaults, then
// its validation.
func apiServerErrors(t *testing.T, tmpl corev1.PodTemplateSpec) field.ErrorList {
	t.Helper()
	pt := &corev1.PodTemplate{Template: *tmpl.DeepCopy()}
	k8scorev1.SetObjectDefaults_PodTemplate(pt)
	var internal core.PodTemplateSpec
	if err := k8scorev1.Convert_v1_PodTemplateSpec_To_core_PodTemplateSpec(&pt.Template, &internal, nil); err != nil {
		t.Fatal(err)
	}
	return validation.ValidatePodTemplateSpec(&internal, field.NewPath("template"), validation.PodValidationOptions{})
}

func describe(p *corev1.Probe) string {
	b, _ := json.Marshal(p)
	return string(b)
}
