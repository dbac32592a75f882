package v1

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestProtocol(t *testing.T) {
	for _, tc := range []struct {
		containers []corev1.Container
		want       Protocol
	}{
		{want: ProtocolHTTP1},
		{containers: []corev1.Container{{}}, want: ProtocolHTTP1},
		{containers: []corev1.Container{{Ports: []corev1.ContainerPort{{Name: "h2c", ContainerPort: 9000}}}}, want: ProtocolH2C},
		{containers: []corev1.Container{{Ports: []corev1.ContainerPort{{Name: "http1"}}}}, want: ProtocolHTTP1},
		// The serving container is the one with a port; only its first port counts.
		{containers: []corev1.Container{{Name: "sidecar"}, {Ports: []corev1.ContainerPort{{Name: "h2c"}}}}, want: ProtocolH2C},
		{containers: []corev1.Container{{Ports: []corev1.ContainerPort{{Name: "http1"}, {Name: "h2c"}}}}, want: ProtocolHTTP1},
	} {
		rs := &RevisionSpec{PodSpec: corev1.PodSpec{Containers: tc.containers}}
		if got := rs.Protocol(); got != tc.want {
			t.Errorf("containers %+v: %q, want %q", tc.containers, got, tc.want)
		}
	}
}
