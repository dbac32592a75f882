package programs

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func (r *podRunner) notify() { r.n.notify(r.snapshot()) }

// snapshot is the pod with the status this node reports for it.
func (r *podRunner) snapshot() *corev1.Pod {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := r.pod.DeepCopy()
	st := corev1.PodStatus{Phase: r.phase, HostIP: nodeIP, HostIPs: []corev1.HostIP{{IP: nodeIP}}, StartTime: &r.started}
	if ip := r.podIP(); ip != "" {
		st.PodIP, st.PodIPs = ip, []corev1.PodIP{{IP: ip}}
	}
	ready := r.phase == corev1.PodRunning
	for _, c := range r.ctrs {
		cs := *c.status.DeepCopy()
		cs.Ready = c.ready
		ready = ready && c.ready
		st.ContainerStatuses = append(st.ContainerStatuses, cs)
	}
	if ready && r.readySince.IsZero() {
		r.readySince = metav1.Now()
	}
	if !ready {
		r.readySince = metav1.Time{}
	}
	readyStatus, since := corev1.ConditionFalse, r.started
	if ready {
		readyStatus, since = corev1.ConditionTrue, r.readySince
	}
	st.Conditions = []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: r.started},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: r.started},
		{Type: corev1.ContainersReady, Status: readyStatus, LastTransitionTime: since},
		{Type: corev1.PodReady, Status: readyStatus, LastTransitionTime: since},
	}
	p.Status = st
	return p
}

// containerLog is the log file of a container's current run, or its previous one.
func (r *podRunner) containerLog(name string, previous bool) (path string, running func() bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.ctrs {
		if c.spec.Name != name {
			continue
		}
		n := len(c.logs)
		switch {
		case previous && n >= 2:
			return c.logs[n-2], func() bool { return false }, nil
		case !previous && n >= 1:
			current := c.logs[n-1]
			return current, func() bool {
				r.mu.Lock()
				defer r.mu.Unlock()
				return c.running && c.logs[len(c.logs)-1] == current
			}, nil
		}
		return "", nil, fmt.Errorf("container %q in pod %s/%s has not started", name, r.pod.Namespace, r.pod.Name)
	}
	return "", nil, fmt.Errorf("pod %s/%s has no container %q", r.pod.Namespace, r.pod.Name, name)
}
