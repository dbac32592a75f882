package programs

import (
	corev1 "k8s.io/api/core/v1"
)

// Where pods share the host's IP (plain processes), the serving container listens on
// a port the node gives it rather than on its containerPort: probes, port-forward and
// the gateway follow it there.

// servingContainer is the index of pod's container that serves requests, the one with
// a port (Knative allows one), and that port; -1 if none has one.
func servingContainer(pod *corev1.Pod) (int, int32) {
	for i, c := range pod.Spec.Containers {
		if len(c.Ports) > 0 {
			return i, c.Ports[0].ContainerPort
		}
	}
	return -1, 0
}

// retarget makes a probe of the serving container check the port the node picked for
// it rather than the containerPort: a port given by number or by a name that resolves
// to from moves to to. It returns copies; ctr gets to as its first port's, so that the
// kubelet's prober resolves names to it.
func retarget(p *corev1.Probe, ctr *corev1.Container, from, to int32) (*corev1.Probe, *corev1.Container) {
	if p == nil {
		return nil, ctr
	}
	p, ctr = p.DeepCopy(), ctr.DeepCopy()
	for i, cp := range ctr.Ports {
		if cp.ContainerPort == from {
			ctr.Ports[i].ContainerPort = to
		}
	}
	move := func(port *int32) {
		if *port == from {
			*port = to
		}
	}
	h := &p.ProbeHandler
	switch {
	case h.HTTPGet != nil:
		if h.HTTPGet.Port.IntVal == from && h.HTTPGet.Port.StrVal == "" {
			h.HTTPGet.Port.IntVal = to
		}
	case h.TCPSocket != nil:
		if h.TCPSocket.Port.IntVal == from && h.TCPSocket.Port.StrVal == "" {
			h.TCPSocket.Port.IntVal = to
		}
	case h.GRPC != nil:
		move(&h.GRPC.Port)
	}
	return p, ctr
}
