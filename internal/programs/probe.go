package programs

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/probe"
	grpcprobe "k8s.io/kubernetes/pkg/probe/grpc"
	httpprobe "k8s.io/kubernetes/pkg/probe/http"
	tcpprobe "k8s.io/kubernetes/pkg/probe/tcp"
)

// The probes are the kubelet's own (k8s.io/kubernetes/pkg/probe): the same requests,
// User-Agent, status codes and redirect rules. An exec probe runs in the container
// with runc exec.

var httpProber = httpprobe.New(false)

// probeOnce runs p once against the container at ip; ok is true when it passed, else
// why tells why not.
func probeOnce(ctx context.Context, p *corev1.Probe, ctr *corev1.Container, ip string, purpose string,
	execIn func(ctx context.Context, args []string, out *bytes.Buffer) error) (ok bool, why string) {
	timeout := time.Duration(max(p.TimeoutSeconds, 1)) * time.Second
	var res probe.Result
	var out string
	var err error
	switch h := p.ProbeHandler; {
	case h.HTTPGet != nil:
		req, rerr := httpprobe.NewRequestForHTTPGetAction(h.HTTPGet, ctr, ip, purpose)
		if rerr != nil {
			return false, rerr.Error()
		}
		res, out, err = httpProber.Probe(req, timeout)
	case h.TCPSocket != nil:
		port, perr := probe.ResolveContainerPort(h.TCPSocket.Port, ctr)
		if perr != nil {
			return false, perr.Error()
		}
		host := ip
		if h.TCPSocket.Host != "" {
			host = h.TCPSocket.Host
		}
		res, out, err = tcpprobe.DoTCPProbe(net.JoinHostPort(host, strconv.Itoa(port)), timeout)
	case h.GRPC != nil:
		service := ""
		if h.GRPC.Service != nil {
			service = *h.GRPC.Service
		}
		res, out, err = grpcprobe.New().Probe(ip, service, int(h.GRPC.Port), timeout, grpcprobe.ProbeOptions{})
	case h.Exec != nil:
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		var buf bytes.Buffer
		if err := execIn(ctx, h.Exec.Command, &buf); err != nil {
			return false, fmt.Sprintf("command %q: %v %s", strings.Join(h.Exec.Command, " "), err, strings.TrimSpace(buf.String()))
		}
		return true, ""
	default:
		return false, "the probe has no handler"
	}
	switch {
	case err != nil:
		return false, err.Error()
	case res == probe.Success || res == probe.Warning:
		return true, ""
	}
	return false, out
}

// Until its first success, readiness is tried more often than every periodSeconds, so
// that a new pod is ready as soon as it listens: first 2 ms after the last try, then
// twice as long each time up to readinessRetryMax. Knative's queue-proxy probes a new
// container every 50 ms (retryInterval in pkg/queue/readiness/probe.go); Ferry has no
// queue-proxy, and a failed try of a pod on this machine costs a refused connection.
// The container's process is running when its probes start (runc.start), and a
// program listens within milliseconds of that or takes long: the short tries find the
// first, the longer ones spare the second.
const (
	readinessRetryMin = 2 * time.Millisecond
	readinessRetryMax = 25 * time.Millisecond
)

// probe runs a container run's probes until the run ends or the pod is deleted: the
// startup probe, then readiness and liveness, readiness tried more often until its
// first success.
func (r *podRunner) probe(c *containerRun, id string, exited <-chan struct{}) {
	ctx, cancel := context.WithCancel(r.ctx)
	defer cancel()
	go func() {
		select {
		case <-exited:
			cancel()
		case <-ctx.Done():
		}
	}()
	r.mu.Lock()
	ip, port := r.podIP(), r.sandbox.port
	r.mu.Unlock()
	_, userPort := servingContainer(r.pod)
	try := func(p *corev1.Probe, purpose string) (bool, string) {
		ctr := c.spec
		if port != 0 && len(c.spec.Ports) > 0 {
			// The serving container listens on the port the node picked.
			p, ctr = retarget(p, ctr, userPort, int32(port))
		}
		return probeOnce(ctx, p, ctr, ip, purpose, func(ctx context.Context, args []string, out *bytes.Buffer) error {
			cmd, err := r.rt.command(ctx, id, args, false)
			if err != nil {
				return err
			}
			cmd.Stdout, cmd.Stderr = out, out
			return cmd.Run()
		})
	}
	if p := c.spec.StartupProbe; p != nil {
		if !sleep(ctx, seconds(p.InitialDelaySeconds)) || !r.watch(ctx, p, try, "startup", nil, func(why string) {
			r.restart(ctx, c, id, "startup", why)
		}) {
			return
		}
		r.mu.Lock()
		c.status.Started = ptr(true)
		r.mu.Unlock()
		r.notify()
	}
	if p := c.spec.LivenessProbe; p != nil {
		go func() {
			if sleep(ctx, seconds(p.InitialDelaySeconds)) {
				r.watch(ctx, p, try, "liveness", func() {}, func(why string) { r.restart(ctx, c, id, "liveness", why) })
			}
		}()
	}
	p := c.spec.ReadinessProbe
	if p == nil {
		r.setReady(c, id, true)
		return
	}
	if !sleep(ctx, seconds(p.InitialDelaySeconds)) {
		return
	}
	tries, wait := 1, readinessRetryMin
	for ok, _ := try(p, "readiness"); !ok; ok, _ = try(p, "readiness") {
		if !sleep(ctx, wait) {
			return
		}
		tries, wait = tries+1, min(2*wait, readinessRetryMax)
	}
	r.mu.Lock()
	r.startup.step(fmt.Sprintf("%s's readiness probe passed (try %d)", c.spec.Name, tries))
	r.mu.Unlock()
	r.setReady(c, id, true)
	r.watch(ctx, p, try, "readiness", func() { r.setReady(c, id, true) }, func(string) { r.setReady(c, id, false) })
}

// watch runs p every periodSeconds until ctx ends, calling pass after successThreshold
// successes in a row and fail after failureThreshold failures in a row; a liveness
// failure ends it (the container restarts, with probes of its own). For a startup
// probe (no pass), it returns true at its first success.
func (r *podRunner) watch(ctx context.Context, p *corev1.Probe, try func(*corev1.Probe, string) (bool, string), purpose string,
	pass func(), fail func(why string)) bool {
	successes, failures := 0, 0
	for {
		ok, why := try(p, purpose)
		switch {
		case ok && pass == nil:
			return true
		case ok:
			failures, successes = 0, successes+1
			if successes >= int(max(p.SuccessThreshold, 1)) {
				pass()
			}
		default:
			successes, failures = 0, failures+1
			if failures >= int(max(p.FailureThreshold, 1)) {
				fail(why)
				if pass == nil || purpose == "liveness" {
					return false
				}
			}
		}
		if !sleep(ctx, seconds(max(p.PeriodSeconds, 1))) {
			return false
		}
	}
}

// restart kills a container run that failed its liveness or startup probe; the
// container's loop starts it again.
func (r *podRunner) restart(ctx context.Context, c *containerRun, id, purpose, why string) {
	r.n.event(r.snapshot(), corev1.EventTypeWarning, "Unhealthy",
		fmt.Sprintf("Container %s failed %s probe, will be restarted: %s", c.spec.Name, purpose, why))
	_ = r.rt.kill(ctx, id, syscall.SIGTERM)
	if !sleep(ctx, 10*time.Second) {
		return
	}
	_ = r.rt.kill(context.WithoutCancel(ctx), id, syscall.SIGKILL)
}

func seconds(s int32) time.Duration { return time.Duration(s) * time.Second }

// sleep waits d, or returns false when ctx ends first.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
