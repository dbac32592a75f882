// Package domainmapping reconciles Knative DomainMappings: it claims the domain for
// the mapping's namespace (a ClusterDomainClaim), resolves the reference to a
// Kubernetes Service's cluster-local host, programs a KIngress that serves the domain
// by rewriting it to that host, and reports all of it in status, as knative/serving
// pkg/reconciler/domainmapping does.
package domainmapping

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

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
	"github.com/ferry-serving/ferry/internal/reconciler/child"
	"github.com/ferry-serving/ferry/internal/reconciler/created"
	"github.com/ferry-serving/ferry/internal/reconciler/domainmapping/resources"
	"github.com/ferry-serving/ferry/internal/reconciler/load"
	"github.com/ferry-serving/ferry/internal/reconciler/refusal"
	routeresources "github.com/ferry-serving/ferry/internal/reconciler/route/resources"
	"github.com/ferry-serving/ferry/internal/reconciler/statuswriter"
)

// Condition reasons and messages users see, Knative's (pkg/apis/serving/v1beta1
// domainmapping_lifecycle.go).
const (
	reasonDomainAlreadyClaimed = "DomainAlreadyClaimed"
	reasonResolveFailed        = "ResolveFailed"
	msgDomainAlreadyClaimed    = "The domain name is already in use by another DomainMapping"
	reasonIngressNotConfigured = "IngressNotConfigured"
	msgIngressNotConfigured    = "Ingress has not yet been reconciled."
	reasonTLSNotEnabled        = "TLSNotEnabled"
	msgTLSNotEnabled           = "external-domain-tls is not enabled"
	reasonExternallyProvided   = "CertificateExternallyProvided"
	msgExternallyProvided      = "TLS certificate was provided externally"
	// The DomainMapping's own Certificate, when external-domain-tls is on.
	reasonCertificateNotReady        = "CertificateNotReady"
	reasonCertificateProvisionFailed = "CertificateProvisionFailed"
	reasonCertificateNotOwned        = "CertificateNotOwned"
	reasonHTTPDowngrade              = "HTTPDowngrade"
	// reasonInvalidHTTPProtocol: the http-protocol annotation is neither enabled nor
	// redirected (Knative fails the reconcile with that error), as on Routes.
	reasonInvalidHTTPProtocol = "InvalidHTTPProtocol"
)

// clusterDomain is the cluster's DNS domain, which a reference's host must end in
// after `.svc.`.
var clusterDomain = strings.TrimPrefix(config.ClusterLocalDomain, "svc.")

// Reconciler reconciles one DomainMapping per call.
type Reconciler struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Children reads and creates the KIngress, so that one just created counts as
	// existing before the cache shows it.
	Children *created.Children
	// Status writes the status and records Warning Events for new failures.
	Status *statuswriter.Writer
	// Refused remembers the children the API server refused, to report and back off.
	Refused *refusal.Writes
	// Config returns the current configuration: config-network's
	// autocreate-cluster-domain-claims, default-external-scheme, external-domain-tls,
	// certificate-class and http-protocol.
	Config func() *config.Config
	// DefaultCertificateClass is the class of the Certificate when neither the
	// DomainMapping nor config-network's certificate-class names one, as for Routes.
	DefaultCertificateClass string
	// Recorder records the Event that explains a domain nobody claimed, and the one
	// for a Certificate that stays not Ready.
	Recorder events.EventRecorder
	// AfterRead, if set, runs between reading the DomainMapping and acting on it.
	AfterRead func()
	// Now tells time for the certificate warning's wait (nil: the real clock).
	Now func() time.Time

	// warned remembers, per DomainMapping, the certificate problem last reported by an
	// Event, so that a problem makes one Event however often it is reconciled.
	warned sync.Map
}

// Reconcile brings one DomainMapping's claim, KIngress and status in line with its
// spec, in Knative's order: the claim, the certificate, the reference, the KIngress.
// A step that fails leaves the later conditions as they were.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	dm := &v1beta1.DomainMapping{}
	if ok, err := load.Object(ctx, r.Client, req.NamespacedName, dm, r.forget); !ok {
		if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.release(ctx, req.NamespacedName)
	}
	if r.AfterRead != nil {
		r.AfterRead()
	}
	cfg := r.Config()
	want := dm.DeepCopy()
	want.SetDefaults()

	status := dm.Status.DeepCopy()
	m := v1beta1.DomainMappingConditions.Manage(&status.Status)
	m.InitializeConditions()
	if status.ObservedGeneration != dm.Generation {
		// Until the KIngress of this generation is known, its readiness says nothing.
		m.MarkUnknown(v1beta1.DomainMappingConditionIngressReady, reasonIngressNotConfigured, msgIngressNotConfigured)
	}
	status.ObservedGeneration = dm.Generation
	scheme := cfg.Network.DefaultExternalScheme
	if scheme == "" {
		scheme = "http"
	}

	// cert is the DomainMapping's Certificate once read.
	var cert *netv1alpha1.Certificate
	write := func() (ctrl.Result, error) {
		url := scheme + "://" + dm.Name
		status.URL, status.Address = url, &duck.Addressable{URL: url}
		warnIn := r.warnCertificate(dm, status, cert)
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
		m.MarkFalse(v1beta1.DomainMappingConditionDomainClaimed, reasonDomainAlreadyClaimed, msgDomainAlreadyClaimed)
		return write()
	}
	m.MarkTrue(v1beta1.DomainMappingConditionDomainClaimed)

	// The certificate: the user's own secret, else with external-domain-tls on a
	// Certificate of the DomainMapping's own, else none.
	w := child.Writer{Client: r.Client, Children: r.Children, Refused: r.Refused}
	var o child.Outcome
	tls := resources.MakeTLS(want)
	switch {
	case tls != nil:
		scheme = "https"
		m.MarkTrueWithReason(v1beta1.DomainMappingConditionCertificateProvisioned, reasonExternallyProvided, msgExternallyProvided)
	case !cfg.Network.ExternalDomainTLS || routeresources.ExternalDomainTLSDisabled(dm):
		m.MarkTrueWithReason(v1beta1.DomainMappingConditionCertificateProvisioned, reasonTLSNotEnabled, msgTLSNotEnabled)
	default:
		var https bool
		if tls, https, cert, err = r.certificate(ctx, w, m, &o, want, cfg.Network); err != nil {
			return ctrl.Result{}, err
		}
		if https {
			scheme = "https"
		}
	}

	// The reference.
	target, resolveErr, err := r.resolve(ctx, want)
	if err != nil {
		return ctrl.Result{}, err
	}
	if resolveErr != nil {
		m.MarkFalse(v1beta1.DomainMappingConditionReferenceResolved, reasonResolveFailed, "%s", resolveErr.Error())
		return o.Result(write())
	}
	m.MarkTrue(v1beta1.DomainMappingConditionReferenceResolved)

	// A bad http-protocol annotation leaves the KIngress as it is, and says so on
	// IngressReady.
	httpOption, err := routeresources.HTTPOption(dm, cfg.Network)
	if err != nil {
		m.MarkFalse(v1beta1.DomainMappingConditionIngressReady, reasonInvalidHTTPProtocol, "%s", err)
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
		markIngress(m, ing)
	}
	return o.Result(write())
}

// certificate makes the DomainMapping's Certificate exist as desired and shows it on
// CertificateProvisioned, as Knative does: Ready is True, and its Secret goes on the
// KIngress (tls); not Ready is Unknown CertificateNotReady (False
// CertificateProvisionFailed if its Ready is False), unless http-protocol is enabled:
// then the condition is True HTTPDowngrade. Until Ready the KIngress serves plain HTTP
// only. https says the URL is https: the Certificate exists and covers the domain, and
// HTTP is not the downgrade. A name taken or a write refused is False.
func (r *Reconciler) certificate(ctx context.Context, w child.Writer, m duck.ConditionManager, o *child.Outcome, dm *v1beta1.DomainMapping, network *config.Network) (tls []netv1alpha1.IngressTLS, https bool, cert *netv1alpha1.Certificate, err error) {
	desired := resources.MakeCertificate(dm, routeresources.CertificateClass(dm, network, r.DefaultCertificateClass))
	cert, err = child.Ensure(ctx, w, dm, "Certificate", desired, updateCertificate)
	var notOwned *child.NotOwnedError
	switch {
	case errors.As(err, &notOwned):
		m.MarkFalse(v1beta1.DomainMappingConditionCertificateProvisioned, reasonCertificateNotOwned, "There is an existing certificate %s that we don't own.", desired.Name)
		return nil, false, nil, nil
	case o.Mark(m, v1beta1.DomainMappingConditionCertificateProvisioned, err):
		return nil, false, nil, nil
	case err != nil:
		return nil, false, nil, err
	case cert.IsReady():
		m.MarkTrue(v1beta1.DomainMappingConditionCertificateProvisioned)
		return []netv1alpha1.IngressTLS{routeresources.MakeIngressTLS(cert, desired.Spec.DNSNames)}, true, cert, nil
	case network.HTTPProtocol == config.HTTPEnabled:
		m.MarkTrueWithReason(v1beta1.DomainMappingConditionCertificateProvisioned, reasonHTTPDowngrade, "Certificate %s is not ready downgrade HTTP.", cert.Name)
		return nil, false, cert, nil
	case cert.IsFailed():
		m.MarkFalse(v1beta1.DomainMappingConditionCertificateProvisioned, reasonCertificateProvisionFailed, "Certificate %s failed to be provisioned: %s", cert.Name, cert.ProviderSays())
	default:
		m.MarkUnknown(v1beta1.DomainMappingConditionCertificateProvisioned, reasonCertificateNotReady, "Certificate %s is not ready: %s", cert.Name, cert.ProviderSays())
	}
	return nil, true, cert, nil
}

// certificateWarnAfter is how long a Certificate may stay not Ready before the
// DomainMapping warns, as a Route does: a provider that works issues within it (the
// local CA in milliseconds), so the Event means one that does not, or none of its class.
const certificateWarnAfter = 10 * time.Second

// warnCertificate records a Warning Event when the DomainMapping's Certificate has
// been pending, or downgraded to HTTP, for certificateWarnAfter; before that it returns
// when to look again. A False condition needs none here: the status writer records it.
func (r *Reconciler) warnCertificate(dm *v1beta1.DomainMapping, status *v1beta1.DomainMappingStatus, cert *netv1alpha1.Certificate) time.Duration {
	key := types.NamespacedName{Namespace: dm.Namespace, Name: dm.Name}
	c := status.GetCondition(v1beta1.DomainMappingConditionCertificateProvisioned)
	if cert == nil || c == nil || !(c.Status == corev1.ConditionUnknown && c.Reason == reasonCertificateNotReady ||
		c.Status == corev1.ConditionTrue && c.Reason == reasonHTTPDowngrade) {
		r.warned.Delete(key)
		return 0
	}
	now := time.Now
	if r.Now != nil {
		now = r.Now
	}
	// A Certificate just created has no timestamp yet: its age starts now.
	created := cert.CreationTimestamp.Time
	if created.IsZero() {
		created = now()
	}
	if wait := created.Add(certificateWarnAfter).Sub(now()); wait > 0 {
		return wait
	}
	if old, _ := r.warned.Swap(key, c.Reason+"/"+c.Message); old == c.Reason+"/"+c.Message || r.Recorder == nil {
		return 0
	}
	r.Recorder.Eventf(dm, nil, corev1.EventTypeWarning, c.Reason, "Reconcile", "%s", c.Message)
	return 0
}

// forget drops what the reconciler keeps about a DomainMapping that is gone.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.Status.Forget(key)
	r.warned.Delete(key)
}

// updateCertificate puts back the Certificate's spec, labels and annotations.
func updateCertificate(desired, have *netv1alpha1.Certificate) bool {
	spec := child.Set(&have.Spec, desired.Spec)
	labels := child.MergeLabels(desired, have)
	return child.MergeAnnotations(desired, have) || labels || spec
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
	if r.Recorder == nil || (c.IsFalse() && c.Reason == reasonDomainAlreadyClaimed) {
		return
	}
	r.Recorder.Eventf(dm, nil, corev1.EventTypeWarning, "InternalError", "Reconcile", "%s", why.Error())
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
	spec := child.Set(&have.Spec, desired.Spec)
	labels := child.MergeLabels(desired, have)
	return child.MergeAnnotations(desired, have) || labels || spec
}

// markIngress turns the KIngress's readiness into IngressReady, as Knative's
// PropagateIngressStatus does, once the KIngress has observed its generation.
func markIngress(m duck.ConditionManager, ing *netv1alpha1.Ingress) {
	c := ing.Status.GetCondition(netv1alpha1.IngressConditionReady)
	switch {
	case ing.Status.ObservedGeneration != ing.Generation, c == nil:
		m.MarkUnknown(v1beta1.DomainMappingConditionIngressReady, reasonIngressNotConfigured, msgIngressNotConfigured)
	case c.IsTrue():
		m.MarkTrue(v1beta1.DomainMappingConditionIngressReady)
	case c.IsFalse():
		m.MarkFalse(v1beta1.DomainMappingConditionIngressReady, c.Reason, "%s", c.Message)
	default:
		m.MarkUnknown(v1beta1.DomainMappingConditionIngressReady, c.Reason, "%s", c.Message)
	}
}
