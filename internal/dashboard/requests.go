package dashboard

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
)

// requestCounter is the dashboard's transport to the API server: it refuses every
// request but a read, so that no page and no bug can change the cluster whatever the
// credentials allow, and counts the reads by verb and resource, to measure the
// dashboard's own load (one list and one watch per kind, not a poll per object).
type requestCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *requestCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Method != http.MethodGet {
			return nil, fmt.Errorf("the dashboard is read-only: refused %s %s", req.Method, req.URL.Path)
		}
		c.count(verb(req) + " " + resource(req.URL.Path))
		return rt.RoundTrip(req)
	})
}

func (c *requestCounter) count(k string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[k]++
}

func (c *requestCounter) counts() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.n))
	for k, v := range c.n {
		out[k] = v
	}
	return out
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// verb tells a watch, a list and a get apart as the API server does: by the watch
// parameter, and by whether the path ends in a name.
func verb(req *http.Request) string {
	if req.URL.Query().Get("watch") == "true" {
		return "watch"
	}
	if len(resourcePath(req.URL.Path)) == 1 {
		return "list"
	}
	return "get"
}

// resource is the path's resource and group: "services.serving.knative.dev",
// "pods"; the path itself when it names none (discovery).
func resource(path string) string {
	segs := resourcePath(path)
	if len(segs) == 0 {
		return path
	}
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if parts[0] == "apis" && len(parts) > 1 {
		return segs[0] + "." + parts[1]
	}
	return segs[0]
}

// resourcePath is what follows the group, version and namespace in an API path:
// [resource] or [resource, name, ...]; nil for other paths.
func resourcePath(path string) []string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return nil
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	return parts
}
