package routing

import (
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// compiledIngress is one KIngress generation turned into routing data. It is cached by
// UID and generation, so an event that does not change the spec costs no compile.
type compiledIngress struct {
	key        types.NamespacedName
	uid        types.UID
	generation int64
	created    time.Time
	// hosts maps each canonical host to what it serves; nil when invalid is set.
	hosts map[string]*VirtualHost
	// invalid says why the spec cannot be programmed.
	invalid *specError
	// services are the references taken for the splits, given back when this entry
	// is replaced.
	services []*backends.Service
}

// specError is a spec that cannot be programmed, with the condition reason to report.
type specError struct {
	reason  string
	message string
}

func (e *specError) Error() string { return e.message }

func invalidSpec(reason, format string, args ...any) *specError {
	return &specError{reason: reason, message: fmt.Sprintf(format, args...)}
}

// Condition reasons for an ingress that cannot be programmed.
const (
	reasonInvalidHost  = v1alpha1.ReasonInvalidHost
	reasonInvalidPath  = v1alpha1.ReasonInvalidPath
	reasonInvalidSplit = v1alpha1.ReasonInvalidSplit
	reasonHostConflict = v1alpha1.ReasonHostConflict
)

// compileIngress compiles ing, taking references on the services its splits use.
func compileIngress(ing *v1alpha1.Ingress, services *backends.Registry) *compiledIngress {
	ci := &compiledIngress{
		key:        types.NamespacedName{Namespace: ing.Namespace, Name: ing.Name},
		uid:        ing.UID,
		generation: ing.Generation,
		created:    ing.CreationTimestamp.Time,
	}
	if err := validateSpec(&ing.Spec); err != nil {
		ci.invalid = err
		return ci
	}
	ci.hosts = map[string]*VirtualHost{}
	for _, rule := range ing.Spec.Rules {
		external := rule.Visibility != v1alpha1.IngressVisibilityClusterLocal
		var routes []*Route
		for _, p := range rule.HTTP.Paths {
			routes = append(routes, ci.compilePath(ing.Namespace, &p, services))
		}
		for _, h := range rule.Hosts {
			host, _ := CanonicalHost(h)
			vh := ci.hosts[host]
			if vh == nil {
				vh = &VirtualHost{}
				ci.hosts[host] = vh
			}
			if external {
				vh.external = append(vh.external, routes...)
			}
			vh.local = append(vh.local, routes...)
		}
	}
	for _, vh := range ci.hosts {
		sortBySpecificity(vh.external)
		sortBySpecificity(vh.local)
	}
	return ci
}

func (ci *compiledIngress) compilePath(namespace string, p *v1alpha1.HTTPIngressPath, services *backends.Registry) *Route {
	rt := &Route{
		prefix:        p.Path,
		AppendHeaders: sortedHeaders(p.AppendHeaders),
		RewriteHost:   p.RewriteHost,
	}
	for name, m := range p.Headers {
		rt.headers = append(rt.headers, Header{Name: http.CanonicalHeaderKey(name), Value: m.Exact})
	}
	sortHeaders(rt.headers)
	for _, s := range p.Splits {
		weight := s.Percent
		if len(p.Splits) == 1 {
			// A lone split may omit its percent (Knative's rule); it takes everything.
			weight = 100
		}
		ns := s.ServiceNamespace
		if ns == "" {
			ns = namespace
		}
		svc := services.Acquire(types.NamespacedName{Namespace: ns, Name: s.ServiceName})
		ci.services = append(ci.services, svc)
		rt.total += weight
		rt.splits = append(rt.splits, Split{
			Service:       svc,
			Port:          s.ServicePort,
			upTo:          rt.total,
			AppendHeaders: sortedHeaders(s.AppendHeaders),
		})
	}
	return rt
}

// sortBySpecificity orders routes longest prefix first and, for equal prefixes, more
// header matches first; otherwise the spec's order stands, so a rule can list a
// header-matched path before its catch-all as Knative's tag routing does.
func sortBySpecificity(routes []*Route) {
	sort.SliceStable(routes, func(i, j int) bool {
		if len(routes[i].prefix) != len(routes[j].prefix) {
			return len(routes[i].prefix) > len(routes[j].prefix)
		}
		return len(routes[i].headers) > len(routes[j].headers)
	})
}

// sortedHeaders fixes the order of a map's headers so that a compiled route does not
// depend on map iteration.
func sortedHeaders(m map[string]string) []Header {
	if len(m) == 0 {
		return nil
	}
	hs := make([]Header, 0, len(m))
	for name, value := range m {
		hs = append(hs, Header{Name: http.CanonicalHeaderKey(name), Value: value})
	}
	sortHeaders(hs)
	return hs
}

func sortHeaders(hs []Header) {
	slices.SortFunc(hs, func(a, b Header) int { return strings.Compare(a.Name, b.Name) })
}

// validateSpec checks what the gateway needs to route; the CRD schema checks the rest.
func validateSpec(spec *v1alpha1.IngressSpec) *specError {
	for i, rule := range spec.Rules {
		if len(rule.Hosts) == 0 {
			return invalidSpec(reasonInvalidHost, "rule %d has no hosts", i)
		}
		for _, h := range rule.Hosts {
			if _, ok := CanonicalHost(h); !ok {
				return invalidSpec(reasonInvalidHost, "rule %d: %q is not a valid host", i, h)
			}
		}
		if rule.HTTP == nil || len(rule.HTTP.Paths) == 0 {
			return invalidSpec(reasonInvalidPath, "rule %d has no HTTP paths", i)
		}
		for _, p := range rule.HTTP.Paths {
			if err := validatePath(&p); err != nil {
				return invalidSpec(err.reason, "rule %d: %s", i, err.message)
			}
		}
	}
	return nil
}

func validatePath(p *v1alpha1.HTTPIngressPath) *specError {
	if p.Path != "" && !strings.HasPrefix(p.Path, "/") {
		return invalidSpec(reasonInvalidPath, "path %q does not start with /", p.Path)
	}
	if len(p.Splits) == 0 {
		return invalidSpec(reasonInvalidSplit, "path %q has no splits", p.Path)
	}
	total := 0
	for j, s := range p.Splits {
		switch {
		case s.ServiceName == "":
			return invalidSpec(reasonInvalidSplit, "path %q: split %d has no serviceName", p.Path, j)
		case s.ServicePort.Type == intstr.Int && s.ServicePort.IntVal <= 0,
			s.ServicePort.Type == intstr.String && s.ServicePort.StrVal == "":
			return invalidSpec(reasonInvalidSplit, "path %q: split %d (%s) has no servicePort", p.Path, j, s.ServiceName)
		case s.Percent < 0:
			return invalidSpec(reasonInvalidSplit, "path %q: split %d (%s) has negative percent %d", p.Path, j, s.ServiceName, s.Percent)
		}
		total += s.Percent
	}
	if total != 100 && !(len(p.Splits) == 1 && total == 0) {
		return invalidSpec(reasonInvalidSplit, "path %q: split percents sum to %d, not 100", p.Path, total)
	}
	return nil
}
