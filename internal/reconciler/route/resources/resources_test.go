package resources

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/route/rollout"
)

func route(labels map[string]string) *v1.Route {
	return &v1.Route{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "ns", UID: "uid-1", Labels: labels}}
}

func p(i int64) *int64 { return &i }

func TestURLs(t *testing.T) {
	tests := []struct {
		name   string
		labels map[string]string
		tag    string
		want   string
	}{
		{"route", nil, "", "http://hello.ns.example.com"},
		{"tag", nil, "canary", "http://canary-hello.ns.example.com"},
		{"cluster-local", map[string]string{v1.VisibilityLabelKey: v1.VisibilityClusterLocal}, "", "http://hello.ns.svc.cluster.local"},
		{"cluster-local tag", map[string]string{v1.VisibilityLabelKey: v1.VisibilityClusterLocal}, "canary", "http://canary-hello.ns.svc.cluster.local"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := route(tc.labels)
			if got := DefaultHosts(r, []v1.TrafficTarget{{Tag: tc.tag}}).URL(tc.tag); got != tc.want {
				t.Errorf("URL = %q, want %q", got, tc.want)
			}
		})
	}
	if got := AddressURL(route(nil)); got != "http://hello.ns.svc.cluster.local" {
		t.Errorf("AddressURL = %q", got)
	}
}

type rule struct {
	hosts      []string
	visibility netv1alpha1.IngressVisibility
	splits     map[string]int
}

func rulesOf(ing *netv1alpha1.Ingress) []rule {
	var out []rule
	for _, r := range ing.Spec.Rules {
		splits := map[string]int{}
		for _, s := range r.HTTP.Paths[0].Splits {
			splits[s.ServiceName] = s.Percent
		}
		out = append(out, rule{r.Hosts, r.Visibility, splits})
	}
	return out
}

func TestMakeIngress(t *testing.T) {
	local := []string{"hello.ns", "hello.ns.svc", "hello.ns.svc.cluster.local"}
	tests := []struct {
		name    string
		labels  map[string]string
		targets []v1.TrafficTarget
		// served is the default split during a rollout (nil: targets), tagged what the
		// tags' hosts serve (nil: their Revisions).
		served, tagged []v1.TrafficTarget
		want           []rule
	}{{
		name:    "all to one revision",
		targets: []v1.TrafficTarget{{RevisionName: "hello-00001", Percent: p(100)}},
		want: []rule{
			{[]string{"hello.ns.example.com"}, netv1alpha1.IngressVisibilityExternalIP, map[string]int{"hello-00001": 100}},
			{local, netv1alpha1.IngressVisibilityClusterLocal, map[string]int{"hello-00001": 100}},
		},
	}, {
		name: "split, tags, a zero share and a revision named twice",
		targets: []v1.TrafficTarget{
			{RevisionName: "hello-00002", Percent: p(70), Tag: "current"},
			{RevisionName: "hello-00001", Percent: p(20)},
			{RevisionName: "hello-00002", Percent: p(10)},
			{RevisionName: "hello-00003", Percent: p(0), Tag: "next"},
		},
		want: []rule{
			{[]string{"hello.ns.example.com"}, netv1alpha1.IngressVisibilityExternalIP, map[string]int{"hello-00002": 80, "hello-00001": 20}},
			{local, netv1alpha1.IngressVisibilityClusterLocal, map[string]int{"hello-00002": 80, "hello-00001": 20}},
			{[]string{"current-hello.ns.example.com"}, netv1alpha1.IngressVisibilityExternalIP, map[string]int{"hello-00002": 100}},
			{[]string{"current-hello.ns", "current-hello.ns.svc", "current-hello.ns.svc.cluster.local"}, netv1alpha1.IngressVisibilityClusterLocal, map[string]int{"hello-00002": 100}},
			{[]string{"next-hello.ns.example.com"}, netv1alpha1.IngressVisibilityExternalIP, map[string]int{"hello-00003": 100}},
			{[]string{"next-hello.ns", "next-hello.ns.svc", "next-hello.ns.svc.cluster.local"}, netv1alpha1.IngressVisibilityClusterLocal, map[string]int{"hello-00003": 100}},
		},
	}, {
		name:    "cluster-local route has no external rule",
		labels:  map[string]string{v1.VisibilityLabelKey: v1.VisibilityClusterLocal},
		targets: []v1.TrafficTarget{{RevisionName: "hello-00001", Percent: p(100)}},
		want:    []rule{{local, netv1alpha1.IngressVisibilityClusterLocal, map[string]int{"hello-00001": 100}}},
	}, {
		name: "rollout: the default split and a tag's host are the ones served",
		targets: []v1.TrafficTarget{
			{RevisionName: "hello-00003", Percent: p(90), Tag: "current"},
			{RevisionName: "hello-00001", Percent: p(10), Tag: "old"},
		},
		served: []v1.TrafficTarget{
			{RevisionName: "hello-00002", Percent: p(60), Tag: "current"},
			{RevisionName: "hello-00003", Percent: p(30), Tag: "current"},
			{RevisionName: "hello-00001", Percent: p(10), Tag: "old"},
		},
		tagged: []v1.TrafficTarget{
			{RevisionName: "hello-00002", Percent: p(66), Tag: "current"},
			{RevisionName: "hello-00003", Percent: p(34), Tag: "current"},
			{RevisionName: "hello-00001", Percent: p(100), Tag: "old"},
		},
		want: []rule{
			{[]string{"hello.ns.example.com"}, netv1alpha1.IngressVisibilityExternalIP, map[string]int{"hello-00002": 60, "hello-00003": 30, "hello-00001": 10}},
			{local, netv1alpha1.IngressVisibilityClusterLocal, map[string]int{"hello-00002": 60, "hello-00003": 30, "hello-00001": 10}},
			{[]string{"current-hello.ns.example.com"}, netv1alpha1.IngressVisibilityExternalIP, map[string]int{"hello-00002": 66, "hello-00003": 34}},
			{[]string{"current-hello.ns", "current-hello.ns.svc", "current-hello.ns.svc.cluster.local"}, netv1alpha1.IngressVisibilityClusterLocal, map[string]int{"hello-00002": 66, "hello-00003": 34}},
			{[]string{"old-hello.ns.example.com"}, netv1alpha1.IngressVisibilityExternalIP, map[string]int{"hello-00001": 100}},
			{[]string{"old-hello.ns", "old-hello.ns.svc", "old-hello.ns.svc.cluster.local"}, netv1alpha1.IngressVisibilityClusterLocal, map[string]int{"hello-00001": 100}},
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			served, tagged := tc.served, tc.tagged
			if served == nil {
				served = tc.targets
			}
			if tagged == nil {
				tagged = rollout.TagHosts(tc.targets, nil)
			}
			ing := MakeIngress(route(tc.labels), served, tagged, DefaultHosts(route(tc.labels), tc.targets), false)
			if got := rulesOf(ing); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("rules:\n got %+v\nwant %+v", got, tc.want)
			}
			if ing.Annotations[netv1alpha1.IngressClassAnnotationKey] != netv1alpha1.IngressClass {
				t.Errorf("class annotation = %v", ing.Annotations)
			}
			if ing.Name != "hello" || ing.Labels[v1.RouteLabelKey] != "hello" || !metav1.IsControlledBy(ing, route(nil)) {
				t.Errorf("metadata = %+v", ing.ObjectMeta)
			}
			s := ing.Spec.Rules[0].HTTP.Paths[0].Splits[0]
			if s.AppendHeaders[netv1alpha1.RevisionHeader] != s.ServiceName || s.AppendHeaders[netv1alpha1.NamespaceHeader] != "ns" || s.ServicePort.IntValue() != 80 || s.ServiceNamespace != "ns" {
				t.Errorf("split = %+v", s)
			}
		})
	}
}

func TestMakePlaceholderService(t *testing.T) {
	s := MakePlaceholderService(route(map[string]string{v1.ServiceLabelKey: "hello"}), "hello", "gw.example.svc.cluster.local")
	if s.Spec.Type != corev1.ServiceTypeExternalName || s.Spec.ExternalName != "gw.example.svc.cluster.local" {
		t.Errorf("spec = %+v", s.Spec)
	}
	if s.Name != "hello" || s.Labels[v1.RouteLabelKey] != "hello" || s.Labels[v1.ServiceLabelKey] != "hello" || !metav1.IsControlledBy(s, route(nil)) {
		t.Errorf("metadata = %+v", s.ObjectMeta)
	}
	// A tag's is the same but for its name; a cluster-local Route's visibility label is
	// not copied (it is the user's, per name).
	tag := MakePlaceholderService(route(map[string]string{v1.ServiceLabelKey: "hello", v1.VisibilityLabelKey: v1.VisibilityClusterLocal}), "v1-hello", "gw.example.svc.cluster.local")
	if tag.Name != "v1-hello" || !reflect.DeepEqual(tag.Spec, s.Spec) || !reflect.DeepEqual(tag.Labels, s.Labels) || !metav1.IsControlledBy(tag, route(nil)) {
		t.Errorf("tag placeholder = %+v", tag)
	}
}

// TestIngressName: the KIngress has the Route's name, up to the longest (63) admission
// accepts, so KIngresses made before Ferry used kmeta.ChildName are adopted; the Route's
// label on it holds the same name.
func TestIngressName(t *testing.T) {
	for _, name := range []string{"hello", "the-longest-name-knative-accepts-for-a-service-is-63-characters"} {
		r := route(nil)
		r.Name = name
		targets := []v1.TrafficTarget{{RevisionName: "x", Percent: p(100)}}
		ing := MakeIngress(r, targets, nil, DefaultHosts(r, nil), false)
		if IngressName(r) != name || ing.Name != name || ing.Labels[v1.RouteLabelKey] != name {
			t.Errorf("KIngress of Route %q: name %q, IngressName %q, route label %q", name, ing.Name, IngressName(r), ing.Labels[v1.RouteLabelKey])
		}
		if got, want := DefaultHosts(r, nil).Host(""), name+".ns.example.com"; got != want {
			t.Errorf("host = %q, want %q", got, want)
		}
	}
}

// path is an HTTPIngressPath in short: the header it matches, the headers it appends
// and its Revisions' percents.
type path struct {
	match, add map[string]string
	splits     map[string]int
}

func pathsOf(rule netv1alpha1.IngressRule) []path {
	var out []path
	for _, p := range rule.HTTP.Paths {
		var match map[string]string
		for name, m := range p.Headers {
			if match == nil {
				match = map[string]string{}
			}
			match[name] = m.Exact
		}
		splits := map[string]int{}
		for _, s := range p.Splits {
			splits[s.ServiceName] = s.Percent
		}
		out = append(out, path{match, p.AppendHeaders, splits})
	}
	return out
}

// TestMakeIngressTagHeaderRollout: during a rollout of a tag's host, its header path
// on the Route's own hosts splits as the tag's host does.
func TestMakeIngressTagHeaderRollout(t *testing.T) {
	r := route(nil)
	targets := []v1.TrafficTarget{{RevisionName: "hello-00002", Percent: p(100), Tag: "latest"}}
	tagged := []v1.TrafficTarget{
		{RevisionName: "hello-00001", Percent: p(70), Tag: "latest"},
		{RevisionName: "hello-00002", Percent: p(30), Tag: "latest"},
	}
	ing := MakeIngress(r, tagged, tagged, DefaultHosts(r, targets), true)
	split := map[string]int{"hello-00001": 70, "hello-00002": 30}
	want := map[string][]path{
		"hello.ns.example.com": {{match: map[string]string{RouteTagHeader: "latest"}, splits: split},
			{add: map[string]string{DefaultRouteHeader: "true"}, splits: split}},
		"latest-hello.ns.example.com": {{add: map[string]string{RouteTagHeader: "latest"}, splits: split}},
	}
	seen := 0
	for _, rule := range ing.Spec.Rules {
		w, ok := want[rule.Hosts[0]]
		if !ok {
			continue
		}
		seen++
		if !reflect.DeepEqual(pathsOf(rule), w) {
			t.Errorf("%s: paths\n got %+v\nwant %+v", rule.Hosts[0], pathsOf(rule), w)
		}
	}
	if seen != len(want) {
		t.Errorf("%d of the %d external rules", seen, len(want))
	}
}

// TestMakeIngressTagHeaderRouting: config-features tag-header-based-routing as Knative
// builds it. Disabled, each rule has one path and no headers; Enabled, the Route's own
// rules (both visibilities) match Knative-Serving-Tag per tag, sorted, before the
// default path, which appends Knative-Serving-Default-Route; tag rules append their tag.
func TestMakeIngressTagHeaderRouting(t *testing.T) {
	targets := []v1.TrafficTarget{
		{RevisionName: "hello-00002", Percent: p(80), Tag: "latest"},
		{RevisionName: "hello-00001", Percent: p(20)},
		{RevisionName: "hello-00003", Percent: p(0), Tag: "canary"},
	}
	main := map[string]int{"hello-00002": 80, "hello-00001": 20}
	byTag := func(tag, rev string) path {
		return path{match: map[string]string{RouteTagHeader: tag}, splits: map[string]int{rev: 100}}
	}
	enabledMain := []path{byTag("canary", "hello-00003"), byTag("latest", "hello-00002"),
		{add: map[string]string{DefaultRouteHeader: "true"}, splits: main}}
	tagPath := func(tag, rev string, enabled bool) []path {
		p := path{splits: map[string]int{rev: 100}}
		if enabled {
			p.add = map[string]string{RouteTagHeader: tag}
		}
		return []path{p}
	}
	local := map[string]string{v1.VisibilityLabelKey: v1.VisibilityClusterLocal}
	tests := []struct {
		name    string
		labels  map[string]string
		enabled bool
		want    map[string][]path // by the rule's first host
	}{{
		name: "disabled",
		want: map[string][]path{
			"hello.ns.example.com":        {{splits: main}},
			"hello.ns":                    {{splits: main}},
			"latest-hello.ns.example.com": tagPath("latest", "hello-00002", false),
			"latest-hello.ns":             tagPath("latest", "hello-00002", false),
			"canary-hello.ns.example.com": tagPath("canary", "hello-00003", false),
			"canary-hello.ns":             tagPath("canary", "hello-00003", false),
		},
	}, {
		name:    "enabled",
		enabled: true,
		want: map[string][]path{
			"hello.ns.example.com":        enabledMain,
			"hello.ns":                    enabledMain,
			"latest-hello.ns.example.com": tagPath("latest", "hello-00002", true),
			"latest-hello.ns":             tagPath("latest", "hello-00002", true),
			"canary-hello.ns.example.com": tagPath("canary", "hello-00003", true),
			"canary-hello.ns":             tagPath("canary", "hello-00003", true),
		},
	}, {
		name:    "enabled, cluster-local",
		labels:  local,
		enabled: true,
		want: map[string][]path{
			"hello.ns":        enabledMain,
			"latest-hello.ns": tagPath("latest", "hello-00002", true),
			"canary-hello.ns": tagPath("canary", "hello-00003", true),
		},
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := route(tc.labels)
			ing := MakeIngress(r, targets, rollout.TagHosts(targets, nil), DefaultHosts(r, targets), tc.enabled)
			got := map[string][]path{}
			for _, rule := range ing.Spec.Rules {
				got[rule.Hosts[0]] = pathsOf(rule)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("paths by host:\n got %+v\nwant %+v", got, tc.want)
			}
			for _, rule := range ing.Spec.Rules {
				for _, p := range rule.HTTP.Paths {
					if s := p.Splits[0]; s.AppendHeaders[netv1alpha1.RevisionHeader] != s.ServiceName {
						t.Errorf("%v: split %s appends %v", rule.Hosts, s.ServiceName, s.AppendHeaders)
					}
				}
			}
		})
	}
}

// TestClusterLocalTags: which names a placeholder Service's visibility label makes
// cluster-local, as Knative reads it: any value, on the Service of that name only.
func TestClusterLocalTags(t *testing.T) {
	svc := func(labels map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Labels: labels}}
	}
	tests := []struct {
		name     string
		services map[string]*corev1.Service
		want     map[string]bool
	}{
		{name: "none", services: map[string]*corev1.Service{}, want: map[string]bool{}},
		{name: "unlabelled", services: map[string]*corev1.Service{"": svc(nil), "v1": svc(map[string]string{v1.RouteLabelKey: "hello"})}, want: map[string]bool{}},
		{name: "one tag labelled cluster-local", services: map[string]*corev1.Service{
			"":   svc(nil),
			"v1": svc(map[string]string{v1.VisibilityLabelKey: v1.VisibilityClusterLocal}),
			"v2": svc(nil),
		}, want: map[string]bool{"v1": true}},
		{name: "any value counts, as in Knative", services: map[string]*corev1.Service{"v1": svc(map[string]string{v1.VisibilityLabelKey: "private"})}, want: map[string]bool{"v1": true}},
		{name: "an empty value does not", services: map[string]*corev1.Service{"v1": svc(map[string]string{v1.VisibilityLabelKey: ""})}, want: map[string]bool{}},
		{name: "the Route's own", services: map[string]*corev1.Service{"": svc(map[string]string{v1.VisibilityLabelKey: v1.VisibilityClusterLocal})}, want: map[string]bool{"": true}},
		{name: "no Service (a name taken)", services: map[string]*corev1.Service{"v1": nil}, want: map[string]bool{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ClusterLocalTags(tc.services); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("ClusterLocalTags = %v, want %v", got, tc.want)
			}
		})
	}
}
