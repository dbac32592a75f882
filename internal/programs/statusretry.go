package programs

import (
	"context"
	"slices"
	"sync"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
)

// statusConflictRetries bounds the writes again after conflicts; past it, the error
// goes back to virtual-kubelet's queue, which retries with its back-off as before.
const statusConflictRetries = 2

// statusRetries has the node's pod controller write statuses through retryingPods.
// virtual-kubelet writes a pod's status with the resourceVersion of its informer's
// copy, as the pod's sole status writer. A pod's statuses follow each other within
// milliseconds as it starts (waiting, running, ready), so the copy often does not yet
// have the last write's version: the write would be refused with a conflict and
// retried through the status queue's back-off, 5 ms and more in the middle of a cold
// start (5 conflicts in 6 cold starts of the example app). So a write made with a
// version that the node's own last write replaced goes with the version that write
// returned; and a conflict all the same (another writer) is answered at once with the
// version the API server has: the same write virtual-kubelet would make once its
// informer caught up.
func statusRetries(cfg *node.PodControllerConfig) error {
	cfg.PodClient = newRetryingPods(cfg.PodClient)
	return nil
}

func newRetryingPods(pods corev1client.PodsGetter) retryingPods {
	return retryingPods{PodsGetter: pods, written: &writtenVersions{pods: map[types.UID]*podVersions{}}}
}

type retryingPods struct {
	corev1client.PodsGetter
	written *writtenVersions
}

func (p retryingPods) Pods(namespace string) corev1client.PodInterface {
	return retryingPodStatus{p.PodsGetter.Pods(namespace), p.written}
}

type retryingPodStatus struct {
	corev1client.PodInterface
	written *writtenVersions
}

// UpdateStatus writes pod's status, with the version of the node's last write where
// pod's is one that write replaced; after a conflict it reads the pod's version and
// writes again, unless the name now belongs to another pod.
func (p retryingPodStatus) UpdateStatus(ctx context.Context, pod *corev1.Pod, opts metav1.UpdateOptions) (*corev1.Pod, error) {
	if latest := p.written.newer(pod.UID, pod.ResourceVersion); latest != "" {
		pod = pod.DeepCopy()
		pod.ResourceVersion = latest
	}
	for tries := 0; ; tries++ {
		out, err := p.PodInterface.UpdateStatus(ctx, pod, opts)
		if err == nil {
			p.written.wrote(pod.UID, pod.ResourceVersion, out.ResourceVersion)
		}
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

// Bounds on what writtenVersions keeps: past them it forgets, and a write with an
// old version meets a conflict and its retry, as without it.
const (
	writtenPods    = 1024
	replacedPerPod = 8
)

// writtenVersions is, per pod, the version the node's last status write returned
// and the versions its writes replaced: a version of the second kind is one the
// informer has not caught up from.
type writtenVersions struct {
	mu   sync.Mutex
	pods map[types.UID]*podVersions
}

type podVersions struct {
	latest   string
	replaced []string
}

// newer is the version to write pod uid's status with in place of version, or "".
func (w *writtenVersions) newer(uid types.UID, version string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if v := w.pods[uid]; v != nil && slices.Contains(v.replaced, version) {
		return v.latest
	}
	return ""
}

// wrote records a status write of pod uid made at version from that returned to.
func (w *writtenVersions) wrote(uid types.UID, from, to string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v := w.pods[uid]
	if v == nil {
		if len(w.pods) >= writtenPods {
			clear(w.pods)
		}
		v = &podVersions{}
		w.pods[uid] = v
	}
	if len(v.replaced) >= replacedPerPod {
		v.replaced = v.replaced[:0]
	}
	v.replaced = append(v.replaced, from)
	v.latest = to
}
