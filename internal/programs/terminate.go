package programs

import (
	"context"
	"os"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// stopGrace is how long a pod's containers have between SIGTERM and SIGKILL once ferry up
// is stopping.
const stopGrace = 5 * time.Second

// terminate stops the pod as the kubelet does once it is deleted: its containers keep
// serving through the preStop sleep while the gateways drain them, but no longer than
// requests are in flight; then SIGTERM, and SIGKILL after the grace period.
func (r *podRunner) terminate(wg *sync.WaitGroup) {
	ctx := context.WithoutCancel(r.ctx)
	r.mu.Lock()
	r.terminating = true
	var drainAddr string
	if r.sandbox != nil {
		drainAddr = r.sandbox.drainAddr()
	}
	grace := 30 * time.Second
	if g := r.pod.Spec.TerminationGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	if g := r.pod.DeletionGracePeriodSeconds; g != nil {
		grace = time.Duration(*g) * time.Second
	}
	r.mu.Unlock()
	stopping := r.n.ctx.Err() != nil // ferry up is stopping: no drain, nothing to serve
	if stopping {
		grace = min(grace, stopGrace)
	}
	deadline := time.Now().Add(grace)
	if drainAddr != "" && grace > 0 && !stopping {
		// Ends when ferry up stops too: without a gateway in the process (--cluster-only),
		// nothing tells the node the pod is idle, and the whole preStop sleep would
		// hold ferry up's exit for minutes.
		r.n.drain(r.n.ctx, drainAddr, preStopSleep(r.pod), deadline)
		if d := time.Now().Add(stopGrace); r.n.ctx.Err() != nil && d.Before(deadline) {
			deadline = d
		}
	}
	r.signalAll(ctx, syscall.SIGTERM)
	stopped := make(chan struct{})
	go func() {
		wg.Wait()
		close(stopped)
	}()
	// The drain ended early when nothing was in flight, which leaves most of the
	// grace period; a program that ignores SIGTERM gets Kubernetes' default 30 s of it.
	if d := time.Now().Add(shutdownGrace); d.Before(deadline) {
		deadline = d
	}
	select {
	case <-stopped:
	case <-time.After(time.Until(deadline)):
		r.signalAll(ctx, syscall.SIGKILL)
		<-stopped
	}
	r.mu.Lock()
	sb := r.sandbox
	r.mu.Unlock()
	if sb != nil {
		r.rt.release(ctx, sb)
	}
	_ = os.RemoveAll(r.dir)
	r.mu.Lock()
	r.phase = corev1.PodSucceeded
	for _, c := range r.ctrs {
		if c.status.State.Terminated == nil {
			c.status.State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "Completed", FinishedAt: metav1.Now()}}
		} else if c.status.State.Terminated.ExitCode != 0 {
			r.phase = corev1.PodFailed
		}
	}
	for _, c := range r.inits {
		if t := c.status.State.Terminated; t != nil && t.ExitCode != 0 {
			r.phase = corev1.PodFailed
		}
	}
	r.mu.Unlock()
	r.notify()
	if !stopping {
		r.n.forget(ctx, r.pod)
	}
}

// shutdownGrace is the longest a container may take to exit after SIGTERM.
const shutdownGrace = 30 * time.Second

// preStopSleep is the longest preStop sleep of the pod's containers: Ferry gives each
// container one, for the drain.
func preStopSleep(pod *corev1.Pod) time.Duration {
	var d time.Duration
	for _, c := range pod.Spec.Containers {
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
			d = max(d, time.Duration(c.Lifecycle.PreStop.Sleep.Seconds)*time.Second)
		}
	}
	return d
}

func (r *podRunner) signalAll(ctx context.Context, sig syscall.Signal) {
	r.mu.Lock()
	var ids []string
	for _, c := range r.all() {
		if c.running {
			ids = append(ids, c.id)
		}
	}
	r.mu.Unlock()
	for _, id := range ids {
		_ = r.rt.kill(ctx, id, sig)
	}
}
