package scale

// Write accounting from one client's side: what Ferry wrote, which the API
// server's metrics cannot tell apart from the other components' writes.

import (
	"maps"
	"net/http"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// WriteCounter counts the writes a client makes, by resource and verb, from the
// request paths, as the API server would. Wrap a rest.Config with it to learn what
// one component (Ferry, say) wrote, which apiserver_request_total cannot tell apart.
type WriteCounter struct {
	mu     sync.Mutex
	counts Counts
}

// NewWriteCounter returns an empty counter.
func NewWriteCounter() *WriteCounter { return &WriteCounter{counts: Counts{}} }

// Wrap makes cfg's clients count their writes here.
func (w *WriteCounter) Wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet && req.Method != http.MethodHead && req.Method != http.MethodOptions {
				k := KeyOfRequest(req.Method, req.URL.Path, req.Header.Get("Content-Type"))
				w.mu.Lock()
				w.counts[k]++
				w.mu.Unlock()
			}
			return rt.RoundTrip(req)
		})
	})
}

// Snapshot is a copy of the counts so far.
func (w *WriteCounter) Snapshot() Counts {
	w.mu.Lock()
	defer w.mu.Unlock()
	return maps.Clone(w.counts)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// KeyOfRequest maps a request to the series apiserver_request_total would count it
// in: /api/v1/namespaces/ns/pods/p/status PUT → {"" pods status PUT}, a PATCH with
// the apply content type → APPLY.
func KeyOfRequest(method, path, contentType string) WriteKey {
	verb := strings.ToUpper(method)
	if verb == http.MethodPatch && strings.HasPrefix(contentType, "application/apply-patch") {
		verb = "APPLY"
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	var group string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:] // api, v1
	case len(parts) >= 3 && parts[0] == "apis":
		group = parts[1]
		parts = parts[3:] // apis, group, version
	default:
		return WriteKey{Resource: "(non-resource) " + path, Verb: verb}
	}
	if len(parts) > 2 && parts[0] == "namespaces" && !(len(parts) == 3 && (parts[2] == "status" || parts[2] == "finalize")) {
		parts = parts[2:] // a namespaced resource, not a namespace's own subresource
	}
	k := WriteKey{Group: group, Verb: verb}
	if len(parts) > 0 {
		k.Resource = parts[0]
	}
	if len(parts) > 2 {
		k.Subresource = parts[2]
	}
	if verb == http.MethodDelete && len(parts) == 1 {
		k.Verb = "DELETECOLLECTION"
	}
	return k
}
