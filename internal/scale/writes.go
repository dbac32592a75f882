package scale

// Write accounting from the API server's side: apiserver_request_total before and
// after a run, by resource and verb, every component's writes together.

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"k8s.io/client-go/kubernetes"
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

// ScrapeRequestTotals reads apiserver_request_total from the API server's /metrics.
func ScrapeRequestTotals(ctx context.Context, cfg *rest.Config) (Counts, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, err
	}
	return ParseRequestTotals(strings.NewReader(string(body)))
}
