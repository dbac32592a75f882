package programs

import (
	"time"

	"github.com/virtual-kubelet/virtual-kubelet/node"
	"k8s.io/client-go/util/workqueue"
)

// firstAtOnce is client-go's default controller rate limiter, except that a key's first
// try since its last success goes at once. virtual-kubelet queues a pod's arrival on
// the node and each of its status changes through such a limiter, whose first delay
// (5 ms, doubling while the key is queued again before it was handled) is in every
// cold start twice or more: the pod reaching the node, its running and its readiness
// reaching the API server. A retry after a failure still waits as before.
type firstAtOnce struct {
	workqueue.TypedRateLimiter[any]
}

func (l firstAtOnce) When(key any) time.Duration {
	d := l.TypedRateLimiter.When(key) // counted, so that a retry waits
	if l.NumRequeues(key) == 1 {
		return 0
	}
	return d
}

// podQueues makes the node's pod queues take a pod and report its status at once.
func podQueues(cfg *node.PodControllerConfig) error {
	cfg.SyncPodsFromKubernetesRateLimiter = firstAtOnce{workqueue.DefaultTypedControllerRateLimiter[any]()}
	cfg.SyncPodStatusFromProviderRateLimiter = firstAtOnce{workqueue.DefaultTypedControllerRateLimiter[any]()}
	return nil
}
