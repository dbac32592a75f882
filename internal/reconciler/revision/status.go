package revision

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// imagePullReasons are the kubelet's waiting reasons for an image it cannot get.
var imagePullReasons = map[string]bool{
	"ErrImagePull":      true,
	"ImagePullBackOff":  true,
	"InvalidImageName":  true,
	"ErrImageNeverPull": true,
	// Ferry's program node (internal/programs) could not make a program of the
	// image: a ko:// package that does not build, an executable that is gone.
	v1.ReasonErrImageBuild: true,
}

// propagateDeployment propagates the Deployment's status and, while it is not
// available, why its pods are not ready. pods is only consulted then, so the caller
// lists them only if needsPods says so.
func propagateDeployment(status *v1.RevisionStatus, d *appsv1.Deployment, pods []corev1.Pod) {
	status.PropagateDeploymentStatus(d)
	if needsPods(d) {
		propagatePods(status, pods, v1.ProgressDeadlineExceeded(d))
	}
}

// needsPods reports whether propagateDeployment will look at the pods.
func needsPods(d *appsv1.Deployment) bool { return !v1.DeploymentAvailable(d) }

// propagatePods explains why pods are not ready, from the first pod that shows a
// reason. Pods that merely have not started yet leave the conditions as they are
// until the progress deadline has passed (timedOut), and then, as in Knative, say
// what their containers wait with. Pods on their way out are left out: a
// scale-down's SIGTERM ends their containers, which is no failure (the Revision's
// scale to zero read as ExitCode0 and stayed failed).
func propagatePods(status *v1.RevisionStatus, pods []corev1.Pod, timedOut bool) {
	for i := range pods {
		if pods[i].DeletionTimestamp != nil {
			continue
		}
		if p := diagnose(&pods[i], timedOut); p != nil {
			p.mark(status, p.reason, p.message)
			return
		}
	}
}

// podProblem is what a pod shows that keeps it from becoming ready, and the Revision's
// Mark method that says it.
type podProblem struct {
	mark            func(status *v1.RevisionStatus, reason, message string)
	reason, message string
}

// diagnose finds why a pod cannot become ready: it cannot be scheduled, its image
// cannot be pulled, or a container exits; an init container first, as they run first;
// and once the progress deadline has passed (timedOut), what a container waits with
// (a volume or an env var it cannot have: CreateContainerConfigError). It returns nil
// for a healthy or starting pod. Messages do not change with the kubelet's retries
// (ErrImagePull and ImagePullBackOff alternate), so that a stuck pod does not rewrite
// the Revision's status each time.
func diagnose(pod *corev1.Pod, timedOut bool) *podProblem {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return &podProblem{(*v1.RevisionStatus).MarkResourcesUnavailable, c.Reason, c.Message}
		}
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if p := containerProblem(cs, true, timedOut); p != nil {
			return p
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if p := containerProblem(cs, false, timedOut); p != nil {
			return p
		}
	}
	return nil
}

// containerProblem is what keeps a container of a pod (an init container, with init)
// from running, or nil. An init container that exited 0 has completed: only its
// failures count. A container that waits for something else is a problem only once
// the progress deadline has passed (timedOut): until then it may be starting.
func containerProblem(cs corev1.ContainerStatus, init, timedOut bool) *podProblem {
	if w := cs.State.Waiting; w != nil && w.Reason == v1.ReasonErrImageBuild {
		return &podProblem{(*v1.RevisionStatus).MarkContainerUnhealthy, v1.ReasonContainerMissing,
			fmt.Sprintf("Unable to fetch image %q: %s", cs.Image, w.Message)}
	}
	if w := cs.State.Waiting; w != nil && w.Reason == v1.ReasonNeedsIsolation {
		return &podProblem{(*v1.RevisionStatus).MarkContainerUnhealthy, v1.ReasonNeedsIsolation, w.Message}
	}
	if w := cs.State.Waiting; w != nil && imagePullReasons[w.Reason] {
		return &podProblem{(*v1.RevisionStatus).MarkContainerUnhealthy, v1.ReasonContainerMissing,
			fmt.Sprintf("Unable to fetch image %q: the kubelet cannot pull it.", cs.Image)}
	}
	t := cs.State.Terminated
	if init && t != nil && t.ExitCode == 0 {
		return nil
	}
	if t == nil {
		t = cs.LastTerminationState.Terminated
	}
	switch {
	case t == nil && timedOut && cs.State.Waiting != nil:
		w := cs.State.Waiting
		return &podProblem{(*v1.RevisionStatus).MarkResourcesUnavailable, w.Reason, w.Message}
	case t == nil, init && t.ExitCode == 0:
		return nil
	case init:
		return &podProblem{(*v1.RevisionStatus).MarkContainerUnhealthy, v1.ExitCodeReason(t.ExitCode),
			fmt.Sprintf("Init container %s failed with: %s", cs.Name, exitMessage(t))}
	}
	return &podProblem{(*v1.RevisionStatus).MarkContainerUnhealthy, v1.ExitCodeReason(t.ExitCode),
		"Container failed with: " + exitMessage(t)}
}

// troubled is diagnose's reason, "" for none: the part of a pod that pod events need
// to wake the Revision for (the Deployment's status covers pods that do well).
func troubled(pod *corev1.Pod) string {
	if p := diagnose(pod, false); p != nil {
		return p.reason
	}
	return ""
}

func exitMessage(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Message != "":
		return t.Message
	case t.ExitCode == 0:
		return "container exited with no error"
	case t.Reason != "":
		return fmt.Sprintf("%s (exit code %d)", t.Reason, t.ExitCode)
	}
	return fmt.Sprintf("container exited with code %d", t.ExitCode)
}

// sameCondition compares what a condition says, not when it was last seen.
func sameCondition(a, b *duck.Condition) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
}
