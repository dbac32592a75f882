package resources

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// kubeletProbe turns a probe of a Revision's container, in Knative's meaning, into
// one the API server accepts in a Deployment and the kubelet carries out with the
// same meaning. In Knative the queue-proxy runs the readiness probe (httpGet,
// tcpSocket, grpc) itself against the container, and only liveness and startup
// probes reach the kubelet (knative/serving pkg/reconciler/revision/resources:
// deploy.go removes the readiness probe, queue.go's applyReadinessProbeDefaults
// rewrites it for the queue-proxy); Ferry has no queue-proxy, so the kubelet runs all
// three, and what Knative's prober tolerates is written here as the kubelet's:
//   - no handler means a TCP check of the serving port, and port 0 or no port in a
//     tcpSocket, httpGet or grpc probe means the serving port: Knative's webhook
//     writes `readinessProbe: {tcpSocket: {port: 0}}` into every Revision;
//   - httpGet.scheme in any case ("http" is as good as "HTTP" to Knative's prober,
//     which builds a URL from it): upper case, the only case the API server accepts;
//   - a readiness probe's host is dropped: Knative's prober ignores it and checks the
//     container itself (127.0.0.1 in the pod), which is the pod's address to the
//     kubelet, the address it probes without one. A liveness or startup probe's host
//     is the kubelet's in Knative too, and kept;
//   - a readiness probe's terminationGracePeriodSeconds is dropped: Knative accepts
//     it and its prober has no use for it, and the API server refuses it there;
//   - the numbers the API server would default are filled in (defaultProbe).
//
// The rest is kept as the user wrote it: path, httpHeaders, a port by name (the
// container's port keeps its name) or by number (another port of the container, as
// Knative probes it), grpc.service, exec.
func kubeletProbe(p *corev1.Probe, port int32, readiness bool) {
	if p == nil {
		return
	}
	h := &p.ProbeHandler
	if h.Exec == nil && h.HTTPGet == nil && h.TCPSocket == nil && h.GRPC == nil {
		h.TCPSocket = &corev1.TCPSocketAction{}
	}
	switch {
	case h.TCPSocket != nil:
		if unsetPort(h.TCPSocket.Port) {
			h.TCPSocket.Port = intstr.FromInt32(port)
		}
		if readiness {
			h.TCPSocket.Host = ""
		}
	case h.HTTPGet != nil:
		if unsetPort(h.HTTPGet.Port) {
			h.HTTPGet.Port = intstr.FromInt32(port)
		}
		h.HTTPGet.Scheme = corev1.URIScheme(strings.ToUpper(string(h.HTTPGet.Scheme)))
		if readiness {
			h.HTTPGet.Host = ""
		}
	case h.GRPC != nil && h.GRPC.Port == 0:
		h.GRPC.Port = port
	}
	if readiness {
		p.TerminationGracePeriodSeconds = nil
	}
	defaultProbe(p)
}

func unsetPort(p intstr.IntOrString) bool {
	if p.Type == intstr.String {
		return p.StrVal == ""
	}
	return p.IntVal == 0
}

// defaultProbe fills in the API server's defaults for a probe's numbers. The reconciler
// compares Deployments with DeepDerivative, which skips unset pointers and strings but
// not zero integers: without these every comparison would see a change.
func defaultProbe(p *corev1.Probe) {
	for _, f := range []struct {
		field *int32
		value int32
	}{{&p.TimeoutSeconds, 1}, {&p.PeriodSeconds, 10}, {&p.SuccessThreshold, 1}, {&p.FailureThreshold, 3}} {
		if *f.field == 0 {
			*f.field = f.value
		}
	}
}
