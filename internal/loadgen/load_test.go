package loadgen

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestRefusesWhatIsOutOfBounds(t *testing.T) {
	ok := Options{URL: "http://127.0.0.1:8080/", Concurrency: 1, Duration: time.Second}
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"a remote host", func(o *Options) { o.URL = "http://example.com/" }, "only sends to loopback addresses"},
		{"a private address", func(o *Options) { o.URL = "http://10.0.0.1:8080/" }, "only sends to loopback addresses"},
		{"not http", func(o *Options) { o.URL = "ftp://127.0.0.1:21/" }, "want an http:// or https:// URL"},
		{"no workers", func(o *Options) { o.Concurrency = 0 }, "concurrency 0: want 1 to 1000"},
		{"too many workers", func(o *Options) { o.Concurrency = 1001 }, "concurrency 1001"},
		{"no duration", func(o *Options) { o.Duration = 0 }, "duration 0s"},
		{"too long", func(o *Options) { o.Duration = time.Hour }, "at most 10m0s"},
		{"too many requests", func(o *Options) { o.Requests = MaxRequests + 1 }, "requests 1000001"},
	} {
		o := ok
		tc.edit(&o)
		if _, err := Run(context.Background(), o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	for _, u := range []string{"http://localhost:1/", "http://[::1]:1/", "http://127.0.0.2:1/"} {
		o := ok
		o.URL, o.Requests = u, 1
		if _, err := Run(context.Background(), o); err != nil {
			t.Errorf("%s: %v, want a run", u, err)
		}
	}
}

// A run with a request budget sends exactly that many, with the Host header, and
// counts each answer by code with its latency.
func TestRunCountsCodesAndLatency(t *testing.T) {
	var n, wrongHost atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Host != "app.default.example.com" {
			wrongHost.Add(1)
		}
		time.Sleep(20 * time.Millisecond)
		if n.Add(1)%4 == 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	res, err := Run(context.Background(), Options{URL: srv.URL, Host: "app.default.example.com", Concurrency: 4, Duration: time.Minute, Requests: 40})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests() != 40 || res.Codes[200] != 30 || res.Codes[503] != 10 || len(res.Errors) != 0 {
		t.Errorf("%d requests: codes %v, errors %v; want 30 × 200 and 10 × 503", res.Requests(), res.Codes, res.Errors)
	}
	if wrongHost.Load() != 0 {
		t.Errorf("%d requests without the Host header", wrongHost.Load())
	}
	if l := res.Latency; l.Count != 40 || l.P50 < 20*time.Millisecond || l.P99 < l.P50 {
		t.Errorf("latency %+v; each request took at least 20ms", l)
	}
	// 4 workers, 20ms a request: about 200 requests/s.
	if r := res.Rate(); r < 50 || r > 200 {
		t.Errorf("rate %.1f requests/s, want about 200 or less", r)
	}
	var out bytes.Buffer
	res.Print(&out)
	for _, want := range []string{"Requests:  40 in ", "Status:    200: 30 503: 10", "Latency:   p50 "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// The duration ends a run without a budget; a request cut by the end is not counted
// as a failure; an unreachable target is.
func TestRunEndsAtTheDuration(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(time.Minute):
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	start := time.Now()
	res, err := Run(context.Background(), Options{URL: srv.URL, Concurrency: 3, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second || res.Requests() != 0 {
		t.Errorf("took %v, %d requests counted (codes %v, errors %v); want about 300ms and none", took, res.Requests(), res.Codes, res.Errors)
	}
	srv.Close()
	res, err = Run(context.Background(), Options{URL: srv.URL, Concurrency: 1, Duration: time.Minute, Requests: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests() != 3 || len(res.Errors) == 0 {
		t.Errorf("against a closed port: codes %v, errors %v; want 3 errors", res.Codes, res.Errors)
	}
}
