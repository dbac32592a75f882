package programs

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"
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
