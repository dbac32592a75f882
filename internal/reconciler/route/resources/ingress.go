package resources

import (
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/kmeta"
)

// IngressName is the name of the Route's KIngress: Knative's kmeta.ChildName of the
// Route's name with no suffix, which is the Route's name itself since admission keeps
// Route names within 63 characters (so existing KIngresses are adopted).
func IngressName(r *v1.Route) string { return kmeta.ChildName(r.Name, "") }

// The headers of Knative's tag-header routing (knative.dev/networking pkg/http/header).
const (
	// RouteTagHeader picks a tag's Revision on the Route's own hosts; it is also added
	// to requests that reach a tag by its host.
	RouteTagHeader = "Knative-Serving-Tag"
	// DefaultRouteHeader is added to requests the Route's default split serves, so
	// that a backend can tell an unknown tag (both headers) from no tag.
	DefaultRouteHeader = "Knative-Serving-Default-Route"
)

// MakeIngress builds the KIngress named after the Route that serves its traffic: one
// rule for the Route's own hosts splitting traffic by the percents of served, and one
// per tag of tagged sending the tag's traffic by its entries' percents. served is the
// default split (the resolved targets, or during a gradual rollout rollout.Default);
// tagged is what each tag's own host serves (rollout.TagHosts), a tag's entries
// together and summing to 100. Each set of hosts gets an ExternalIP rule (unless the
// Route is cluster-local) and a ClusterLocal rule. hosts must have been made for
// these tags. A tag that is cluster-local (the Route, or the tag's placeholder Service)
// gets the ClusterLocal rule alone, as Knative's makeIngressSpec does.
//
// tagHeaderRouting (config-features tag-header-based-routing Enabled) builds the
// paths as Knative does: the Route's own rules first get one path per tag, sorted,
// that matches the header Knative-Serving-Tag: <tag> exactly and splits as the tag's
// own host does; their default path appends Knative-Serving-Default-Route: true, and
// each tag's rules append Knative-Serving-Tag: <tag>.
func MakeIngress(r *v1.Route, served, tagged []v1.TrafficTarget, hosts *Hosts, tagHeaderRouting bool) *netv1alpha1.Ingress {
	tags := byTag(r.Namespace, tagged)
	var rules []netv1alpha1.IngressRule
	if splits := mergeSplits(r.Namespace, served); len(splits) > 0 {
		def := netv1alpha1.HTTPIngressPath{Splits: splits}
		var paths []netv1alpha1.HTTPIngressPath
		if tagHeaderRouting {
			paths = tagHeaderPaths(tags)
			def.AppendHeaders = map[string]string{DefaultRouteHeader: "true"}
		}
		rules = append(rules, makeRules(hosts, "", append(paths, def))...)
	}
	for _, t := range tags {
		p := netv1alpha1.HTTPIngressPath{Splits: t.splits}
		if tagHeaderRouting {
			p.AppendHeaders = map[string]string{RouteTagHeader: t.tag}
		}
		rules = append(rules, makeRules(hosts, t.tag, []netv1alpha1.HTTPIngressPath{p})...)
	}
	return &netv1alpha1.Ingress{
		ObjectMeta: metav1.ObjectMeta{
			Name:            IngressName(r),
			Namespace:       r.Namespace,
			Labels:          routeLabels(r),
			Annotations:     map[string]string{netv1alpha1.IngressClassAnnotationKey: netv1alpha1.IngressClass},
			OwnerReferences: []metav1.OwnerReference{ownerRef(r)},
		},
		Spec: netv1alpha1.IngressSpec{Rules: rules, HTTPOption: netv1alpha1.HTTPOptionEnabled},
	}
}

// tagSplits is the split of one tag's own host.
type tagSplits struct {
	tag    string
	splits []netv1alpha1.IngressBackendSplit
}

// byTag groups the entries of tagged by tag, in order.
func byTag(ns string, tagged []v1.TrafficTarget) []tagSplits {
	var out []tagSplits
	for i := 0; i < len(tagged); {
		j := i + 1
		for j < len(tagged) && tagged[j].Tag == tagged[i].Tag {
			j++
		}
		out = append(out, tagSplits{tag: tagged[i].Tag, splits: mergeSplits(ns, tagged[i:j])})
		i = j
	}
	return out
}

// tagHeaderPaths are the paths that send a request carrying Knative-Serving-Tag: <tag>
// where that tag's host sends it, sorted by tag as Knative sorts them.
func tagHeaderPaths(tags []tagSplits) []netv1alpha1.HTTPIngressPath {
	sorted := slices.SortedFunc(slices.Values(tags), func(a, b tagSplits) int { return strings.Compare(a.tag, b.tag) })
	paths := make([]netv1alpha1.HTTPIngressPath, 0, len(sorted))
	for _, t := range sorted {
		p := netv1alpha1.HTTPIngressPath{
			Headers: map[string]netv1alpha1.HeaderMatch{RouteTagHeader: {Exact: t.tag}},
			Splits:  t.splits,
		}
		// The tag's own rules hold the same splits: no sharing between paths.
		paths = append(paths, *p.DeepCopy())
	}
	return paths
}

func makeRules(hosts *Hosts, tag string, paths []netv1alpha1.HTTPIngressPath) []netv1alpha1.IngressRule {
	http := &netv1alpha1.HTTPIngressRuleValue{Paths: paths}
	local := netv1alpha1.IngressRule{
		Hosts:      hosts.ClusterLocalHosts(tag),
		Visibility: netv1alpha1.IngressVisibilityClusterLocal,
		HTTP:       http,
	}
	if hosts.IsClusterLocal(tag) {
		return []netv1alpha1.IngressRule{local}
	}
	external := netv1alpha1.IngressRule{
		Hosts:      []string{hosts.Host(tag)},
		Visibility: netv1alpha1.IngressVisibilityExternalIP,
		HTTP:       http.DeepCopy(),
	}
	return []netv1alpha1.IngressRule{external, local}
}

// mergeSplits sums the percents of targets that name the same Revision (several tags
// may point at one) and drops zero shares, keeping first-seen order.
func mergeSplits(ns string, targets []v1.TrafficTarget) []netv1alpha1.IngressBackendSplit {
	var splits []netv1alpha1.IngressBackendSplit
	index := make(map[string]int, len(targets))
	for _, t := range targets {
		if t.Percent == nil || *t.Percent == 0 {
			continue
		}
		if i, ok := index[t.RevisionName]; ok {
			splits[i].Percent += int(*t.Percent)
			continue
		}
		index[t.RevisionName] = len(splits)
		splits = append(splits, makeSplit(ns, t.RevisionName, int(*t.Percent)))
	}
	return splits
}

func makeSplit(ns, rev string, percent int) netv1alpha1.IngressBackendSplit {
	return netv1alpha1.IngressBackendSplit{
		IngressBackend: netv1alpha1.IngressBackend{
			ServiceNamespace: ns,
			ServiceName:      rev,
			ServicePort:      intstr.FromInt32(netv1alpha1.ServiceHTTPPort),
		},
		Percent:       percent,
		AppendHeaders: map[string]string{netv1alpha1.RevisionHeader: rev, netv1alpha1.NamespaceHeader: ns},
	}
}

// routeLabels marks an object as the Route's, and carries the Service label so that
// `kubectl get -l serving.knative.dev/service=x` finds everything of a Service.
func routeLabels(r *v1.Route) map[string]string {
	l := map[string]string{v1.RouteLabelKey: r.Name}
	if s, ok := r.Labels[v1.ServiceLabelKey]; ok {
		l[v1.ServiceLabelKey] = s
	}
	return l
}

func ownerRef(r *v1.Route) metav1.OwnerReference {
	return *metav1.NewControllerRef(r, v1.SchemeGroupVersion.WithKind("Route"))
}
