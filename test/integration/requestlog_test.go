package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/manager"
)

// TestRequestLogs runs Ferry as `ferry controller` and `ferry gateway` assemble it and
// turns Knative's request log on and off through config-observability, without a
// restart: the gateway's lines render Knative's default template with the request's,
// the answer's and the pod's values; probes are left out; a bad value keeps the last
// good configuration and is reported; logging.revision-url-template reaches the
// Revision's status.logUrl. ferry-system is cluster-wide: the test is not parallel.
func TestRequestLogs(t *testing.T) {
	ctx := context.Background()
	setAsideConfigMaps(t)
	lines := &lineBuffer{}
	f, err := manager.New(rest.CopyConfig(testConfig), manager.Options{
		Reconcilers: true,
		Gateway: &gateway.Options{ExternalAddr: "127.0.0.1:0", LocalAddr: "127.0.0.1:0",
			DialContext: dialPodOnLoopback, RequestLog: lines},
		SkipNameValidation: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	runManager(t, f)

	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)
	svc := ksvc(ns, "hello", "example.com/hello:1")
	if err := testClient.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, testClient, svc, duck.ConditionReady, corev1.ConditionTrue, "", 2*time.Minute)
	u, err := url.Parse(svc.Status.URL)
	if err != nil || u.Host == "" {
		t.Fatalf("Service URL %q: %v", svc.Status.URL, err)
	}
	revName := svc.Status.LatestReadyRevisionName
	pods := &corev1.PodList{}
	if err := testClient.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{v1.RevisionLabelKey: revName}); err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods of %s: %d, %v", revName, len(pods.Items), err)
	}
	pod := pods.Items[0]

	gw := f.Gateway.ExternalAddr()
	request := func(path string, header http.Header) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "http://"+gw+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Host, req.Header = u.Host, header
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
	}
	request("/before", nil)
	if got := lines.take(); got != nil {
		t.Fatalf("request log lines with config-observability absent: %q", got)
	}

	applyConfigMap(t, config.ObservabilityConfigName, map[string]string{
		"logging.enable-request-log":    "true",
		"logging.revision-url-template": "http://logs.example.com/?revisionUID=${REVISION_UID}",
	})
	const traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	var line string
	eventually(t, 20*time.Second, func() (bool, string) {
		request("/hello?name=ferry", http.Header{"User-Agent": {"requestlog-test/1"},
			"Traceparent": {"00-" + traceID + "-00f067aa0ba902b7-01"}})
		got := lines.take()
		if len(got) == 0 {
			return false, "no request log line"
		}
		line = got[len(got)-1]
		return true, ""
	})
	var entry struct {
		HTTPRequest map[string]any `json:"httpRequest"`
		TraceID     string         `json:"traceId"`
	}
	if err := json.Unmarshal([]byte(line), &entry); err != nil {
		t.Fatalf("the line is not Knative's JSON: %v: %s", err, line)
	}
	want := map[string]any{"requestMethod": "GET", "requestUrl": "/hello?name=ferry", "status": float64(200),
		"userAgent": "requestlog-test/1", "serverIp": pod.Status.PodIP, "protocol": "HTTP/1.1", "requestSize": "0"}
	for k, v := range want {
		if entry.HTTPRequest[k] != v {
			t.Errorf("%s = %#v, want %#v (line %s)", k, entry.HTTPRequest[k], v, line)
		}
	}
	if size, _ := entry.HTTPRequest["responseSize"].(string); size == "" || size == "0" {
		t.Errorf("responseSize = %q, want the simulated pod's body (line %s)", size, line)
	}
	if lat, _ := entry.HTTPRequest["latency"].(string); !strings.HasSuffix(lat, "s") {
		t.Errorf("latency = %q (line %s)", lat, line)
	}
	if entry.TraceID != traceID {
		t.Errorf("traceId = %q, want the caller's %s", entry.TraceID, traceID)
	}

	rev := &v1.Revision{}
	eventually(t, 20*time.Second, func() (bool, string) {
		if err := testClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: revName}, rev); err != nil {
			return false, err.Error()
		}
		return rev.Status.LogURL == "http://logs.example.com/?revisionUID="+string(rev.UID), "logUrl " + rev.Status.LogURL
	})

	// Probes are not logged unless asked for.
	request("/", http.Header{"K-Network-Probe": {"probe"}})
	if got := lines.take(); got != nil {
		t.Errorf("a probe was logged: %q", got)
	}

	// Knative's template fields, in a template of the user's own.
	applyConfigMap(t, config.ObservabilityConfigName, map[string]string{
		"logging.enable-request-log":       "true",
		"logging.enable-probe-request-log": "true",
		"logging.request-log-template":     "{{.Revision.Namespace}} {{.Revision.Service}} {{.Revision.Configuration}} {{.Revision.Name}} {{.Revision.PodName}} {{.Response.Code}} {{.Request.Header.Get \"K-Network-Probe\"}}",
	})
	wantLine := strings.Join([]string{ns, "hello", "hello", revName, pod.Name, "200", "probe"}, " ")
	eventually(t, 20*time.Second, func() (bool, string) {
		request("/", http.Header{"K-Network-Probe": {"probe"}})
		got := lines.take()
		return len(got) > 0 && got[len(got)-1] == wantLine, "lines " + strings.Join(got, " | ") + ", want " + wantLine
	})
	eventually(t, 20*time.Second, func() (bool, string) {
		err := testClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: revName}, rev)
		return err == nil && rev.Status.LogURL == "", "logUrl " + rev.Status.LogURL
	})

	// A bad value: reported, and the last good configuration stays in force.
	applyConfigMap(t, config.ObservabilityConfigName, map[string]string{
		"logging.enable-request-log":   "true",
		"logging.request-log-template": "{{.Revision.Name",
	})
	waitConfigEvent(t, config.ObservabilityConfigName, "logging.request-log-template")
	lines.take()
	request("/", http.Header{"K-Network-Probe": {"probe"}})
	if got := lines.take(); len(got) != 1 || got[0] != wantLine {
		t.Errorf("after a bad template: lines %q, want the last good template's %q", got, wantLine)
	}

	// Off again.
	applyConfigMap(t, config.ObservabilityConfigName, map[string]string{"logging.enable-request-log": "false"})
	eventually(t, 20*time.Second, func() (bool, string) {
		lines.take()
		request("/", nil)
		got := lines.take()
		return got == nil, "still logging: " + strings.Join(got, " | ")
	})
}

// lineBuffer collects what the gateway writes, a line per Write.
type lineBuffer struct{ syncBuffer }

// take returns the whole lines written since the last take, without their newlines.
func (b *lineBuffer) take() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := b.buf.String()
	b.buf.Reset()
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}
