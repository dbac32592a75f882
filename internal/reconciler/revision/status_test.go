package revision

import (
	"k8s.io/utils/ptr"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

func deployment(replicas, ready int32, conds ...appsv1.DeploymentCondition) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	d.Generation, d.Status.ObservedGeneration = 1, 1
	d.Spec.Replicas = &replicas
	d.Spec.ProgressDeadlineSeconds = ptr.To(int32(600))
	d.Status.ReadyReplicas = ready
	d.Status.Conditions = conds
	return d
}

var (
	available    = appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue}
	unavailable  = appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionFalse}
	deadlineGone = appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: v1.ReasonProgressDeadlineExceeded}
)

// volumeWait is how the program node's containers wait for a volume it cannot write.
var volumeWait = &corev1.ContainerStateWaiting{Reason: "CreateContainerConfigError",
	Message: `volume "config": configmap "settings": configmaps "settings" not found`}

func pod(cs corev1.ContainerStatus, conds ...corev1.PodCondition) corev1.Pod {
	cs.Name = "user-container"
	return corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{cs}, Conditions: conds}}
}

func TestPropagateDeployment(t *testing.T) {
	type cond struct {
		status corev1.ConditionStatus
		reason string
	}
	tests := []struct {
		name      string
		d         *appsv1.Deployment
		pods      []corev1.Pod
		ready     cond
		resources cond
		container cond
		message   string
		// wasAvailable: the Revision's pods were available before (it was Ready).
		wasAvailable bool
		// wasFailed: a container of it failed since (ContainerHealthy=False).
		wasFailed bool
	}{{
		name:      "available",
		d:         deployment(1, 1, available),
		ready:     cond{corev1.ConditionTrue, ""},
		resources: cond{corev1.ConditionTrue, ""},
		container: cond{corev1.ConditionTrue, ""},
	}, {
		name:      "deploying, pod starting",
		d:         deployment(1, 0, unavailable),
		pods:      []corev1.Pod{pod(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}})},
		ready:     cond{corev1.ConditionUnknown, v1.ReasonDeploying},
		resources: cond{corev1.ConditionUnknown, v1.ReasonDeploying},
		container: cond{corev1.ConditionUnknown, ""},
	}, {
		name: "deployment not observed yet",
		d: func() *appsv1.Deployment {
			d := deployment(1, 1, available)
			d.Generation = 2
			return d
		}(),
		ready:     cond{corev1.ConditionUnknown, v1.ReasonDeploying},
		resources: cond{corev1.ConditionUnknown, v1.ReasonDeploying},
		container: cond{corev1.ConditionUnknown, ""},
	}, {
		name: "image cannot be pulled",
		d:    deployment(1, 0, unavailable),
		pods: []corev1.Pod{pod(corev1.ContainerStatus{Image: "ferry.test/image-pull-error",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ImagePullBackOff", Message: "Back-off pulling image"}}})},
		ready:     cond{corev1.ConditionFalse, v1.ReasonContainerMissing},
		resources: cond{corev1.ConditionUnknown, v1.ReasonDeploying},
		container: cond{corev1.ConditionFalse, v1.ReasonContainerMissing},
		message:   `Unable to fetch image "ferry.test/image-pull-error": the kubelet cannot pull it.`,
	}, {
		name: "volumes where the program node runs plain processes",
		d:    deployment(1, 0, unavailable),
		pods: []corev1.Pod{pod(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: v1.ReasonNeedsIsolation, Message: "volume config at /etc/app (container user-container): ferry up runs programs here as plain processes"}}})},
		ready:     cond{corev1.ConditionFalse, v1.ReasonNeedsIsolation},
		resources: cond{corev1.ConditionUnknown, v1.ReasonDeploying},
		container: cond{corev1.ConditionFalse, v1.ReasonNeedsIsolation},
		message:   "volume config at /etc/app (container user-container): ferry up runs programs here as plain processes",
	}, {
		name: "container crash-loops",
		d:    deployment(1, 0, unavailable),
		pods: []corev1.Pod{pod(corev1.ContainerStatus{
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}},
		})},
		ready:     cond{corev1.ConditionFalse, v1.ExitCodeReason(1)},
		resources: cond{corev1.ConditionUnknown, v1.ReasonDeploying},
		container: cond{corev1.ConditionFalse, v1.ExitCodeReason(1)},
		message:   "Container failed with: Error (exit code 1)",
	}, {
		name: "init container crash-loops",
		d:    deployment(1, 0, unavailable),
		pods: []corev1.Pod{func() corev1.Pod {
			p := pod(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}})
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{
				{Name: "migrate", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}},
				{Name: "seed", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
					LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Reason: "Error", Message: "no table"}}},
			}
			return p
		}()},
		ready:     cond{corev1.ConditionFalse, v1.ExitCodeReason(2)},
		resources: cond{corev1.ConditionUnknown, v1.ReasonDeploying},
		container: cond{corev1.ConditionFalse, v1.ExitCodeReason(2)},
		message:   "Init container seed failed with: no table",
	}, {
		name: "init containers completed, the container starting",
		d:    deployment(1, 0, unavailable),
		pods: []corev1.Pod{func() corev1.Pod {
			p := pod(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}})
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "migrate",
				State:                corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}
			return p
		}()},
		ready:     cond{corev1.ConditionUnknown, v1.ReasonDeploying},
		resources: cond{corev1.ConditionUnknown, v1.ReasonDeploying},
		container: cond{corev1.ConditionUnknown, ""},
	}, {
		name: "pod cannot be scheduled",
		d:    deployment(1, 0, unavailable),
		pods: []corev1.Pod{pod(corev1.ContainerStatus{},
			corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/1 nodes are available"})},
		ready:     cond{corev1.ConditionFalse, "Unschedulable"},
		resources: cond{corev1.ConditionFalse, "Unschedulable"},
		container: cond{corev1.ConditionUnknown, ""},
		message:   "0/1 nodes are available",
	}, {
		name:      "progress deadline exceeded",
		d:         deployment(1, 0, unavailable, deadlineGone),
		ready:     cond{corev1.ConditionFalse, v1.ReasonProgressDeadlineExceeded},
		resources: cond{corev1.ConditionFalse, v1.ReasonProgressDeadlineExceeded},
		container: cond{corev1.ConditionUnknown, ""},
		message:   "Unable to create pods for more than 600 seconds.",
	}, {
		name:      "a container waits for its volume, within the progress deadline",
		d:         deployment(1, 0, unavailable),
		pods:      []corev1.Pod{pod(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: volumeWait}})},
		ready:     cond{corev1.ConditionUnknown, v1.ReasonDeploying},
		resources: cond{corev1.ConditionUnknown, v1.ReasonDeploying},
		container: cond{corev1.ConditionUnknown, ""},
	}, {
		// As Knative's revision reconciler: the waiting reason replaces the deadline's.
		name:      "a container waits for its volume past the progress deadline",
		d:         deployment(1, 0, unavailable, deadlineGone),
		pods:      []corev1.Pod{pod(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: volumeWait}})},
		ready:     cond{corev1.ConditionFalse, "CreateContainerConfigError"},
		resources: cond{corev1.ConditionFalse, "CreateContainerConfigError"},
		container: cond{corev1.ConditionUnknown, ""},
		message:   volumeWait.Message,
	}, {
		name: "an init container waits for its volume past the progress deadline",
		d:    deployment(1, 0, unavailable, deadlineGone),
		pods: []corev1.Pod{func() corev1.Pod {
			p := pod(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}})
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "seed", State: corev1.ContainerState{Waiting: volumeWait}}}
			return p
		}()},
		ready:     cond{corev1.ConditionFalse, "CreateContainerConfigError"},
		resources: cond{corev1.ConditionFalse, "CreateContainerConfigError"},
		container: cond{corev1.ConditionUnknown, ""},
		message:   volumeWait.Message,
	}, {
		name: "pods refused by a ResourceQuota",
		d: deployment(1, 0, unavailable, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue,
			Reason: "FailedCreate", Message: `pods "hello-00001-deployment-5d8f" is forbidden: exceeded quota: no-pods`}),
		ready:     cond{corev1.ConditionFalse, "FailedCreate"},
		resources: cond{corev1.ConditionFalse, "FailedCreate"},
		container: cond{corev1.ConditionUnknown, ""},
		message:   `pods "hello-00001-deployment-5d8f" is forbidden: exceeded quota: no-pods`,
	}, {
		name: "scaled by the autoscaler, not observed yet",
		d: func() *appsv1.Deployment {
			d := deployment(3, 1, available)
			d.Generation = 2
			return d
		}(),
		wasAvailable: true,
		ready:        cond{corev1.ConditionTrue, ""},
		resources:    cond{corev1.ConditionTrue, ""},
		container:    cond{corev1.ConditionTrue, ""},
	}, {
		name:         "scaling up from zero, the new pod starting",
		d:            deployment(1, 0, unavailable),
		pods:         []corev1.Pod{pod(corev1.ContainerStatus{State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}})},
		wasAvailable: true,
		ready:        cond{corev1.ConditionTrue, ""},
		resources:    cond{corev1.ConditionTrue, ""},
		container:    cond{corev1.ConditionTrue, ""},
	}, {
		name: "scaled to zero, the leaving pod's container ended by SIGTERM",
		d: func() *appsv1.Deployment {
			d := deployment(0, 0, available)
			d.Generation = 2
			return d
		}(),
		pods: []corev1.Pod{func() corev1.Pod {
			p := pod(corev1.ContainerStatus{State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}})
			p.DeletionTimestamp = &metav1.Time{Time: time.Now()}
			return p
		}()},
		wasAvailable: true,
		ready:        cond{corev1.ConditionTrue, ""},
		resources:    cond{corev1.ConditionTrue, ""},
		container:    cond{corev1.ConditionTrue, ""},
	}, {
		name:         "available again after a container failed",
		d:            deployment(1, 1, available),
		wasAvailable: true,
		wasFailed:    true,
		ready:        cond{corev1.ConditionTrue, ""},
		resources:    cond{corev1.ConditionTrue, ""},
		container:    cond{corev1.ConditionTrue, ""},
	}, {
		name:         "scaling up, but the progress deadline passed",
		d:            deployment(2, 1, unavailable, deadlineGone),
		wasAvailable: true,
		ready:        cond{corev1.ConditionFalse, v1.ReasonProgressDeadlineExceeded},
		resources:    cond{corev1.ConditionFalse, v1.ReasonProgressDeadlineExceeded},
		container:    cond{corev1.ConditionTrue, ""},
		message:      "Unable to create pods for more than 600 seconds.",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			status := &v1.RevisionStatus{}
			m := v1.RevisionConditions.Manage(&status.Status)
			m.InitializeConditions()
			if tc.wasAvailable {
				m.MarkTrue(v1.RevisionConditionResourcesAvailable)
				m.MarkTrue(v1.RevisionConditionContainerHealthy)
			}
			if tc.wasFailed {
				m.MarkFalse(v1.RevisionConditionContainerHealthy, v1.ExitCodeReason(1), "Container failed with: boom")
			}
			propagateDeployment(status, tc.d, tc.pods)
			for _, c := range []struct {
				typ  string
				want cond
			}{{"Ready", tc.ready}, {"ResourcesAvailable", tc.resources}, {"ContainerHealthy", tc.container}} {
				got := status.GetCondition(v1.RevisionConditionReady)
				switch c.typ {
				case "ResourcesAvailable":
					got = status.GetCondition(v1.RevisionConditionResourcesAvailable)
				case "ContainerHealthy":
					got = status.GetCondition(v1.RevisionConditionContainerHealthy)
				}
				if got.Status != c.want.status || got.Reason != c.want.reason {
					t.Errorf("%s = %s/%s, want %s/%s", c.typ, got.Status, got.Reason, c.want.status, c.want.reason)
				}
			}
			if tc.message != "" && status.GetCondition(v1.RevisionConditionReady).Message != tc.message {
				t.Errorf("message = %q, want %q", status.GetCondition(v1.RevisionConditionReady).Message, tc.message)
			}
			if *status.DesiredReplicas != *tc.d.Spec.Replicas || *status.ActualReplicas != tc.d.Status.ReadyReplicas {
				t.Errorf("replicas = %d/%d", *status.ActualReplicas, *status.DesiredReplicas)
			}
		})
	}
}

// TestInitialScaleNeverAchieved: a PodAutoscaler that gave up on a Revision's first
// pods scales its Deployment to zero, which then reads as available; the Revision
// stays failed, as Knative's does, where it turned Ready. One whose pods were up once
// and scaled to zero for want of traffic stays Ready.
func TestInitialScaleNeverAchieved(t *testing.T) {
	for _, tc := range []struct {
		name        string
		initialized bool
		wantReady   corev1.ConditionStatus
		wantReason  string
	}{
		{"timed out before the first pods", false, corev1.ConditionFalse, v1.ReasonProgressDeadlineExceeded},
		{"scaled to zero after serving", true, corev1.ConditionTrue, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status := &v1.RevisionStatus{}
			m := v1.RevisionConditions.Manage(&status.Status)
			m.InitializeConditions()
			pa := &av1alpha1.PodAutoscaler{Status: av1alpha1.PodAutoscalerStatus{ServiceName: "hello-00001"}}
			av1alpha1.PodAutoscalerConditions.Manage(&pa.Status.Status).InitializeConditions()
			pa.Status.MarkSKSReady()
			if tc.initialized {
				pa.Status.MarkScaleTargetInitialized()
				pa.Status.MarkInactive(av1alpha1.ReasonNoTraffic, "The target is not receiving traffic.")
				m.MarkTrue(v1.RevisionConditionResourcesAvailable)
				m.MarkTrue(v1.RevisionConditionContainerHealthy)
			} else {
				pa.Status.MarkScaleTargetInitializing()
				pa.Status.MarkInactive(av1alpha1.ReasonTimedOut, av1alpha1.MessageTimedOut)
			}
			d := deployment(0, 0, available)
			propagateDeployment(status, d, nil)
			status.PropagateAutoscalerStatus(pa)
			got := status.GetCondition(v1.RevisionConditionReady)
			if got.Status != tc.wantReady || got.Reason != tc.wantReason {
				t.Errorf("Ready = %s/%s %q, want %s/%s", got.Status, got.Reason, got.Message, tc.wantReady, tc.wantReason)
			}
			if !tc.initialized && got.Message != "Initial scale was never achieved" {
				t.Errorf("message = %q, want Knative's", got.Message)
			}
		})
	}
}
