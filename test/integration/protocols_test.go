package integration

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	testpb "google.golang.org/grpc/interop/grpc_testing"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/manager"
)

// The protocol tests run Ferry as `ferry up` assembles it, with kwok's pods served
// by one real server in the test process: the gateway's dialer sends every pod address
// to it. They go through what a Knative user's traffic goes through: Revisions that
// start at zero (held by the activator) and containerConcurrency 1.

// startFerryServing runs Ferry with its gateway dialling every pod at backend; it
// returns Ferry, the gateway's external address and the gateway's metrics.
func startFerryServing(t *testing.T, backend net.Addr) (*manager.Ferry, string, *prometheus.Registry) {
	t.Helper()
	setLoggerOnce.Do(func() { ctrl.SetLogger(logr.New(errorSink{})) })
	registry := prometheus.NewRegistry()
	dial := func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, backend.String())
	}
	f, err := manager.New(rest.CopyConfig(testConfig), manager.Options{
		Reconcilers: true,
		Gateway: &gateway.Options{ExternalAddr: "127.0.0.1:0", LocalAddr: "127.0.0.1:0",
			DialContext: dial, DialSimulatedPods: true, Registry: registry},
		SkipNameValidation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, f)
	return f, f.Gateway.ExternalAddr(), registry
}

// allowZeroInitialScale lets Services start at zero pods (config-autoscaler
// allow-zero-initial-scale) until the test ends; start Ferry after it.
func allowZeroInitialScale(t *testing.T) {
	t.Helper()
	setAsideConfigMaps(t)
	applyConfigMap(t, config.AutoscalerConfigName, map[string]string{"allow-zero-initial-scale": "true"})
}

// waitZeroInitialScale waits until Ferry and admission have read
// allow-zero-initial-scale.
func waitZeroInitialScale(t *testing.T, f *manager.Ferry, ns string) {
	t.Helper()
	eventually(t, 20*time.Second, func() (bool, string) {
		return f.Config.Load().Autoscaler.AllowZeroInitialScale, "config-autoscaler not loaded"
	})
	eventually(t, 20*time.Second, func() (bool, string) {
		probe := autoscaled(ns, "probe", map[string]string{"autoscaling.knative.dev/initial-scale": "0"})
		err := testClient.Create(context.Background(), probe, client.DryRunAll)
		return err == nil, fmt.Sprint(err)
	})
}

// listen opens a loopback listener for a backend, closed when the test ends.
func listen(t *testing.T) net.Listener {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// grpcPod is the gRPC server behind every pod: gRPC's interop test service, with
// what it saw of deadlines and cancellations.
type grpcPod struct {
	testpb.UnimplementedTestServiceServer
	// ended receives how each call that waits for its end ended, and whether it
	// came with a deadline less than a second away.
	ended chan string
}

func (p *grpcPod) UnaryCall(ctx context.Context, req *testpb.SimpleRequest) (*testpb.SimpleResponse, error) {
	grpc.SetTrailer(ctx, metadata.Pairs("x-served-by", "pod"))
	if s := req.GetResponseStatus(); s != nil {
		return nil, status.Error(codes.Code(s.Code), s.Message)
	}
	return &testpb.SimpleResponse{Payload: &testpb.Payload{Body: bytes.Repeat([]byte{'r'}, int(req.ResponseSize))},
		Username: fmt.Sprint(len(req.GetPayload().GetBody()))}, nil
}

// StreamingOutputCall sends a message per parameter after its interval; an interval
// of -1 waits for the call's end instead and reports it.
func (p *grpcPod) StreamingOutputCall(req *testpb.StreamingOutputCallRequest, stream testpb.TestService_StreamingOutputCallServer) error {
	for _, rp := range req.ResponseParameters {
		if rp.IntervalUs < 0 {
			deadline, ok := stream.Context().Deadline()
			soon := ok && time.Until(deadline) < time.Second
			<-stream.Context().Done()
			p.ended <- fmt.Sprintf("%v, deadline within 1s: %v", stream.Context().Err(), soon)
			return stream.Context().Err()
		}
		time.Sleep(time.Duration(rp.IntervalUs) * time.Microsecond)
		if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: &testpb.Payload{Body: make([]byte, rp.Size)}}); err != nil {
			return err
		}
	}
	return nil
}

func (p *grpcPod) StreamingInputCall(stream testpb.TestService_StreamingInputCallServer) error {
	var total int32
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return stream.SendAndClose(&testpb.StreamingInputCallResponse{AggregatedPayloadSize: total})
		}
		if err != nil {
			return err
		}
		total += int32(len(req.GetPayload().GetBody()))
	}
}

// FullDuplexCall answers each message as it comes, with its payload.
func (p *grpcPod) FullDuplexCall(stream testpb.TestService_FullDuplexCallServer) error {
	for {
		req, err := stream.Recv()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if err := stream.Send(&testpb.StreamingOutputCallResponse{Payload: req.Payload}); err != nil {
			return err
		}
	}
}

// TestGatewayGRPC: a Service whose port is named h2c serves gRPC through the gateway,
// from zero and with containerConcurrency 1: health, unary with trailers and error
// statuses, the three streaming kinds, a deadline and a cancellation that reach the
// pod, and 8 MiB messages both ways.
func TestGatewayGRPC(t *testing.T) {
	allowZeroInitialScale(t)
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)

	const big = 8 << 20
	pod := &grpcPod{ended: make(chan string, 1)}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(2*big), grpc.MaxSendMsgSize(2*big))
	testpb.RegisterTestServiceServer(srv, pod)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	ln := listen(t)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)

	f, gw, _ := startFerryServing(t, ln.Addr())
	waitZeroInitialScale(t, f, ns)
	svc := autoscaled(ns, "grpc", map[string]string{"autoscaling.knative.dev/initial-scale": "0"})
	svc.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "h2c", ContainerPort: 8080}}
	svc.Spec.Template.Spec.ContainerConcurrency = ptr(int64(1))
	revision, host := createReady(t, svc)
	if spec, ready := scaleOf(t, ns, revision); spec != 0 || ready != 0 {
		t.Fatalf("initial-scale 0: %d replicas (%d ready), want none", spec, ready)
	}

	conn, err := grpc.NewClient("passthrough:///"+gw, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithAuthority(host), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(2*big), grpc.MaxCallSendMsgSize(2*big)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	// The first call wakes the Revision: held, then answered by its pod.
	start := time.Now()
	var header metadata.MD
	if res, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{}, grpc.Header(&header)); err != nil || res.Status != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("health check from zero: %v, %v", res, err)
	}
	wait := header.Get("x-ferry-activation-wait")
	if len(wait) == 0 {
		t.Errorf("the first call was not held; headers %v", header)
	}
	t.Logf("health check from zero answered after %v, X-Ferry-Activation-Wait %v", time.Since(start).Round(time.Millisecond), wait)
	if spec, _ := scaleOf(t, ns, revision); spec < 1 {
		t.Errorf("after the first call: %d replicas", spec)
	}

	tc := testpb.NewTestServiceClient(conn)
	t.Run("unary", func(t *testing.T) {
		var trailer metadata.MD
		res, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: 10, Payload: &testpb.Payload{Body: []byte("abc")}}, grpc.Trailer(&trailer))
		if err != nil || len(res.GetPayload().GetBody()) != 10 || res.Username != "3" || fmt.Sprint(trailer.Get("x-served-by")) != "[pod]" {
			t.Errorf("unary: %v, %v, trailer %v", res, err, trailer)
		}
		_, err = tc.UnaryCall(ctx, &testpb.SimpleRequest{ResponseStatus: &testpb.EchoStatus{Code: int32(codes.FailedPrecondition), Message: "no way"}})
		if s := status.Convert(err); s.Code() != codes.FailedPrecondition || s.Message() != "no way" {
			t.Errorf("error status: %v", err)
		}
	})
	t.Run("8 MiB both ways", func(t *testing.T) {
		res, err := tc.UnaryCall(ctx, &testpb.SimpleRequest{ResponseSize: big, Payload: &testpb.Payload{Body: make([]byte, big)}})
		if err != nil || len(res.GetPayload().GetBody()) != big || res.Username != fmt.Sprint(big) {
			t.Errorf("8 MiB: %d bytes back, the pod got %s, %v", len(res.GetPayload().GetBody()), res.GetUsername(), err)
		}
	})
	t.Run("server streaming", func(t *testing.T) {
		stream, err := tc.StreamingOutputCall(ctx, &testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{
			{Size: 1}, {Size: 2, IntervalUs: 100_000}, {Size: big, IntervalUs: 100_000}}})
		if err != nil {
			t.Fatal(err)
		}
		var sizes []int
		for {
			res, err := stream.Recv()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			sizes = append(sizes, len(res.GetPayload().GetBody()))
		}
		if fmt.Sprint(sizes) != fmt.Sprint([]int{1, 2, big}) {
			t.Errorf("messages of %v bytes", sizes)
		}
	})
	t.Run("client streaming", func(t *testing.T) {
		stream, err := tc.StreamingInputCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range []int{1, 10, 100, big} {
			if err := stream.Send(&testpb.StreamingInputCallRequest{Payload: &testpb.Payload{Body: make([]byte, n)}}); err != nil {
				t.Fatal(err)
			}
		}
		if res, err := stream.CloseAndRecv(); err != nil || res.AggregatedPayloadSize != int32(111+big) {
			t.Errorf("client streaming: %v, %v", res, err)
		}
	})
	t.Run("bidi streaming", func(t *testing.T) {
		stream, err := tc.FullDuplexCall(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// Each answer comes back before the next message is sent: full duplex.
		for _, msg := range []string{"one", "two", "three"} {
			if err := stream.Send(&testpb.StreamingOutputCallRequest{Payload: &testpb.Payload{Body: []byte(msg)}}); err != nil {
				t.Fatal(err)
			}
			if res, err := stream.Recv(); err != nil || string(res.GetPayload().GetBody()) != msg {
				t.Fatalf("echo of %q: %v, %v", msg, res, err)
			}
		}
		if err := stream.CloseSend(); err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); err != io.EOF {
			t.Errorf("after CloseSend: %v, want EOF", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		dctx, dcancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer dcancel()
		stream, err := tc.StreamingOutputCall(dctx, &testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{IntervalUs: -1}}})
		if err == nil {
			_, err = stream.Recv()
		}
		if status.Code(err) != codes.DeadlineExceeded {
			t.Errorf("past the deadline: %v", err)
		}
		select {
		case got := <-pod.ended:
			// The gateway passes the client's RST_STREAM on as the deadline passes,
			// which may reach the pod before its own timer fires.
			if !strings.HasSuffix(got, "deadline within 1s: true") {
				t.Errorf("the pod saw %s; want the call's deadline (grpc-timeout) to have reached it", got)
			}
		case <-time.After(5 * time.Second):
			t.Error("the pod's call did not end")
		}
	})
	t.Run("cancellation", func(t *testing.T) {
		cctx, ccancel := context.WithCancel(ctx)
		stream, err := tc.StreamingOutputCall(cctx, &testpb.StreamingOutputCallRequest{ResponseParameters: []*testpb.ResponseParameters{{Size: 1}, {IntervalUs: -1}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := stream.Recv(); err != nil { // the call has reached the pod
			t.Fatal(err)
		}
		ccancel()
		select {
		case got := <-pod.ended:
			if got != "context canceled, deadline within 1s: false" {
				t.Errorf("the pod saw %s; want the call cancelled", got)
			}
		case <-time.After(5 * time.Second):
			t.Error("the client's cancellation did not reach the pod")
		}
	})
}

// streamsPod is the HTTP server behind every pod of TestGatewayStreams.
type streamsPod struct {
	next chan struct{} // lets the event stream go on
	got  chan string   // what the upload handler read, as it read it
}

func (p *streamsPod) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/events":
		w.Header().Set("Content-Type", "text/event-stream")
		for i := 1; i <= 3; i++ {
			fmt.Fprintf(w, "data: event %d\n\n", i)
			http.NewResponseController(w).Flush()
			if i < 3 {
				select {
				case <-p.next:
				case <-r.Context().Done():
					return
				}
			}
		}
	case "/upload":
		buf := make([]byte, 64)
		parts := 0
		for {
			n, err := r.Body.Read(buf)
			if n > 0 {
				parts++
				p.got <- string(buf[:n])
			}
			if err != nil {
				break
			}
		}
		fmt.Fprintf(w, "%d parts", parts)
	case "/ws":
		c, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer c.CloseNow()
		c.SetReadLimit(2 << 20)
		for {
			typ, msg, err := c.Read(r.Context())
			if err != nil {
				return
			}
			if err := c.Write(r.Context(), typ, msg); err != nil {
				return
			}
		}
	case "/hang":
		<-r.Context().Done()
	default:
		io.WriteString(w, "ok")
	}
}

// TestGatewayStreams: server-sent events arrive as the pod writes them, the first
// ones from a Revision at zero; a request body reaches the pod as the client sends
// it; a WebSocket echoes; all with containerConcurrency 1. Each of Knative's
// timeouts gives its 504, and idleTimeoutSeconds ends a WebSocket that falls silent
// but not one that talks.
func TestGatewayStreams(t *testing.T) {
	allowZeroInitialScale(t)
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	pod := &streamsPod{next: make(chan struct{}), got: make(chan string, 16)}
	ln := listen(t)
	srv := &http.Server{Handler: pod}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	f, gw, registry := startFerryServing(t, ln.Addr())
	waitZeroInitialScale(t, f, ns)

	services := map[string]func(*v1.RevisionSpec){
		"streams": func(rs *v1.RevisionSpec) { rs.ContainerConcurrency = ptr(int64(1)) },
		"total":   func(rs *v1.RevisionSpec) { rs.TimeoutSeconds = ptr(int64(1)) },
		"start": func(rs *v1.RevisionSpec) {
			rs.TimeoutSeconds, rs.ResponseStartTimeoutSeconds = ptr(int64(10)), ptr(int64(1))
		},
		"idle": func(rs *v1.RevisionSpec) { rs.TimeoutSeconds, rs.IdleTimeoutSeconds = ptr(int64(10)), ptr(int64(1)) },
	}
	hosts, revisions := map[string]string{}, map[string]string{}
	for name, set := range services {
		svc := ksvc(ns, name, "ferry.test/"+name)
		set(&svc.Spec.Template.Spec)
		if name == "streams" {
			svc.Spec.Template.ObjectMeta.Annotations = map[string]string{"autoscaling.knative.dev/initial-scale": "0"}
		}
		if err := testClient.Create(context.Background(), svc); err != nil {
			t.Fatal(err)
		}
	}
	for name := range services {
		svc := &v1.Service{}
		svc.Namespace, svc.Name = ns, name
		revisions[name], hosts[name] = createdReady(t, svc)
	}
	gwHTTP := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, gw)
	}}}

	if spec, ready := scaleOf(t, ns, revisions["streams"]); spec != 0 || ready != 0 {
		t.Fatalf("initial-scale 0: %d replicas (%d ready), want none", spec, ready)
	}

	t.Run("server-sent events", func(t *testing.T) {
		res, err := gwHTTP.Get("http://" + hosts["streams"] + "/events")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		if res.Header.Get("X-Ferry-Activation-Wait") == "" {
			t.Errorf("the first request to a Revision at zero was not held; headers %v", res.Header)
		}
		br := bufio.NewReader(res.Body)
		for i := 1; i <= 3; i++ {
			// The pod writes event i+1 only once this one was read here.
			event, err := readEvent(br)
			if err != nil || event != fmt.Sprintf("data: event %d", i) {
				t.Fatalf("event %d: %q, %v", i, event, err)
			}
			if i < 3 {
				pod.next <- struct{}{}
			}
		}
	})
	t.Run("streamed request body", func(t *testing.T) {
		pr, pw := io.Pipe()
		answer := make(chan string, 1)
		go func() {
			res, err := gwHTTP.Post("http://"+hosts["streams"]+"/upload", "text/plain", pr)
			if err != nil {
				answer <- err.Error()
				return
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			answer <- fmt.Sprintf("%d %s", res.StatusCode, b)
		}()
		// Each part reaches the pod before the next is written.
		for _, part := range []string{"first part", "second part"} {
			io.WriteString(pw, part)
			select {
			case got := <-pod.got:
				if got != part {
					t.Fatalf("the pod read %q, want %q", got, part)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("%q did not reach the pod while the body was still open", part)
			}
		}
		pw.Close()
		if got := <-answer; got != "200 2 parts" {
			t.Errorf("upload answered %q", got)
		}
	})
	t.Run("websocket", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, "ws://"+hosts["streams"]+"/ws", &websocket.DialOptions{HTTPClient: gwHTTP})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		c.SetReadLimit(2 << 20)
		for _, msg := range []string{"hello", "through the gateway", strings.Repeat("x", 1<<20)} {
			if err := c.Write(ctx, websocket.MessageText, []byte(msg)); err != nil {
				t.Fatal(err)
			}
			if _, got, err := c.Read(ctx); err != nil || string(got) != msg {
				t.Fatalf("echo of %d bytes: %d bytes, %v", len(msg), len(got), err)
			}
		}
		c.Close(websocket.StatusNormalClosure, "")
	})
	t.Run("timeouts", func(t *testing.T) {
		for name, kind := range map[string]string{"total": "timeoutSeconds", "start": "responseStartTimeoutSeconds", "idle": "idleTimeoutSeconds"} {
			start := time.Now()
			res, err := gwHTTP.Get("http://" + hosts[name] + "/hang")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			want := fmt.Sprintf("ferry: revision %s did not answer in time: %s (1s) passed", revisions[name], kind)
			if took := time.Since(start); res.StatusCode != http.StatusGatewayTimeout || !strings.HasPrefix(string(body), want) || took < time.Second || took > 5*time.Second {
				t.Errorf("%s: %d %q after %v; want 504 %q after 1s", name, res.StatusCode, body, took, want)
			}
			if got := gatewayTimeouts(t, registry, kind); got != 1 {
				t.Errorf("ferry_gateway_timeouts_total{timeout=%q} = %v, want 1", kind, got)
			}
		}
	})
	t.Run("idle websocket", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, "ws://"+hosts["idle"]+"/ws", &websocket.DialOptions{HTTPClient: gwHTTP})
		if err != nil {
			t.Fatal(err)
		}
		defer c.CloseNow()
		// Talking every 400ms for 2s keeps a 1s idle timeout away...
		for i := range 5 {
			time.Sleep(400 * time.Millisecond)
			if err := c.Write(ctx, websocket.MessageText, []byte{byte('a' + i)}); err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.Read(ctx); err != nil {
				t.Fatalf("message %d, %v into a talking connection: %v", i, 400*time.Millisecond*time.Duration(i+1), err)
			}
		}
		// ...and silence ends the connection.
		silent := time.Now()
		_, _, err = c.Read(ctx)
		if took := time.Since(silent); err == nil || errors.Is(err, context.DeadlineExceeded) || took < 900*time.Millisecond || took > 5*time.Second {
			t.Errorf("silent WebSocket: read returned %v after %v; want it closed after about 1s", err, took)
		}
	})
}

// createdReady waits for a created Service to be Ready; it returns its Revision and
// its URL's host.
func createdReady(t *testing.T, svc *v1.Service) (string, string) {
	t.Helper()
	waitCondition(t, testClient, svc, duck.ConditionReady, corev1.ConditionTrue, "", 2*time.Minute)
	return svc.Status.LatestReadyRevisionName, strings.TrimPrefix(svc.Status.URL, "http://")
}

// readEvent reads one server-sent event's lines.
func readEvent(br *bufio.Reader) (string, error) {
	var lines []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return strings.Join(lines, "\n"), err
		}
		if line = strings.TrimRight(line, "\n"); line == "" {
			return strings.Join(lines, "\n"), nil
		}
		lines = append(lines, line)
	}
}

// gatewayTimeouts is the gateway's count of timeouts of one kind.
func gatewayTimeouts(t *testing.T, registry *prometheus.Registry, kind string) float64 {
	t.Helper()
	mfs, err := registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "ferry_gateway_timeouts_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == kind {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no ferry_gateway_timeouts_total{timeout=%q}", kind)
	return 0
}
