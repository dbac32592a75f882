// Package route reconciles Knative Routes: it resolves their traffic to Revisions,
// programs a KIngress for it, keeps a placeholder Service for the Route's in-cluster
// name, and reports all of it in status.
package route

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/base"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/certificate"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/child"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/observe"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
	"github.com/ferry-serving/ferry/internal/reconciler/route/resources"
	"github.com/ferry-serving/ferry/internal/reconciler/route/rollout"
	"github.com/ferry-serving/ferry/internal/reconciler/route/traffic"
	"github.com/ferry-serving/ferry/internal/tracker"
)

// Reconciler reconciles one Route per call.
type Reconciler struct {
	// Base.Config: config-domain and config-network make the Route's hosts,
	// config-features' tag-header-based-routing its KIngress's paths. Base.Clock paces
	// gradual rollouts and the certificate warning's wait.
	base.Base
	// Tracker records which Configurations and Revisions each Route reads, so that
	// their changes wake the Route.
	Tracker *tracker.Tracker
	// GatewayHost is where placeholder Services point (ExternalName).
	GatewayHost string
	// DefaultCertificateClass is the class of the Route's Certificates when neither the
	// Route nor config-network's certificate-class names one ("": Knative's,
	// cert-manager's).
	DefaultCertificateClass string
	// Recorder records one Warning Event when a Route's certificate turns not ready in
	// a way its Ready condition does not report as a failure (pending, downgraded to
	// HTTP); the status writer records the failures.
	Recorder events.EventRecorder

	warnings certificate.Warnings
}

// Reconcile brings one Route's children and status in line with its spec and with the
// Configurations and Revisions it names.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Observe. A Route that is gone no longer reads anything: its references go too.
	route := &v1.Route{}
	if ok, err := observe.Object(ctx, r.Client, req.NamespacedName, route, r.forget); !ok {
		return ctrl.Result{}, err
	}
	r.Read()
	// One snapshot of the configuration for the whole reconcile.
	cfg := r.Config()
	want := route.DeepCopy()
	want.SetDefaults(config.ToContext(ctx, cfg))
	// A configuration that gives no valid host leaves the URLs as they were.
	hosts, hostErr := resources.MakeHosts(cfg, route, want.Spec.Traffic)
	targets, problem, err := r.resolve(ctx, route, want.Spec.Traffic)
	if err != nil {
		return ctrl.Result{}, err
	}
	if problem == nil && hostErr != nil {
		// Permanent until the configuration changes, which wakes every Route.
		problem = &traffic.Problem{Status: corev1.ConditionFalse, Reason: v1.ReasonErrorConfig, Message: hostErr.Error()}
	}
	// A bad http-protocol annotation leaves the KIngress as it is, and says so on
	// IngressReady.
	httpOption, optionErr := resources.HTTPOption(route, cfg.Network)

	now := r.Now()

	// Desired and apply. A Route whose traffic cannot be resolved keeps serving what
	// it served before: its KIngress, status.traffic and its tags' placeholder Services
	// are left as they are.
	w := r.Writer()
	var tagged *resources.Hosts
	if hostErr == nil && problem == nil {
		tagged = hosts
	}
	local, placeholderErr, err := r.reconcilePlaceholders(ctx, w, route, tagged)
	if err != nil {
		return ctrl.Result{}, err
	}
	if hostErr == nil {
		// The user's visibility label on a tag's placeholder Service makes it private.
		hosts = hosts.WithClusterLocal(local)
	}
	var ing *netv1alpha1.Ingress
	var ingErr error
	// Knative's external-domain-tls: a Certificate per external host, served once Ready.
	tlsOn := hostErr == nil && hosts.AnyExternal() && cfg.Network.ExternalDomainTLS && !netv1alpha1.ExternalDomainTLSDisabled(route)
	var certs *certificate.Certificates
	// served is status.traffic, what the hosts serve: targets, or a step of a rollout.
	served, rolling, nextStep := targets, false, time.Time{}
	if problem == nil && optionErr == nil {
		var state *rollout.Rollout
		if state, nextStep, err = r.rollout(ctx, w, route, want.Spec.Traffic, targets, cfg.Network, now); err != nil {
			return ctrl.Result{}, err
		}
		// The default split, and each tag's own host, at this step.
		split, tagged := targets, rollout.TagHosts(targets, state)
		if state != nil {
			split = rollout.Default(want.Spec.Traffic, targets, state)
			served, rolling = rollout.Served(want.Spec.Traffic, targets, state), !state.Done()
		}
		desired := resources.MakeIngress(want, split, tagged, hosts, cfg.Features.TagHeaderBasedRouting == config.Enabled)
		if state != nil {
			desired.Annotations[rollout.Annotation] = state.String()
		}
		desired.Spec.HTTPOption = httpOption
		if tlsOn {
			var err error
			if certs, err = r.reconcileCertificates(ctx, w, route, hosts, resources.CertificateClass(route, cfg.Network, r.DefaultCertificateClass)); err != nil {
				return ctrl.Result{}, err
			}
			desired.Spec.TLS = certs.TLS
		}
		ing, ingErr = child.Ensure(ctx, w, route, "Ingress", desired, updateIngress)
	} else {
		ing, ingErr = child.Get[*netv1alpha1.Ingress](ctx, w, route, "Ingress", client.ObjectKey{Namespace: route.Namespace, Name: resources.IngressName(route)})
	}

	// Status.
	status, m := base.OpenStatus(&route.Status, route.Generation, v1.RouteConditions)
	var o child.Outcome
	switch {
	case !tlsOn:
		status.MarkTLSNotEnabled()
	case certs != nil:
		certs.Mark(status, m, v1.RouteConditionCertificateProvisioned, &o, cfg.Network.HTTPProtocol == config.HTTPEnabled)
	}
	// With TLS on and traffic unresolved no Certificate was read: the URL stays.
	if hostErr == nil && (!tlsOn || certs != nil) {
		status.URL = url(certs, hosts, "")
	}
	status.Address = &duck.Addressable{URL: resources.AddressURL(route)}
	if problem != nil {
		setCondition(m, v1.RouteConditionAllTrafficAssigned, problem.Status, problem.Reason, problem.Message)
	} else {
		m.MarkTrue(v1.RouteConditionAllTrafficAssigned)
		status.Traffic = withURLs(served, hosts, certs)
	}
	// Both kinds of children show on IngressReady (the placeholder Services' first
	// problem); a refused one is tried again when its back-off ends.
	placeholderOK := !o.Mark(m, v1.RouteConditionIngressReady, placeholderErr)
	switch refused, isRefused := refusal.As(ingErr); {
	case isRefused && !placeholderOK:
		// The placeholder's problem stays on IngressReady.
		o.Refused(refused)
	case o.Mark(m, v1.RouteConditionIngressReady, ingErr):
	case ingErr != nil:
		return ctrl.Result{}, ingErr
	case placeholderOK && optionErr != nil:
		status.MarkInvalidHTTPProtocol(optionErr.Error())
	case placeholderOK && rolling:
		// As Knative: the Route is not done until the rollout is.
		status.MarkIngressRolloutInProgress()
	case placeholderOK:
		status.PropagateIngressStatus(ing)
	}
	warnIn := r.warnings.Warn(r.Recorder, route, status.GetCondition(v1.RouteConditionCertificateProvisioned), certs, now)
	res, err := o.Result(r.Status.Write(ctx, route, &route.Status, status))
	res.RequeueAfter = sooner(res.RequeueAfter, warnIn)
	if !nextStep.IsZero() {
		res.RequeueAfter = sooner(res.RequeueAfter, nextStep.Sub(now))
	}
	return res, err
}

// sooner is the earlier of two waits, 0 meaning none.
func sooner(a, b time.Duration) time.Duration {
	if b > 0 && (a == 0 || b < a) {
		return b
	}
	return a
}

// rollout is the Route's gradual rollout state at time now (package rollout), for the
// KIngress's annotation, and when its next step is due (zero: none). The previous
// state is the existing KIngress's annotation. With no rollout duration there is no
// state (nil), so that such a Route's KIngress is what it was before Ferry had
// rollouts, and a rollout in progress ends at once.
func (r *Reconciler) rollout(ctx context.Context, w child.Writer, route *v1.Route, spec, targets []v1.TrafficTarget, network *config.Network, now time.Time) (*rollout.Rollout, time.Time, error) {
	d := rollout.Duration(route.Annotations, network.RolloutDurationSeconds)
	if d <= 0 {
		return nil, time.Time{}, nil
	}
	have, err := child.Get[*netv1alpha1.Ingress](ctx, w, route, "Ingress", client.ObjectKey{Namespace: route.Namespace, Name: resources.IngressName(route)})
	var notOwned *child.NotOwnedError
	if err != nil && !errors.As(err, &notOwned) {
		return nil, time.Time{}, err
	}
	var prev *rollout.Rollout
	if have != nil && err == nil {
		prev = rollout.Parse(have.Annotations[rollout.Annotation])
	}
	// The KIngress serves the first 1 % of a rollout: its time sets the pace.
	if prev != nil && have.Status.ObservedGeneration == have.Generation && have.Status.GetCondition(netv1alpha1.IngressConditionReady).IsTrue() {
		prev.ObserveReady(now, d)
	}
	state, next := rollout.Step(rollout.Build(spec, targets), prev, now)
	return state, next, nil
}

// forget drops what Ferry keeps about a Route that is gone: the references it read and
// its status writes.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.Tracker.OnDeletedObserver(key)
	r.Status.Forget(key)
	r.warnings.Forget(key)
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

// updatePlaceholder puts back where the placeholder Service points, and its labels.
func updatePlaceholder(desired, have *corev1.Service) bool {
	labels := child.MergeLabels(desired, have)
	if equality.Semantic.DeepDerivative(desired.Spec, have.Spec) {
		return labels
	}
	have.Spec.Type = desired.Spec.Type
	have.Spec.ExternalName = desired.Spec.ExternalName
	have.Spec.Ports = desired.Spec.Ports
	return true
}

// updateIngress puts back the KIngress's spec, labels and annotations, so that
// IngressReady compares against the generation just written. The rollout state is the
// Route's alone: it goes when the Route has no rollout duration any more, so that a
// later one does not start from a split long gone.
func updateIngress(desired, have *netv1alpha1.Ingress) bool {
	state := false
	if _, ok := desired.Annotations[rollout.Annotation]; !ok {
		if _, state = have.Annotations[rollout.Annotation]; state {
			delete(have.Annotations, rollout.Annotation)
		}
	}
	return child.Merge(desired, have, &have.Spec, desired.Spec) || state
}

// withURLs gives each tagged target its URL, as status.traffic shows it.
func withURLs(targets []v1.TrafficTarget, hosts *resources.Hosts, certs *certificate.Certificates) []v1.TrafficTarget {
	for i := range targets {
		if targets[i].Tag != "" {
			targets[i].URL = url(certs, hosts, targets[i].Tag)
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
