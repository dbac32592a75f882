package certmanager

import (
	"context"
	"errors"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/watches"
)

// CertificateGVK is cert-manager's Certificate.
var CertificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

// notReadyReasons are cert-manager's False reasons that mean "on its way".
var notReadyReasons = []string{"InProgress", "Pending", "TemporaryCertificate"}

// Reconciler fulfils one Knative Certificate per call.
type Reconciler struct {
	Client client.Client
	// Config returns the current configuration; config-certmanager's issuerRef is read.
	Config func() *config.Config
}

func ours(o client.Object) bool {
	class := o.GetAnnotations()[netv1alpha1.CertificateClassAnnotationKey]
	return class == "" || class == netv1alpha1.CertManagerCertificateClass
}

// SetupWithManager registers the reconciler with mgr (Controller).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return r.Controller(watches.OwnersOf(mgr)).Register(mgr, 1)
}

// Controller is the reconciler and what wakes it: the Knative Certificates of
// cert-manager's class and the cert-manager Certificates they control.
func (r *Reconciler) Controller(o watches.Owners) watches.Controller {
	owned := &unstructured.Unstructured{}
	owned.SetGroupVersionKind(CertificateGVK)
	return watches.Controller{
		Name: "certmanager",
		Watches: []watches.Watch{
			{Object: &netv1alpha1.Certificate{}, Handler: watches.Enqueue(), Predicates: []predicate.Predicate{predicate.NewPredicateFuncs(ours)}},
			{Object: owned, Handler: watches.Owner(o, &netv1alpha1.Certificate{})},
		},
		Reconciler: r,
	}
}

func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	kcert := &netv1alpha1.Certificate{}
	if err := r.Client.Get(ctx, req.NamespacedName, kcert); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if kcert.DeletionTimestamp != nil || !ours(kcert) {
		return reconcile.Result{}, nil
	}
	status := kcert.Status.DeepCopy()
	status.ObservedGeneration = kcert.Generation
	cm, err := r.ensure(ctx, kcert, Make(kcert, r.Config().CertManager.IssuerRef))
	switch {
	case apierrors.IsAlreadyExists(err):
		return reconcile.Result{}, err // the cache is behind
	case errors.Is(err, errNotOwned):
		status.MarkResourceNotOwned("CertManager Certificate", kcert.Name)
	case err != nil:
		return reconcile.Result{}, err
	default:
		markFrom(status, cm)
	}
	if equality.Semantic.DeepEqual(status, &kcert.Status) {
		return reconcile.Result{}, nil
	}
	before := kcert.DeepCopy()
	kcert.Status = *status
	return reconcile.Result{}, client.IgnoreNotFound(r.Client.Status().Patch(ctx, kcert, client.MergeFrom(before)))
}

var errNotOwned = errors.New("the cert-manager Certificate is not the Knative Certificate's")

// ensure makes the cert-manager Certificate as desired and returns it.
func (r *Reconciler) ensure(ctx context.Context, kcert *netv1alpha1.Certificate, desired *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	have := &unstructured.Unstructured{}
	have.SetGroupVersionKind(CertificateGVK)
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(desired), have)
	switch {
	case apierrors.IsNotFound(err):
		return desired, r.Client.Create(ctx, desired)
	case err != nil:
		return nil, err
	case !metav1.IsControlledBy(have, kcert):
		return nil, errNotOwned
	}
	changed := !equality.Semantic.DeepEqual(have.Object["spec"], desired.Object["spec"])
	have.Object["spec"] = desired.Object["spec"]
	labels, annotations := have.GetLabels(), have.GetAnnotations()
	if labels == nil {
		labels = map[string]string{}
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	for k, v := range desired.GetLabels() {
		changed = changed || labels[k] != v
		labels[k] = v
	}
	for k, v := range desired.GetAnnotations() {
		changed = changed || annotations[k] != v
		annotations[k] = v
	}
	if !changed {
		return have, nil
	}
	have.SetLabels(labels)
	have.SetAnnotations(annotations)
	return have, r.Client.Update(ctx, have)
}

// Make builds the cert-manager Certificate for kcert, as Knative's provider does.
func Make(kcert *netv1alpha1.Certificate, issuer config.IssuerRef) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(CertificateGVK)
	u.SetNamespace(kcert.Namespace)
	u.SetName(kcert.Name)
	u.SetLabels(kcert.Labels)
	u.SetAnnotations(kcert.Annotations)
	u.SetOwnerReferences([]metav1.OwnerReference{*metav1.NewControllerRef(kcert, netv1alpha1.SchemeGroupVersion.WithKind("Certificate"))})
	names := make([]any, 0, len(kcert.Spec.DNSNames))
	for _, n := range kcert.Spec.DNSNames {
		names = append(names, n)
	}
	ref := map[string]any{"kind": issuer.Kind, "name": issuer.Name}
	if issuer.Group != "" {
		ref["group"] = issuer.Group
	}
	u.Object["spec"] = map[string]any{
		"commonName": kcert.Spec.DNSNames[0],
		"dnsNames":   names,
		"secretName": kcert.Spec.SecretName,
		"issuerRef":  ref,
		"secretTemplate": map[string]any{
			"labels": map[string]any{netv1alpha1.CertificateUIDLabelKey: string(kcert.UID)},
		},
	}
	return u
}

// markFrom copies the cert-manager Certificate's Ready and notAfter to status.
func markFrom(status *netv1alpha1.CertificateStatus, cm *unstructured.Unstructured) {
	status.NotAfter = nil
	if s, ok, _ := unstructured.NestedString(cm.Object, "status", "notAfter"); ok {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			status.NotAfter = &metav1.Time{Time: t}
		}
	}
	conds, _, _ := unstructured.NestedSlice(cm.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] != "Ready" {
			continue
		}
		reason, _ := m["reason"].(string)
		message, _ := m["message"].(string)
		switch m["status"] {
		case "True":
			status.MarkReady()
		case "False":
			if slices.Contains(notReadyReasons, reason) {
				status.MarkNotReady(reason, message)
			} else {
				status.MarkFailed(reason, message)
			}
		default:
			status.MarkNotReady(reason, message)
		}
		return
	}
	status.MarkNoCertManagerCondition()
}
