package programs

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// What the pod's status says is what a kubelet's would, so that kubectl get pod (whose
// STATUS column reads the init containers' states: Init:0/1, Init:Error,
// Init:CrashLoopBackOff), Deployments and the Revision reconciler read it as they do
// on a cluster.

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
	for _, c := range r.inits {
		cs := *c.status.DeepCopy()
		cs.Ready = c.ready
		st.InitContainerStatuses = append(st.InitContainerStatuses, cs)
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
		initializedCondition(st.InitContainerStatuses, r.started, r.initialized),
		{Type: corev1.ContainersReady, Status: readyStatus, LastTransitionTime: since},
		{Type: corev1.PodReady, Status: readyStatus, LastTransitionTime: since},
	}
	p.Status = st
	return p
}

// initializedCondition is the pod's Initialized condition as the kubelet reports it
// from its init containers' statuses: True once every one has completed (exited 0),
// since initialized, else False since started, naming those that have not.
func initializedCondition(inits []corev1.ContainerStatus, started, initialized metav1.Time) corev1.PodCondition {
	var incomplete []string
	for _, cs := range inits {
		if t := cs.State.Terminated; t == nil || t.ExitCode != 0 {
			incomplete = append(incomplete, cs.Name)
		}
	}
	if len(incomplete) > 0 {
		return corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionFalse, LastTransitionTime: started,
			Reason: "ContainersNotInitialized", Message: fmt.Sprintf("containers with incomplete status: [%s]", strings.Join(incomplete, " "))}
	}
	since := started
	if !initialized.IsZero() {
		since = initialized
	}
	return corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: since}
}

// containerLog is the log file of a container's current run, or its previous one.
func (r *podRunner) containerLog(name string, previous bool) (path string, running func() bool, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range r.all() {
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
