package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// serveRevisionSpec serves a Revision with spec from one pod, backend, as the
// endpoints reconciler would: the pod's address is the backend's, its user port the
// backend's port.
func (tg *testGateway) serveRevisionSpec(name string, spec servingv1.RevisionSpec, backend *httptest.Server) {
	tg.t.Helper()
	rev := &servingv1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: spec}
	var pods []corev1.Pod
	if backend != nil {
		host, port := splitHostPort(tg.t, backend.Listener.Addr().String())
		if len(rev.Spec.Containers) == 0 {
			rev.Spec.Containers = []corev1.Container{{Image: "img", Ports: []corev1.ContainerPort{{}}}}
		}
		rev.Spec.Containers[0].Ports[0].ContainerPort = int32(port)
		pods = []corev1.Pod{{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name + "-pod"},
			Status: corev1.PodStatus{PodIP: host, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}}
	}
	tg.services.Update(gatewaytest.Key(name), backends.BuildRevisionEndpoints(rev, pods, gatewaytest.NotSimulated))
}

// TestRevisionTimeouts: each of Knative's timeouts ends a request as the client sees
// it, 504 naming the Revision and the timeout before the response started, the
// stream cut after; and is counted.
func TestRevisionTimeouts(t *testing.T) {
	// tick writes a chunk every 200ms for the given time, then waits for the end.
	tick := func(for_ time.Duration) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			end := time.Now().Add(for_)
			for time.Now().Before(end) {
				io.WriteString(w, ".")
				http.NewResponseController(w).Flush()
				select {
				case <-time.After(200 * time.Millisecond):
				case <-r.Context().Done():
					return
				}
			}
			<-r.Context().Done()
		}
	}
	hang := func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }
	for _, tc := range []struct {
		name    string
		spec    servingv1.RevisionSpec
		noPod   bool
		backend http.HandlerFunc
		// body is the request body, written in pieces 300ms apart.
		body     []string
		code     int
		want     string // a prefix of the answer, or, for a cut stream, of what came
		cut      bool
		min, max time.Duration
		kind     string // the timeout that counts it
	}{{
		name: "response start", spec: servingv1.RevisionSpec{TimeoutSeconds: ptr.To[int64](5), ResponseStartTimeoutSeconds: ptr.To[int64](1)},
		backend: hang, code: 504, kind: "responseStartTimeoutSeconds", min: time.Second, max: 3 * time.Second,
		want: "ferry: revision rev-1 did not answer in time: responseStartTimeoutSeconds (1s) passed (pod 127.0.0.1)\n",
	}, {
		name: "response start while held", spec: servingv1.RevisionSpec{TimeoutSeconds: ptr.To[int64](5), ResponseStartTimeoutSeconds: ptr.To[int64](1)},
		noPod: true, code: 504, kind: "responseStartTimeoutSeconds", min: time.Second, max: 3 * time.Second,
		want: "ferry: revision rev-1 did not get a ready pod within 1s (responseStartTimeoutSeconds)\n",
	}, {
		// As in Knative, timeoutSeconds ends only a response that has not started.
		name: "total spares a stream under way", spec: servingv1.RevisionSpec{TimeoutSeconds: ptr.To[int64](1)},
		backend: func(w http.ResponseWriter, r *http.Request) {
			for range 12 {
				io.WriteString(w, ".")
				http.NewResponseController(w).Flush()
				time.Sleep(200 * time.Millisecond)
			}
		},
		code: 200, want: "............", min: 2200 * time.Millisecond, max: 4 * time.Second,
	}, {
		name: "total ends the wait for a response", spec: servingv1.RevisionSpec{TimeoutSeconds: ptr.To[int64](1)},
		backend: hang, code: 504, kind: "timeoutSeconds", min: time.Second, max: 3 * time.Second,
		want: "ferry: revision rev-1 did not answer in time: timeoutSeconds (1s) passed (pod 127.0.0.1)\n",
	}, {
		// Bytes every 200ms keep a stream alive past the idle timeout; silence ends it.
		name: "idle cuts a silent stream", spec: servingv1.RevisionSpec{TimeoutSeconds: ptr.To[int64](10), IdleTimeoutSeconds: ptr.To[int64](1)},
		backend: tick(1500 * time.Millisecond), code: 200, cut: true, want: "......", kind: "idleTimeoutSeconds", min: 2200 * time.Millisecond, max: 4 * time.Second,
	}, {
		// The request's bytes count too: an upload slower than nothing is not idle.
		name: "idle counts the request body", spec: servingv1.RevisionSpec{TimeoutSeconds: ptr.To[int64](10), IdleTimeoutSeconds: ptr.To[int64](1)},
		backend: func(w http.ResponseWriter, r *http.Request) {
			b, _ := io.ReadAll(r.Body)
			fmt.Fprintf(w, "got %q", b)
		},
		body: []string{"a", "b", "c", "d", "e", "f"}, code: 200, want: `got "abcdef"`, min: 1500 * time.Millisecond, max: 4 * time.Second,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, Options{})
			var backend *httptest.Server
			if !tc.noPod {
				backend = newBackend(t, tc.backend)
			}
			g.serveRevisionSpec("rev-1", tc.spec, backend)
			g.route("rev.example.com", "rev-1")

			var body io.Reader
			method := "GET"
			if tc.body != nil {
				pr, pw := io.Pipe()
				go func() {
					for _, piece := range tc.body {
						time.Sleep(300 * time.Millisecond)
						io.WriteString(pw, piece)
					}
					pw.Close()
				}()
				body, method = pr, "POST"
			}
			req, _ := http.NewRequest(method, g.externalURL("/"), body)
			req.Host = "rev.example.com"
			start := time.Now()
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(res.Body)
			res.Body.Close()
			took := time.Since(start)
			if res.StatusCode != tc.code || !strings.HasPrefix(string(got), tc.want) || took < tc.min || took > tc.max {
				t.Errorf("%d %q after %v; want %d %q after %v to %v", res.StatusCode, got, took, tc.code, tc.want, tc.min, tc.max)
			}
			if cut := err != nil; cut != tc.cut {
				t.Errorf("body read error %v; want a cut stream: %v", err, tc.cut)
			}
			for _, kind := range []string{"timeoutSeconds", "responseStartTimeoutSeconds", "idleTimeoutSeconds"} {
				want := 0.0
				if kind == tc.kind {
					want = 1
				}
				// The count follows the answer by a moment: the handler returns after
				// the client has read the end.
				eventually(t, "the timeout counted", func() bool {
					return testutil.ToFloat64(g.metrics.Timeouts.WithLabelValues(kind)) == want
				})
			}
		})
	}
}

// TestUpgradedConnectionTimeouts: as in Knative, whose timeout handler never sees an
// upgraded connection's 101 or bytes, timeoutSeconds and responseStartTimeoutSeconds
// close a WebSocket, counted from its arrival, however much it talks; the idle
// timeout closes only one that falls silent.
func TestUpgradedConnectionTimeouts(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec servingv1.RevisionSpec
		// talk is how long the client talks before it falls silent.
		talk     time.Duration
		min, max time.Duration
		kind     string
	}{{
		name: "timeoutSeconds closes a busy connection", spec: servingv1.RevisionSpec{TimeoutSeconds: ptr.To[int64](1)},
		talk: 10 * time.Second, min: 900 * time.Millisecond, max: 3 * time.Second, kind: "timeoutSeconds",
	}, {
		name: "responseStartTimeoutSeconds closes a busy connection",
		spec: servingv1.RevisionSpec{TimeoutSeconds: ptr.To[int64](10), ResponseStartTimeoutSeconds: ptr.To[int64](1)},
		talk: 10 * time.Second, min: 900 * time.Millisecond, max: 3 * time.Second, kind: "responseStartTimeoutSeconds",
	}, {
		name: "idleTimeoutSeconds closes a silent connection only",
		spec: servingv1.RevisionSpec{TimeoutSeconds: ptr.To[int64](10), IdleTimeoutSeconds: ptr.To[int64](1)},
		talk: 2 * time.Second, min: 2500 * time.Millisecond, max: 5 * time.Second, kind: "idleTimeoutSeconds",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			g := startGateway(t, Options{})
			g.serveRevisionSpec("rev-1", tc.spec, newBackend(t, echoLinesAfterUpgrade(t)))
			g.route("rev.example.com", "rev-1")

			start := time.Now()
			conn, br := upgrade(t, g.ExternalAddr(), "rev.example.com")
			closed := talkUntilClosed(t, conn, br, tc.talk)
			if took := closed.Sub(start); took < tc.min || took > tc.max {
				t.Errorf("closed after %v; want %v to %v", took, tc.min, tc.max)
			}
			for _, kind := range []string{"timeoutSeconds", "responseStartTimeoutSeconds", "idleTimeoutSeconds"} {
				want := 0.0
				if kind == tc.kind {
					want = 1
				}
				eventually(t, "the timeout counted", func() bool {
					return testutil.ToFloat64(g.metrics.Timeouts.WithLabelValues(kind)) == want
				})
			}
		})
	}
}

// echoLinesAfterUpgrade switches protocols and echoes lines until the connection
// closes.
func echoLinesAfterUpgrade(t *testing.T) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Upgrade") != "websocket" {
			http.Error(w, "upgrade expected", http.StatusBadRequest)
			return
		}
		conn, rw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		defer conn.Close()
		rw.WriteString("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
		rw.Flush()
		for {
			line, err := rw.ReadString('\n')
			if err != nil {
				return
			}
			rw.WriteString("echo " + line)
			rw.Flush()
		}
	}
}

// upgrade opens an upgraded connection through the gateway at addr for host.
func upgrade(t *testing.T, addr, host string) (net.Conn, *bufio.Reader) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	fmt.Fprintf(conn, "GET /chat HTTP/1.1\r\nHost: %s\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"+
		"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n", host)
	br := bufio.NewReader(conn)
	res, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("status %d", res.StatusCode)
	}
	return conn, br
}

// talkUntilClosed sends a line every 200ms for talk, each echoed, then waits in
// silence; it returns when the gateway closed the connection. It fails the test if an
// echo is wrong or the connection outlives 5s of silence.
func talkUntilClosed(t *testing.T, conn net.Conn, br *bufio.Reader, talk time.Duration) time.Time {
	t.Helper()
	end := time.Now().Add(talk)
	for i := 0; time.Now().Before(end); i++ {
		msg := fmt.Sprintf("message %d\n", i)
		if _, err := io.WriteString(conn, msg); err != nil {
			return time.Now()
		}
		conn.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := br.ReadString('\n')
		if err != nil {
			return closedBy(t, err)
		}
		if got != "echo "+msg {
			t.Fatalf("echo %q, want %q", got, "echo "+msg)
		}
		time.Sleep(200 * time.Millisecond)
	}
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	got, err := br.ReadString('\n')
	if err == nil {
		t.Fatalf("read %q from a silent connection", got)
	}
	return closedBy(t, err)
}

// closedBy is when a read ended by err: now, unless the test's own deadline ended it.
func closedBy(t *testing.T, err error) time.Time {
	t.Helper()
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the connection is still open: %v", err)
	}
	return time.Now()
}
