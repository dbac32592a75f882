package revision

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
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

// propagateDeployment sets replicas, ResourcesAvailable, ContainerHealthy and Active
// from the Deployment and, while it is not available, from its pods. pods is only
// consulted then, so the caller lists them only if needsPods says so.
func propagateDeployment(status *v1.RevisionStatus, m duck.ConditionManager, d *appsv1.Deployment, pods []corev1.Pod) {
	desired := int32(1)
	if d.Spec.Replicas != nil {
		desired = *d.Spec.Replicas
	}
	status.DesiredReplicas = &desired
	status.ActualReplicas = ptr(d.Status.ReadyReplicas)

	// Once its pods were available, a Revision stays so while the autoscaler scales
	// it: a new replica count is a Deployment generation not yet observed, and then
	// Available=False while the new pods start (Knative reads Progressing, not
	// Available, for the same reason). Only a failure takes it back.
	wasAvailable := m.GetCondition(v1.RevisionConditionResourcesAvailable).IsTrue()
	switch {
	case wasAvailable && !progressDeadlineExceeded(d) && replicaFailure(d) == nil:
		if isAvailable(d) {
			// A container that failed while the pods were available (a crash, since
			// restarted) is healthy again once they all are.
			m.MarkTrue(v1.RevisionConditionContainerHealthy)
		}
	case d.Status.ObservedGeneration < d.Generation:
		status.MarkDeploying()
	case isAvailable(d):
		m.MarkTrue(v1.RevisionConditionResourcesAvailable)
		m.MarkTrue(v1.RevisionConditionContainerHealthy)
	case progressDeadlineExceeded(d):
		status.MarkProgressDeadlineExceeded(deref(d.Spec.ProgressDeadlineSeconds))
	case replicaFailure(d) != nil:
		// The ReplicaSet cannot create pods (a ResourceQuota, a policy, RBAC): say so
		// now, with Kubernetes' reason and message, not after the progress deadline.
		c := replicaFailure(d)
		m.MarkFalse(v1.RevisionConditionResourcesAvailable, c.Reason, "%s", c.Message)
	default:
		status.MarkDeploying()
	}
	if !isAvailable(d) {
		propagatePods(m, pods)
	}

	switch {
	case d.Status.ReadyReplicas > 0:
		m.MarkTrue(v1.RevisionConditionActive)
	case desired == 0:
		status.MarkInactiveNoTraffic()
	default:
		status.MarkActiveDeploying()
	}
}

// needsPods reports whether propagateDeployment will look at the pods.
func needsPods(d *appsv1.Deployment) bool { return !isAvailable(d) }

func isAvailable(d *appsv1.Deployment) bool {
	if d.Status.ObservedGeneration < d.Generation {
		return false
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func progressDeadlineExceeded(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			return c.Status == corev1.ConditionFalse && c.Reason == v1.ReasonProgressDeadlineExceeded
		}
	}
	return false
}

// replicaFailure is the Deployment's ReplicaFailure condition when it is True.
func replicaFailure(d *appsv1.Deployment) *appsv1.DeploymentCondition {
	for i, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return &d.Status.Conditions[i]
		}
	}
	return nil
}

// propagatePods explains why pods are not ready, from the first pod that shows a
// reason. Pods that merely have not started yet leave the conditions as they are, and
// so do pods on their way out: a scale-down's SIGTERM ends their containers, which is
// no failure (the Revision's scale to zero read as ExitCode0 and stayed failed).
func propagatePods(m duck.ConditionManager, pods []corev1.Pod) {
	for i := range pods {
		if pods[i].DeletionTimestamp != nil {
			continue
		}
		if p := diagnose(&pods[i]); p != nil {
			m.MarkFalse(p.condition, p.reason, "%s", p.message)
			return
		}
	}
}

// podProblem is what a pod shows that keeps it from becoming ready.
type podProblem struct {
	condition       duck.ConditionType
	reason, message string
}

// diagnose finds why a pod cannot become ready: it cannot be scheduled, its image
// cannot be pulled, or a container exits; an init container first, as they run first.
// It returns nil for a healthy or starting pod. Messages do not change with the
// kubelet's retries (ErrImagePull and ImagePullBackOff alternate), so that a stuck pod
// does not rewrite the Revision's status each time.
func diagnose(pod *corev1.Pod) *podProblem {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return &podProblem{v1.RevisionConditionResourcesAvailable, c.Reason, c.Message}
		}
	}
	for _, cs := range pod.Status.InitContainerStatuses {
		if p := containerProblem(cs, true); p != nil {
			return p
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if p := containerProblem(cs, false); p != nil {
			return p
		}
	}
	return nil
}

// containerProblem is what keeps a container of a pod (an init container, with init)
// from running, or nil. An init container that exited 0 has completed: only its
// failures count.
func containerProblem(cs corev1.ContainerStatus, init bool) *podProblem {
	if w := cs.State.Waiting; w != nil && w.Reason == v1.ReasonErrImageBuild {
		return &podProblem{v1.RevisionConditionContainerHealthy, v1.ReasonContainerMissing,
			fmt.Sprintf("Unable to fetch image %q: %s", cs.Image, w.Message)}
	}
	if w := cs.State.Waiting; w != nil && w.Reason == v1.ReasonNeedsIsolation {
		return &podProblem{v1.RevisionConditionContainerHealthy, v1.ReasonNeedsIsolation, w.Message}
	}
	if w := cs.State.Waiting; w != nil && imagePullReasons[w.Reason] {
		return &podProblem{v1.RevisionConditionContainerHealthy, v1.ReasonContainerMissing,
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
	case t == nil, init && t.ExitCode == 0:
		return nil
	case init:
		return &podProblem{v1.RevisionConditionContainerHealthy, v1.ExitCodeReason(t.ExitCode),
			fmt.Sprintf("Init container %s failed with: %s", cs.Name, exitMessage(t))}
	}
	return &podProblem{v1.RevisionConditionContainerHealthy, v1.ExitCodeReason(t.ExitCode),
		"Container failed with: " + exitMessage(t)}
}

// troubled is diagnose's reason, "" for none: the part of a pod that pod events need
// to wake the Revision for (the Deployment's status covers pods that do well).
func troubled(pod *corev1.Pod) string {
	if p := diagnose(pod); p != nil {
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

func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

func ptr[T any](v T) *T { return &v }

// propagateAutoscaler mirrors the PodAutoscaler, which owns the scale: the replicas it
// wants and sees, and its Active condition with Knative's reasons (NoTraffic at zero,
// Queued while waking, TimedOut). A Revision at zero stays Ready: Active does not count.
func propagateAutoscaler(status *v1.RevisionStatus, m duck.ConditionManager, pa *av1alpha1.PodAutoscaler) {
	if pa == nil {
		return
	}
	if pa.Status.DesiredScale != nil {
		status.DesiredReplicas = ptr(*pa.Status.DesiredScale)
	}
	if pa.Status.ActualScale != nil {
		status.ActualReplicas = ptr(*pa.Status.ActualScale)
	}
	c := pa.Status.GetCondition(av1alpha1.PodAutoscalerConditionActive)
	switch {
	case c == nil:
	case c.Status == corev1.ConditionTrue:
		m.MarkTrue(v1.RevisionConditionActive)
	case c.Status == corev1.ConditionFalse:
		m.MarkFalse(v1.RevisionConditionActive, c.Reason, "%s", c.Message)
	case c.Reason != "" && c.Reason != av1alpha1.ReasonInitializing:
		m.MarkUnknown(v1.RevisionConditionActive, c.Reason, "%s", c.Message)
	}
}

// sameCondition compares what a condition says, not when it was last seen.
func sameCondition(a, b *duck.Condition) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
}
