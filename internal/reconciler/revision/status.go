package revision

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// Condition reasons, as in Knative.
const (
	ReasonDeploying                = "Deploying"
	ReasonProgressDeadlineExceeded = "ProgressDeadlineExceeded"
	ReasonContainerMissing         = "ContainerMissing"
	ReasonNotOwned                 = "NotOwned"
	ReasonNoTraffic                = "NoTraffic"
)

// imagePullReasons are the kubelet's waiting reasons for an image it cannot get.
var imagePullReasons = map[string]bool{
	"ErrImagePull":      true,
	"ImagePullBackOff":  true,
	"InvalidImageName":  true,
	"ErrImageNeverPull": true,
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

	switch {
	case d.Status.ObservedGeneration < d.Generation:
		m.MarkUnknown(v1.RevisionConditionResourcesAvailable, ReasonDeploying, "")
	case isAvailable(d):
		m.MarkTrue(v1.RevisionConditionResourcesAvailable)
		m.MarkTrue(v1.RevisionConditionContainerHealthy)
	case progressDeadlineExceeded(d):
		m.MarkFalse(v1.RevisionConditionResourcesAvailable, ReasonProgressDeadlineExceeded,
			"Unable to create pods for more than %d seconds.", deref(d.Spec.ProgressDeadlineSeconds))
	default:
		m.MarkUnknown(v1.RevisionConditionResourcesAvailable, ReasonDeploying, "")
	}
	if !isAvailable(d) {
		propagatePods(m, pods)
	}

	switch {
	case d.Status.ReadyReplicas > 0:
		m.MarkTrue(v1.RevisionConditionActive)
	case desired == 0:
		m.MarkFalse(v1.RevisionConditionActive, ReasonNoTraffic, "The target is not receiving traffic.")
	default:
		m.MarkUnknown(v1.RevisionConditionActive, ReasonDeploying, "")
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
			return c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded"
		}
	}
	return false
}

// propagatePods explains why pods are not ready, from the first pod that shows a
// reason: it cannot be scheduled, its image cannot be pulled, or a container exits.
// Pods that merely have not started yet leave the conditions as they are.
func propagatePods(m duck.ConditionManager, pods []corev1.Pod) {
	for i := range pods {
		if explainPod(m, &pods[i]) {
			return
		}
	}
}

func explainPod(m duck.ConditionManager, pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			m.MarkFalse(v1.RevisionConditionResourcesAvailable, c.Reason, "%s", c.Message)
			return true
		}
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if w := cs.State.Waiting; w != nil && imagePullReasons[w.Reason] {
			detail := w.Message
			if detail == "" {
				detail = w.Reason
			}
			m.MarkFalse(v1.RevisionConditionContainerHealthy, ReasonContainerMissing, "Unable to fetch image %q: %s", cs.Image, detail)
			return true
		}
		t := cs.State.Terminated
		if t == nil {
			t = cs.LastTerminationState.Terminated
		}
		if t != nil {
			m.MarkFalse(v1.RevisionConditionContainerHealthy, fmt.Sprintf("ExitCode%d", t.ExitCode), "Container failed with: %s", exitMessage(t))
			return true
		}
	}
	return false
}

func exitMessage(t *corev1.ContainerStateTerminated) string {
	switch {
	case t.Message != "":
		return t.Message
	case t.ExitCode == 0:
		return "container exited with no error"
	case t.Reason != "":
		return t.Reason
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
