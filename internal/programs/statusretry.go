package programs

import (
	"context"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// statusConflictRetries bounds the writes again after conflicts; past it, the error
// goes back to virtual-kubelet's queue, which retries with its back-off as before.
const statusConflictRetries = 2

// statusRetries has the node's pod controller write statuses through retryingPods.
// virtual-kubelet writes a pod's status with the resourceVersion of its informer's
// copy, as the pod's sole status writer. A pod's statuses follow each other within
// milliseconds as it starts (waiting, running, ready), so the copy often does not yet
// have the last write's version: the write is refused with a conflict and retried
// through the status queue's back-off, 5 ms and more in the middle of a cold start
// (5 conflicts in 6 cold starts of the example app). A conflict is answered at once
// instead, with the version the API server has: the same write virtual-kubelet would
// make once its informer caught up.
func statusRetries(cfg *node.PodControllerConfig) error {
	cfg.PodClient = retryingPods{cfg.PodClient}
	return nil
}

type retryingPods struct{ corev1client.PodsGetter }

func (p retryingPods) Pods(namespace string) corev1client.PodInterface {
	return retryingPodStatus{p.PodsGetter.Pods(namespace)}
}

type retryingPodStatus struct{ corev1client.PodInterface }

// UpdateStatus writes pod's status; after a conflict it reads the pod's version and
// writes again, unless the name now belongs to another pod.
func (p retryingPodStatus) UpdateStatus(ctx context.Context, pod *corev1.Pod, opts metav1.UpdateOptions) (*corev1.Pod, error) {
	for tries := 0; ; tries++ {
		out, err := p.PodInterface.UpdateStatus(ctx, pod, opts)
		if !apierrors.IsConflict(err) || tries == statusConflictRetries {
			return out, err
		}
		current, getErr := p.Get(ctx, pod.Name, metav1.GetOptions{})
		if getErr != nil || current.UID != pod.UID {
			return out, err
		}
		pod = pod.DeepCopy()
		pod.ResourceVersion = current.ResourceVersion
	}
}
