package explain

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDescribePodInitContainers: an init container that completed is no reason a pod
// is not ready; one that fails is.
func TestDescribePodInitContainers(t *testing.T) {
	completed := corev1.ContainerStatus{Name: "migrate", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}
	starting := corev1.ContainerStatus{Name: "user-container", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{
		Phase: corev1.PodRunning, InitContainerStatuses: []corev1.ContainerStatus{completed}, ContainerStatuses: []corev1.ContainerStatus{starting}}}
	if line, _, _ := describePod(pod); strings.Contains(line, "migrate") {
		t.Errorf("a completed init container named as a reason: %q", line)
	}
	if podSaysWhy(*pod) {
		t.Error("a pod whose init container completed and whose container starts says why it is not ready")
	}
	pod.Status.Phase = corev1.PodPending
	pod.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "migrate", RestartCount: 2,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
	pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "user-container",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}}}
	if line, _, _ := describePod(pod); !strings.Contains(line, "container migrate waiting: CrashLoopBackOff") ||
		!strings.Contains(line, "(last exit 1 Error, 2 restarts)") {
		t.Errorf("a failing init container: %q", line)
	}
	if !podSaysWhy(*pod) {
		t.Error("a pod whose init container fails does not say why")
	}
}
