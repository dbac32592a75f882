// Package route reconciles Knative Routes: it resolves their traffic to Revisions,
// programs a KIngress for it, keeps a placeholder Service for the Route's in-cluster
// name, and reports all of it in status.
package route

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/reconciler/created"
	"github.com/ferry-serving/ferry/internal/reconciler/refusal"
	"github.com/ferry-serving/ferry/internal/reconciler/route/resources"
	"github.com/ferry-serving/ferry/internal/reconciler/route/traffic"
	"github.com/ferry-serving/ferry/internal/reconciler/statuswriter"
	"github.com/ferry-serving/ferry/internal/tracker"
)

// Condition reasons and messages users see, as in Knative.
const (
	reasonNotOwned             = "NotOwned"
	reasonIngressNotConfigured = "IngressNotConfigured"
	reasonTLSNotEnabled        = "TLSNotEnabled"
	// reasonErrorConfig: the configuration gives the Route a host that is not a valid
	// domain name (Knative's reason).
	reasonErrorConfig       = "ErrorConfig"
	msgTLSNotEnabled        = "external-domain-tls is not enabled"
	msgIngressNotConfigured = "Ingress has not yet been reconciled."
)

// Reconciler reconciles one Route per call.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Tracker records which Configurations and Revisions each Route reads, so that
	// their changes wake the Route.
	Tracker *tracker.Tracker
	// Children reads and creates the objects this reconciler owns, so that one it has
	// just created counts as existing before the cache shows it.
	Children *created.Children
	// Status writes the status and records Warning Events for new failures.
	Status *statuswriter.Writer
	// Refused remembers the children the API server refused, to report and back off.
	Refused *refusal.Writes
	// Config returns the current configuration: config-domain and config-network make
	// the Route's hosts.
	Config func() *config.Config
	// GatewayHost is where placeholder Services point (ExternalName).
	GatewayHost string
	// AfterRead, if set, runs between reading the Route and acting on it (tests use it
	// to widen races).
	AfterRead func()
}

// errNotOwned says a child's name is taken by an object the Route does not control.
var errNotOwned = errors.New("not owned")

// Reconcile brings one Route's children and status in line with its spec and with the
// Configurations and Revisions it names.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	route := &v1.Route{}
	if err := r.Client.Get(ctx, req.NamespacedName, route); err != nil {
		if apierrors.IsNotFound(err) {
			// The Route is gone: nothing it read matters any more.
			r.Tracker.OnDeletedObserver(req.NamespacedName)
			r.Status.Forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if route.DeletionTimestamp != nil {
		r.Tracker.OnDeletedObserver(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if r.AfterRead != nil {
		r.AfterRead()
	}

	want := route.DeepCopy()
	want.SetDefaults(config.ToContext(ctx, r.Config()))
	status := route.Status.DeepCopy()
	status.ObservedGeneration = route.Generation
	m := v1.RouteConditions.Manage(&status.Status)
	m.InitializeConditions()
	m.MarkTrueWithReason(v1.RouteConditionCertificateProvisioned, reasonTLSNotEnabled, msgTLSNotEnabled)
	// A configuration that gives no valid host leaves the URLs as they were.
	hosts, hostErr := resources.MakeHosts(r.Config(), route, want.Spec.Traffic)
	if hostErr == nil {
		status.URL = hosts.URL("")
	}
	status.Address = &duck.Addressable{URL: resources.AddressURL(route)}

	// Refused children show on IngressReady; the Route is reconciled again when
	// their back-off ends.
	var refused []*refusal.Error
	placeholderOK, err := r.reconcilePlaceholder(ctx, route, m)
	if e, ok := refusal.As(err); ok {
		m.MarkFalse(v1.RouteConditionIngressReady, e.Reason(), "%s", e.Error())
		refused, placeholderOK, err = append(refused, e), false, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}

	targets, problem, err := r.resolve(ctx, route, want.Spec.Traffic)
	if err != nil {
		return ctrl.Result{}, err
	}
	if problem == nil && hostErr != nil {
		// Permanent until the configuration changes, which wakes every Route.
		problem = &traffic.Problem{Status: corev1.ConditionFalse, Reason: reasonErrorConfig, Message: hostErr.Error()}
	}
	if problem != nil {
		setCondition(m, v1.RouteConditionAllTrafficAssigned, problem.Status, problem.Reason, problem.Message)
	} else {
		m.MarkTrue(v1.RouteConditionAllTrafficAssigned)
	}

	// A Route whose traffic cannot be resolved keeps serving what it served before:
	// its KIngress and status.traffic are left as they are.
	var ing *netv1alpha1.Ingress
	if problem == nil {
		ing, err = r.reconcileIngress(ctx, route, resources.MakeIngress(want, targets, hosts))
		status.Traffic = withURLs(targets, hosts)
	} else {
		ing, err = r.getIngress(ctx, route)
	}
	ingRefused, isRefused := refusal.As(err)
	switch {
	case errors.Is(err, errNotOwned):
		m.MarkFalse(v1.RouteConditionIngressReady, reasonNotOwned, "There is an existing Ingress %q that we do not own.", route.Name)
	case isRefused:
		if placeholderOK {
			m.MarkFalse(v1.RouteConditionIngressReady, ingRefused.Reason(), "%s", ingRefused.Error())
		}
		refused = append(refused, ingRefused)
	case err != nil:
		return ctrl.Result{}, err
	case placeholderOK:
		markIngress(m, ing)
	}

	res, err := r.Status.Write(ctx, route, &route.Status, status)
	for _, e := range refused {
		res, err = refusal.Result(res, err, e)
	}
	return res, err
}

// resolve reads every Configuration and Revision the traffic names through the
// tracker's reader, and then makes those reads the Route's whole set of references.
func (r *Reconciler) resolve(ctx context.Context, route *v1.Route, spec []v1.TrafficTarget) ([]v1.TrafficTarget, *traffic.Problem, error) {
	reader := r.Tracker.Reader(types.NamespacedName{Namespace: route.Namespace, Name: route.Name}, r.Client)
	var targets []v1.TrafficTarget
	problem := traffic.Validate(spec)
	if problem == nil {
		var err error
		targets, problem, err = traffic.Resolve(ctx, spec, getter{reader: reader, namespace: route.Namespace})
		if err != nil {
			// No Commit: the references read so far stay until the retry commits.
			return nil, nil, err
		}
	}
	reader.Commit()
	return targets, problem, nil
}

// reconcilePlaceholder makes sure the Service named after the Route exists and is ours.
// It reports false when the name is taken, having marked IngressReady.
func (r *Reconciler) reconcilePlaceholder(ctx context.Context, route *v1.Route, m duck.ConditionManager) (bool, error) {
	desired := resources.MakePlaceholderService(route, r.GatewayHost)
	have := &corev1.Service{}
	err := r.Children.Get(ctx, client.ObjectKeyFromObject(desired), have)
	switch {
	case apierrors.IsNotFound(err):
		return true, r.Refused.Create(desired, func() error { return r.Children.Create(ctx, r.Client, desired) })
	case err != nil:
		return false, err
	case !metav1.IsControlledBy(have, route):
		m.MarkFalse(v1.RouteConditionIngressReady, reasonNotOwned, "There is an existing placeholder Service %q that we do not own.", desired.Name)
		return false, nil
	case equality.Semantic.DeepDerivative(desired.Spec, have.Spec) && hasAll(have.Labels, desired.Labels):
		return true, nil
	}
	upd := have.DeepCopy()
	upd.Spec.Type = desired.Spec.Type
	upd.Spec.ExternalName = desired.Spec.ExternalName
	upd.Spec.Ports = desired.Spec.Ports
	upd.Labels = merge(upd.Labels, desired.Labels)
	return true, r.Refused.Update(desired, func() error { return r.Client.Update(ctx, upd) })
}

func (r *Reconciler) getIngress(ctx context.Context, route *v1.Route) (*netv1alpha1.Ingress, error) {
	have := &netv1alpha1.Ingress{}
	err := r.Children.Get(ctx, client.ObjectKeyFromObject(route), have)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, err
	case !metav1.IsControlledBy(have, route):
		return nil, errNotOwned
	}
	return have, nil
}

// reconcileIngress creates or updates the KIngress and returns it as the API server
// last acknowledged it, so that IngressReady compares against the new generation.
func (r *Reconciler) reconcileIngress(ctx context.Context, route *v1.Route, desired *netv1alpha1.Ingress) (*netv1alpha1.Ingress, error) {
	have, err := r.getIngress(ctx, route)
	if err != nil {
		return nil, err
	}
	if have == nil {
		// On AlreadyExists the cache is behind; the error requeues us until it catches up.
		return desired, r.Refused.Create(desired, func() error { return r.Children.Create(ctx, r.Client, desired) })
	}
	if equality.Semantic.DeepEqual(have.Spec, desired.Spec) &&
		hasAll(have.Labels, desired.Labels) && hasAll(have.Annotations, desired.Annotations) {
		return have, nil
	}
	upd := have.DeepCopy()
	upd.Spec = desired.Spec
	upd.Labels = merge(upd.Labels, desired.Labels)
	upd.Annotations = merge(upd.Annotations, desired.Annotations)
	return upd, r.Refused.Update(desired, func() error { return r.Client.Update(ctx, upd) })
}

// markIngress turns the KIngress's readiness into IngressReady. An ingress that has
// not observed its latest generation says nothing about the current traffic.
func markIngress(m duck.ConditionManager, ing *netv1alpha1.Ingress) {
	if ing == nil || ing.Status.ObservedGeneration != ing.Generation {
		m.MarkUnknown(v1.RouteConditionIngressReady, reasonIngressNotConfigured, msgIngressNotConfigured)
		return
	}
	c := ing.Status.GetCondition(netv1alpha1.IngressConditionReady)
	switch {
	case c.IsTrue():
		m.MarkTrue(v1.RouteConditionIngressReady)
	case c.IsFalse():
		m.MarkFalse(v1.RouteConditionIngressReady, c.Reason, "%s", c.Message)
	case c == nil || c.Reason == "":
		m.MarkUnknown(v1.RouteConditionIngressReady, reasonIngressNotConfigured, msgIngressNotConfigured)
	default:
		m.MarkUnknown(v1.RouteConditionIngressReady, c.Reason, "%s", c.Message)
	}
}

// withURLs gives each tagged target its URL, as status.traffic shows it.
func withURLs(targets []v1.TrafficTarget, hosts *resources.Hosts) []v1.TrafficTarget {
	for i := range targets {
		if targets[i].Tag != "" {
			targets[i].URL = hosts.URL(targets[i].Tag)
		}
	}
	return targets
}

func setCondition(m duck.ConditionManager, t duck.ConditionType, s corev1.ConditionStatus, reason, msg string) {
	if s == corev1.ConditionFalse {
		m.MarkFalse(t, reason, "%s", msg)
		return
	}
	m.MarkUnknown(t, reason, "%s", msg)
}

// getter reads traffic targets in the Route's namespace.
type getter struct {
	reader    client.Reader
	namespace string
}

func (g getter) Configuration(ctx context.Context, name string) (*v1.Configuration, error) {
	c := &v1.Configuration{}
	return c, g.reader.Get(ctx, types.NamespacedName{Namespace: g.namespace, Name: name}, c)
}

func (g getter) Revision(ctx context.Context, name string) (*v1.Revision, error) {
	rev := &v1.Revision{}
	return rev, g.reader.Get(ctx, types.NamespacedName{Namespace: g.namespace, Name: name}, rev)
}

// hasAll reports whether have holds every key of want with the same value.
func hasAll(have, want map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

// merge returns have with want's keys set, leaving keys others added alone.
func merge(have, want map[string]string) map[string]string {
	out := make(map[string]string, len(have)+len(want))
	for k, v := range have {
		out[k] = v
	}
	for k, v := range want {
		out[k] = v
	}
	return out
}
