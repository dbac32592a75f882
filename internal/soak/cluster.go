package soak

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/scheme"
)

// clusterBreaker strikes faults on a cluster where Ferry runs as config/deploy
// installs it: deleting pods, as a node failure or an eviction would.
type clusterBreaker struct {
	cfg       *rest.Config
	namespace string
}

// ClusterBreaker is the Breaker of a cluster with Ferry in namespace (config/deploy:
// the controller's leader election Lease ferry-controller, gateway pods labelled
// app=ferry-gateway). The API server cannot be slowed from outside: that fault is
// reported as not possible.
func ClusterBreaker(cfg *rest.Config, namespace string) Breaker {
	return &clusterBreaker{cfg: cfg, namespace: namespace}
}

// controllerLease is the controllers' leader election Lease (internal/manager).
const controllerLease = "ferry-controller"

func (b *clusterBreaker) client() (client.Client, error) {
	return client.New(b.cfg, client.Options{Scheme: scheme.New()})
}

// KillController deletes the leading controller's pod with no grace period.
func (b *clusterBreaker) KillController(ctx context.Context) (string, error) {
	c, err := b.client()
	if err != nil {
		return "", err
	}
	lease := &coordinationv1.Lease{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: b.namespace, Name: controllerLease}, lease); err != nil {
		return "", fmt.Errorf("finding the leader: %w", err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return "", fmt.Errorf("the Lease %s/%s has no holder", b.namespace, controllerLease)
	}
	// controller-runtime's identity is the pod's hostname (its name), "_", a UUID.
	pod, _, _ := strings.Cut(*lease.Spec.HolderIdentity, "_")
	p := &corev1.Pod{}
	p.Namespace, p.Name = b.namespace, pod
	if err := c.Delete(ctx, p, client.GracePeriodSeconds(0)); err != nil {
		return "", fmt.Errorf("deleting the leader's pod %s: %w", pod, err)
	}
	return "the leader's pod " + pod + " deleted at once", nil
}

// RestartGateway deletes the oldest gateway pod, with its grace period (it drains),
// and waits until as many gateway pods are Ready as before.
func (b *clusterBreaker) RestartGateway(ctx context.Context) (string, error) {
	c, err := b.client()
	if err != nil {
		return "", err
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(b.namespace), client.MatchingLabels{"app": "ferry-gateway"}); err != nil {
		return "", err
	}
	if len(pods.Items) < 2 {
		return "", fmt.Errorf("%w: %d gateway pods in %s; restarting the only one is an outage", ErrUnsupported, len(pods.Items), b.namespace)
	}
	oldest := pods.Items[0]
	for _, p := range pods.Items {
		if p.CreationTimestamp.Before(&oldest.CreationTimestamp) {
			oldest = p
		}
	}
	start := time.Now()
	if err := c.Delete(ctx, &oldest); err != nil {
		return "", err
	}
	for time.Since(start) < 3*time.Minute {
		if err := c.List(ctx, pods, client.InNamespace(b.namespace), client.MatchingLabels{"app": "ferry-gateway"}); err == nil && readyPods(pods.Items, oldest.Name) >= len(pods.Items)-1 && len(pods.Items) > 1 {
			return fmt.Sprintf("gateway pod %s deleted; its replacement Ready %s later", oldest.Name, time.Since(start).Round(time.Second)), nil
		}
		time.Sleep(2 * time.Second)
	}
	return "gateway pod " + oldest.Name + " deleted", fmt.Errorf("no replacement Ready within 3m")
}

func readyPods(pods []corev1.Pod, except string) int {
	n := 0
	for _, p := range pods {
		if p.Name == except || p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}

// SlowAPIServer is not possible from outside a cluster.
func (b *clusterBreaker) SlowAPIServer(context.Context, time.Duration) (string, error) {
	return "", fmt.Errorf("%w: the API server of a cluster cannot be slowed from outside", ErrUnsupported)
}
