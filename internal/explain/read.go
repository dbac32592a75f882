package explain

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	dmresources "github.com/ferry-serving/ferry/internal/reconciler/domainmapping/resources"
	revisionresources "github.com/ferry-serving/ferry/internal/reconciler/revision/resources"
	routeresources "github.com/ferry-serving/ferry/internal/reconciler/route/resources"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Target names the object to explain.
type Target struct {
	Kind      Kind
	Namespace string
	Name      string
}

// Read fills a Chain for t from the API server (c should read through, not from a
// cache). The root object's NotFound is a Chain without it; any other error reading
// the root is returned. Errors reading the rest are noted in the Chain's ReadErrors.
// The reader needs get and list on Knative's kinds, Deployments, ReplicaSets, pods
// and Events in the namespace (and get on ClusterDomainClaims for a DomainMapping).
func Read(ctx context.Context, c client.Reader, t Target) (Chain, error) {
	ch := Chain{Name: t.Name, Namespace: t.Namespace, Root: t.Kind, Deployments: map[string]*appsv1.Deployment{},
		ReplicaSets: map[string][]appsv1.ReplicaSet{}, Pods: map[string][]corev1.Pod{}, Now: time.Now()}
	r := &reader{ctx: ctx, c: c, ch: &ch}
	switch t.Kind {
	case KindService, "":
		svc := &v1.Service{}
		if ok, err := r.root(svc); !ok {
			return ch, err
		}
		ch.Service = svc
		r.configuration(t.Name)
		r.route(t.Name)
	case KindConfiguration:
		cfg := &v1.Configuration{}
		if ok, err := r.root(cfg); !ok {
			return ch, err
		}
		r.configuration(t.Name)
	case KindRevision:
		rev := &v1.Revision{}
		if ok, err := r.root(rev); !ok {
			return ch, err
		}
		ch.Revisions = []v1.Revision{*rev}
		r.revisionChildren(rev.Name)
	case KindRoute:
		rt := &v1.Route{}
		if ok, err := r.root(rt); !ok {
			return ch, err
		}
		r.route(t.Name)
		// The first Configuration the Route sends traffic to, to explain a Route
		// that waits for it.
		for _, tt := range rt.Spec.Traffic {
			if tt.ConfigurationName != "" {
				r.configuration(tt.ConfigurationName)
				break
			}
		}
	case KindDomainMapping:
		dm := &v1beta1.DomainMapping{}
		if ok, err := r.root(dm); !ok {
			return ch, err
		}
		ch.DomainMapping = dm
		ing := &netv1alpha1.Ingress{}
		if r.get(dmresources.IngressName(dm), ing) {
			ch.Ingress = ing
		}
		// Cluster-scoped: who may map the domain.
		claim := &netv1alpha1.ClusterDomainClaim{}
		if err := c.Get(ctx, client.ObjectKey{Name: dm.Name}, claim); err == nil {
			ch.Claim = claim
		} else if !apierrors.IsNotFound(err) {
			ch.ReadErrors = append(ch.ReadErrors, fmt.Sprintf("reading ClusterDomainClaim %s: %v", dm.Name, err))
		}
	default:
		return ch, fmt.Errorf("cannot explain a %q", t.Kind)
	}
	r.events()
	return ch, nil
}

type reader struct {
	ctx   context.Context
	c     client.Reader
	ch    *Chain
	names []string // of the objects read, for their Events
}

// root reads the root object; false with a nil error is NotFound.
func (r *reader) root(obj client.Object) (bool, error) {
	err := r.c.Get(r.ctx, client.ObjectKey{Namespace: r.ch.Namespace, Name: r.ch.Name}, obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %s %s/%s: %w", r.ch.root(), r.ch.Namespace, r.ch.Name, err)
	}
	r.names = append(r.names, r.ch.Name)
	return true, nil
}

// get reads one object; NotFound is false, other errors are noted.
func (r *reader) get(name string, obj client.Object) bool {
	err := r.c.Get(r.ctx, client.ObjectKey{Namespace: r.ch.Namespace, Name: name}, obj)
	if err != nil {
		if !apierrors.IsNotFound(err) {
			r.ch.ReadErrors = append(r.ch.ReadErrors, fmt.Sprintf("reading %T %s: %v", obj, name, err))
		}
		return false
	}
	r.names = append(r.names, name)
	return true
}

func (r *reader) list(l client.ObjectList, opts ...client.ListOption) bool {
	if err := r.c.List(r.ctx, l, append(opts, client.InNamespace(r.ch.Namespace))...); err != nil {
		r.ch.ReadErrors = append(r.ch.ReadErrors, fmt.Sprintf("listing %T: %v", l, err))
		return false
	}
	return true
}

// configuration reads a Configuration, its Revisions, and the children of its
// latest created and latest ready Revisions.
func (r *reader) configuration(name string) {
	cfg := &v1.Configuration{}
	if !r.get(name, cfg) {
		return
	}
	r.ch.Configuration = cfg
	revs := &v1.RevisionList{}
	if r.list(revs, client.MatchingLabels{v1.ConfigurationLabelKey: name}) {
		r.ch.Revisions = revs.Items
	}
	for _, rev := range []*v1.Revision{LatestRevision(cfg, r.ch.Revisions), revisionNamed(r.ch.Revisions, cfg.Status.LatestReadyRevisionName)} {
		if rev != nil && r.ch.Pods[rev.Name] == nil {
			r.names = append(r.names, rev.Name)
			r.revisionChildren(rev.Name)
		}
	}
}

// revisionChildren reads a Revision's Deployment (named as the reconciler names it),
// ReplicaSets and pods.
func (r *reader) revisionChildren(rev string) {
	dep := &appsv1.Deployment{}
	if r.get(revisionresources.DeploymentName(rev), dep) {
		r.ch.Deployments[rev] = dep
	}
	sel := client.MatchingLabels{v1.RevisionLabelKey: rev}
	rss := &appsv1.ReplicaSetList{}
	if r.list(rss, sel) {
		r.ch.ReplicaSets[rev] = rss.Items
		for _, rs := range rss.Items {
			r.names = append(r.names, rs.Name)
		}
	}
	pods := &corev1.PodList{}
	r.ch.Pods[rev] = []corev1.Pod{}
	if r.list(pods, sel) {
		r.ch.Pods[rev] = pods.Items
		for _, p := range pods.Items {
			r.names = append(r.names, p.Name)
		}
	}
}

// route reads a Route and its KIngress (named as the reconciler names it).
func (r *reader) route(name string) {
	rt := &v1.Route{}
	if !r.get(name, rt) {
		return
	}
	r.ch.Route = rt
	ing := &netv1alpha1.Ingress{}
	if r.get(routeresources.IngressName(rt), ing) {
		r.ch.Ingress = ing
	}
	// A target the traffic names that does not exist: what does, to name instead.
	if is := routeTrafficIssue(r.ch); is != nil && (is.State == targetMissing || is.State == targetCreating) {
		var l client.ObjectList = &v1.ConfigurationList{}
		if is.Kind == "Revision" {
			l = &v1.RevisionList{}
		}
		if r.list(l) {
			items, _ := meta.ExtractList(l)
			for _, item := range items {
				if o, ok := item.(client.Object); ok {
					r.ch.Neighbours = append(r.ch.Neighbours, metav1.ObjectMeta{Name: o.GetName(), Labels: o.GetLabels()})
				}
			}
		}
	}
}

// events reads the Events about the objects read, one list per distinct name (the
// API server filters them by involvedObject.name).
func (r *reader) events() {
	slices.Sort(r.names)
	for _, name := range slices.Compact(r.names) {
		evs := &corev1.EventList{}
		if r.list(evs, client.MatchingFields{"involvedObject.name": name}) {
			r.ch.Events = append(r.ch.Events, evs.Items...)
		}
	}
}

// Check is `ferry explain`: it reads t's chain through c, asks the gateway at
// gatewayURL (when not "") whether it routes the Route's host, and builds the report.
func Check(ctx context.Context, c client.Reader, t Target, gatewayURL string) (Report, error) {
	chain, err := Read(ctx, c, t)
	if err != nil {
		return Report{}, err
	}
	if gatewayURL != "" {
		chain.ProbeGateway(ctx, &http.Client{Timeout: 10 * time.Second}, gatewayURL)
	}
	return Build(chain), nil
}
