// Package domainmapping reconciles Knative DomainMappings: it claims the domain for
// the mapping's namespace (a ClusterDomainClaim), resolves the reference to a
// Kubernetes Service's cluster-local host, programs a KIngress that serves the domain
// by rewriting it to that host, and reports all of it in status, as knative/serving
// pkg/reconciler/domainmapping does.
package domainmapping

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/reconciler/domainmapping/resources"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/base"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/certificate"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/child"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/observe"
	routeresources "github.com/ferry-serving/ferry/internal/reconciler/route/resources"
)

// clusterDomain is the cluster's DNS domain, which a reference's host must end in
// after `.svc.`.
var clusterDomain = strings.TrimPrefix(config.ClusterLocalDomain, "svc.")

// Reconciler reconciles one DomainMapping per call.
type Reconciler struct {
	// Base.Config: config-network's autocreate-cluster-domain-claims,
	// default-external-scheme, external-domain-tls, certificate-class and
	// http-protocol. Base.Clock tells the certificate warning's wait.
	base.Base
	// DefaultCertificateClass is the class of the Certificate when neither the
	// DomainMapping nor config-network's certificate-class names one, as for Routes.
	DefaultCertificateClass string
	// Recorder records the Event that explains a domain nobody claimed, and the one
	// for a Certificate that stays not Ready.
	Recorder events.EventRecorder

	warnings certificate.Warnings
}

// Reconcile brings one DomainMapping's claim, KIngress and status in line with its
// spec, in Knative's order: the claim, the certificate, the reference, the KIngress.
// A step that fails leaves the later conditions as they were.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dm := &v1beta1.DomainMapping{}
	if ok, err := observe.Object(ctx, r.Client, req.NamespacedName, dm, r.forget); !ok {
		if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.release(ctx, req.NamespacedName)
	}
	r.Read()
	cfg := r.Config()
	want := dm.DeepCopy()
	want.SetDefaults()

	status, m := base.OpenStatus(&dm.Status, dm.Generation, v1beta1.DomainMappingConditions)
	if dm.Status.ObservedGeneration != dm.Generation {
		// Until the KIngress of this generation is known, its readiness says nothing.
		status.MarkIngressNotConfigured()
	}
	scheme := cfg.Network.DefaultExternalScheme
	if scheme == "" {
		scheme = "http"
	}

	// certs is the DomainMapping's Certificate once read.
	var certs *certificate.Certificates
	write := func() (ctrl.Result, error) {
		url := scheme + "://" + dm.Name
		status.URL, status.Address = url, &duck.Addressable{URL: url}
		warnIn := r.warnings.Warn(r.Recorder, dm, status.GetCondition(v1beta1.DomainMappingConditionCertificateProvisioned), certs, r.Now())
		res, err := r.Status.Write(ctx, dm, &dm.Status, status)
		if warnIn > 0 && (res.RequeueAfter == 0 || warnIn < res.RequeueAfter) {
			res.RequeueAfter = warnIn
		}
		return res, err
	}

	// The claim: a domain is served for one namespace only.
	claimed, claimErr, err := r.claim(ctx, dm, cfg.Network.AutocreateClusterDomainClaims)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !claimed {
		r.explainUnclaimed(dm, claimErr)
		status.MarkDomainAlreadyClaimed()
		return write()
	}
	status.MarkDomainClaimed()

	// The certificate: the user's own secret, else with external-domain-tls on a
	// Certificate of the DomainMapping's own, else none.
	w := r.Writer()
	var o child.Outcome
	tls := resources.MakeTLS(want)
	switch {
	case tls != nil:
		scheme = "https"
		status.MarkCertificateExternallyProvided()
	case !cfg.Network.ExternalDomainTLS || netv1alpha1.ExternalDomainTLSDisabled(dm):
		status.MarkTLSNotEnabled()
	default:
		desired := resources.MakeCertificate(want, routeresources.CertificateClass(want, cfg.Network, r.DefaultCertificateClass))
		if certs, err = certificate.Ensure(ctx, w, dm, []certificate.Desired{{Cert: desired}}); err != nil {
			return ctrl.Result{}, err
		}
		certs.Mark(status, m, v1beta1.DomainMappingConditionCertificateProvisioned, &o, cfg.Network.HTTPProtocol == config.HTTPEnabled)
		tls = certs.TLS
		if certs.HTTPS("") {
			scheme = "https"
		}
	}

	// The reference.
	target, resolveErr, err := r.resolve(ctx, want)
	if err != nil {
		return ctrl.Result{}, err
	}
	if resolveErr != nil {
		status.MarkReferenceNotResolved(resolveErr.Error())
		return o.Result(write())
	}
	status.MarkReferenceResolved()

	// A bad http-protocol annotation leaves the KIngress as it is, and says so on
	// IngressReady.
	httpOption, err := routeresources.HTTPOption(dm, cfg.Network)
	if err != nil {
		status.MarkInvalidHTTPProtocol(err.Error())
		return o.Result(write())
	}

	// The KIngress; a refused one shows on IngressReady and is tried again after its
	// back-off.
	ing, ingErr := child.Ensure(ctx, w, dm, "Ingress", resources.MakeIngress(want, target, tls, httpOption), updateIngress)
	switch {
	case o.Mark(m, v1beta1.DomainMappingConditionIngressReady, ingErr):
	case ingErr != nil:
		return ctrl.Result{}, ingErr
	default:
		status.PropagateIngressStatus(ing)
	}
	return o.Result(write())
}

// forget drops what the reconciler keeps about a DomainMapping that is gone.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.Status.Forget(key)
	r.warnings.Forget(key)
}

// claim reports whether the DomainMapping's namespace holds the claim on its domain,
// creating the claim when nobody holds it and autocreate-cluster-domain-claims is on.
// Without a claim and without autocreate the domain counts as claimed by someone
// else, as in Knative; why is Knative's reconcile error, returned as unclaimed.
func (r *Reconciler) claim(ctx context.Context, dm *v1beta1.DomainMapping, autocreate bool) (claimed bool, unclaimed, err error) {
	cdc := &netv1alpha1.ClusterDomainClaim{}
	err = r.Client.Get(ctx, client.ObjectKey{Name: dm.Name}, cdc)
	switch {
	case apierrors.IsNotFound(err) && autocreate:
		// AlreadyExists means someone claimed it since the cache looked: the retry
		// reads whose it is.
		if err := r.Client.Create(ctx, resources.MakeDomainClaim(dm)); err != nil {
			return false, nil, fmt.Errorf("failed to create ClusterDomainClaim: %w", err)
		}
		return true, nil, nil
	case apierrors.IsNotFound(err):
		return false, fmt.Errorf("no ClusterDomainClaim found for domain %q (and autocreate-cluster-domain-claims property is not true)", dm.Name), nil
	case err != nil:
		return false, nil, fmt.Errorf("failed to get ClusterDomainClaim: %w", err)
	case cdc.Spec.Namespace != dm.Namespace:
		return false, fmt.Errorf("namespace %q does not own ClusterDomainClaim for %q", dm.Namespace, dm.Name), nil
	}
	return true, nil, nil
}

// release deletes the claim of a DomainMapping that is gone or being deleted, when it
// is its namespace's and claims are autocreated, as Knative's FinalizeKind does: the
// domain is free for another namespace. Knative holds the DomainMapping with a
// finalizer until then; Ferry keeps no finalizers, so a claim whose DomainMapping went
// while no controller ran stays until someone deletes it.
func (r *Reconciler) release(ctx context.Context, key types.NamespacedName) error {
	if !r.Config().Network.AutocreateClusterDomainClaims {
		// Who does not create claims does not delete them.
		return nil
	}
	cdc := &netv1alpha1.ClusterDomainClaim{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: key.Name}, cdc); err != nil {
		return client.IgnoreNotFound(err)
	}
	if cdc.Spec.Namespace != key.Namespace {
		return nil
	}
	return client.IgnoreNotFound(r.Client.Delete(ctx, cdc, client.Preconditions{UID: &cdc.UID}))
}

// explainUnclaimed records Knative's reconcile error for a domain this namespace does
// not hold as a Warning Event (Knative's InternalError), once as the condition turns
// False: the condition's message says the domain is in use even when nobody claimed it.
func (r *Reconciler) explainUnclaimed(dm *v1beta1.DomainMapping, why error) {
	c := dm.Status.GetCondition(v1beta1.DomainMappingConditionDomainClaimed)
	if r.Recorder == nil || (c.IsFalse() && c.Reason == v1beta1.ReasonDomainAlreadyClaimed) {
		return
	}
	r.Recorder.Eventf(dm, nil, corev1.EventTypeWarning, duck.ReasonInternalError, "Reconcile", "%s", why.Error())
}

// addressable is a kind a DomainMapping may name, and how its URL is found.
type addressable struct {
	resource string
	newObj   func() client.Object
	url      func(client.Object) string
}

// addressables are the kinds Ferry resolves: Knative's resolver takes any
// Addressable, and these are the ones whose URL is a Kubernetes Service's host, which
// is what a DomainMapping can serve.
var addressables = map[schema.GroupVersionKind]addressable{
	v1.SchemeGroupVersion.WithKind("Service"): {resource: "services",
		newObj: func() client.Object { return &v1.Service{} },
		url:    func(o client.Object) string { return addressURL(o.(*v1.Service).Status.Address) }},
	v1.SchemeGroupVersion.WithKind("Route"): {resource: "routes",
		newObj: func() client.Object { return &v1.Route{} },
		url:    func(o client.Object) string { return addressURL(o.(*v1.Route).Status.Address) }},
	corev1.SchemeGroupVersion.WithKind("Service"): {resource: "services",
		newObj: func() client.Object { return &corev1.Service{} },
		url: func(o client.Object) string {
			return fmt.Sprintf("http://%s.%s.svc.%s", o.GetName(), o.GetNamespace(), clusterDomain)
		}},
}

func addressURL(a *duck.Addressable) string {
	if a == nil {
		return ""
	}
	return a.URL
}

// resolve finds the Kubernetes Service and cluster-local host behind the reference.
// A reference that does not resolve comes back as failed, with Knative's resolver's and
// reconciler's messages; err is for the workqueue to retry.
func (r *Reconciler) resolve(ctx context.Context, dm *v1beta1.DomainMapping) (t resources.Target, failed, err error) {
	ref := dm.Spec.Ref
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return t, fmt.Errorf("invalid apiVersion %q: %w", ref.APIVersion, err), nil
	}
	kind, ok := addressables[gv.WithKind(ref.Kind)]
	if !ok {
		return t, fmt.Errorf("%s %s is not an Addressable Ferry can map: a serving.knative.dev/v1 Service or Route, or a v1 Service", ref.APIVersion, ref.Kind), nil
	}
	obj := kind.newObj()
	switch err := r.Client.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, obj); {
	case apierrors.IsNotFound(err):
		// The cache's NotFound names the kind; Knative's lister names the resource.
		notFound := apierrors.NewNotFound(schema.GroupResource{Group: gv.Group, Resource: kind.resource}, ref.Name)
		return t, fmt.Errorf("failed to get object %s/%s: %w", ref.Namespace, ref.Name, notFound), nil
	case err != nil:
		return t, nil, err
	}
	u := kind.url(obj)
	if u == "" {
		return t, fmt.Errorf("address not set for %s %s %s/%s", ref.APIVersion, ref.Kind, ref.Namespace, ref.Name), nil
	}
	t, failed = resources.ParseTarget(u, dm.Namespace, clusterDomain)
	return t, failed, nil
}

// updateIngress puts back the KIngress's spec, labels and annotations, so that
// IngressReady compares against the generation just written.
func updateIngress(desired, have *netv1alpha1.Ingress) bool {
	return child.Merge(desired, have, &have.Spec, desired.Spec)
}
