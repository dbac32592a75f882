package dashboard

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// The transport refuses writes before they leave the process, and counts reads by
// verb and resource the way the API server's metrics would.
func TestTransportOnlyReadsAndCounts(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			t.Errorf("%s reached the API server", r.Method)
		}
	}))
	defer srv.Close()
	c := &requestCounter{}
	client := &http.Client{Transport: c.wrap(http.DefaultTransport)}
	for _, path := range []string{
		"/apis/serving.knative.dev/v1/services?watch=true&resourceVersion=1",
		"/apis/serving.knative.dev/v1/services",
		"/api/v1/namespaces/default/pods?watch=true",
		"/apis/serving.knative.dev/v1/namespaces/default/services/hello",
		"/apis",
	} {
		resp, err := client.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	for _, method := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		req, _ := http.NewRequest(method, srv.URL+"/apis/serving.knative.dev/v1/namespaces/default/services/hello", strings.NewReader("{}"))
		if _, err := client.Do(req); err == nil || !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s: %v, want refused as read-only", method, err)
		}
	}
	want := map[string]int{
		"watch services.serving.knative.dev": 1, "list services.serving.knative.dev": 1, "watch pods": 1,
		"get services.serving.knative.dev": 1, "get /apis": 1,
	}
	got := c.counts()
	if len(got) != len(want) {
		t.Errorf("counts %v, want %v", got, want)
	}
	for k, n := range want {
		if got[k] != n {
			t.Errorf("%s: %d, want %d (all: %v)", k, got[k], n, got)
		}
	}
}
