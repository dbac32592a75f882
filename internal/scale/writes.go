package scale

import (
	"bufio"
	"cmp"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/client-go/rest"
)

// WriteKey is one series of writes: a resource (with group and subresource) and the
// verb as the API server's apiserver_request_total reports it.
type WriteKey struct {
	Group       string `json:"group,omitempty"`
	Resource    string `json:"resource"`
	Subresource string `json:"subresource,omitempty"`
	Verb        string `json:"verb"`
}

// ResourceName is the resource as kubectl spells it, with group and subresource:
// pods, pods/binding, services.serving.knative.dev/status.
func (k WriteKey) ResourceName() string {
	s := k.Resource
	if k.Group != "" {
		s += "." + k.Group
	}
	if k.Subresource != "" {
		s += "/" + k.Subresource
	}
	return s
}

// writeVerbs are the verbs of apiserver_request_total that change state. The API
// server reports the HTTP method for most (POST, PUT, PATCH, DELETE), APPLY for a
// server-side apply patch; CREATE and UPDATE are listed as valid too.
var writeVerbs = map[string]bool{
	"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "DELETECOLLECTION": true,
	"APPLY": true, "CREATE": true, "UPDATE": true,
}

// IsWriteVerb reports whether verb changes state.
func IsWriteVerb(verb string) bool { return writeVerbs[strings.ToUpper(verb)] }

// Counts are request counts by series.
type Counts map[WriteKey]int64

// ParseRequestTotals reads apiserver_request_total from a Prometheus text exposition
// (the API server's /metrics), summing over the labels other than group, resource,
// subresource and verb (code, scope, version, component, dry_run). Dry runs are left
// out: they write nothing.
func ParseRequestTotals(r io.Reader) (Counts, error) {
	const metric = "apiserver_request_total"
	counts := Counts{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	found := false
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metric) {
			continue
		}
		rest := line[len(metric):]
		if rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue // another metric with this prefix
		}
		found = true
		labels := map[string]string{}
		if rest[0] == '{' {
			var err error
			labels, rest, err = parseLabels(rest[1:])
			if err != nil {
				return nil, fmt.Errorf("%s: %w in %q", metric, err, line)
			}
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			return nil, fmt.Errorf("%s: no value in %q", metric, line)
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return nil, fmt.Errorf("%s: value in %q: %w", metric, line, err)
		}
		if labels["dry_run"] != "" {
			continue
		}
		k := WriteKey{Group: labels["group"], Resource: labels["resource"], Subresource: labels["subresource"], Verb: labels["verb"]}
		counts[k] += int64(v)
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if !found {
		return nil, fmt.Errorf("no %s in the metrics", metric)
	}
	return counts, nil
}

// parseLabels parses `name="value",...}` and returns what follows the brace.
func parseLabels(s string) (map[string]string, string, error) {
	labels := map[string]string{}
	for {
		s = strings.TrimLeft(s, " ,")
		if strings.HasPrefix(s, "}") {
			return labels, s[1:], nil
		}
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return nil, "", fmt.Errorf("malformed label")
		}
		name := strings.TrimSpace(s[:eq])
		s = s[eq+2:]
		var v strings.Builder
		closed := false
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					v.WriteByte('\n')
				default:
					v.WriteByte(s[i])
				}
				continue
			}
			if c == '"' {
				s = s[i+1:]
				closed = true
				break
			}
			v.WriteByte(c)
		}
		if !closed {
			return nil, "", fmt.Errorf("unterminated label value")
		}
		labels[name] = v.String()
	}
}

// Sub is c - before, keeping the positive differences (a counter that went down was
// reset; then c itself is the increase).
func (c Counts) Sub(before Counts) Counts {
	out := Counts{}
	for k, v := range c {
		d := v - before[k]
		if d < 0 {
			d = v
		}
		if d > 0 {
			out[k] = d
		}
	}
	return out
}

// Writes keeps the series whose verb writes.
func (c Counts) Writes() Counts {
	out := Counts{}
	for k, v := range c {
		if IsWriteVerb(k.Verb) {
			out[k] = v
		}
	}
	return out
}

// Total sums every series.
func (c Counts) Total() int64 {
	var t int64
	for _, v := range c {
		t += v
	}
	return t
}

// ByVerb sums the series by verb.
func (c Counts) ByVerb() map[string]int64 {
	out := map[string]int64{}
	for k, v := range c {
		out[k.Verb] += v
	}
	return out
}

// WriteRow is one resource's writes in a table.
type WriteRow struct {
	Resource string           `json:"resource"`
	ByVerb   map[string]int64 `json:"byVerb"`
	Total    int64            `json:"total"`
}

// Rows groups the counts by resource, the most written first.
func (c Counts) Rows() []WriteRow {
	byRes := map[string]*WriteRow{}
	for k, v := range c {
		name := k.ResourceName()
		r := byRes[name]
		if r == nil {
			r = &WriteRow{Resource: name, ByVerb: map[string]int64{}}
			byRes[name] = r
		}
		r.ByVerb[k.Verb] += v
		r.Total += v
	}
	rows := make([]WriteRow, 0, len(byRes))
	for _, r := range byRes {
		rows = append(rows, *r)
	}
	slices.SortFunc(rows, func(a, b WriteRow) int {
		return cmp.Or(cmp.Compare(b.Total, a.Total), cmp.Compare(a.Resource, b.Resource))
	})
	return rows
}

// Verbs are the verbs that occur in c, in a fixed order.
func (c Counts) Verbs() []string {
	seen := map[string]bool{}
	for k := range c {
		seen[k.Verb] = true
	}
	order := []string{"POST", "CREATE", "PUT", "UPDATE", "PATCH", "APPLY", "DELETE", "DELETECOLLECTION"}
	var out []string
	for _, v := range order {
		if seen[v] {
			out = append(out, v)
			delete(seen, v)
		}
	}
	return append(out, slices.Sorted(maps.Keys(seen))...)
}

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
