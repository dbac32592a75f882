package localca

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/watches"
)

// caCertKey is the Secret key that holds the CA, as cert-manager writes it.
const caCertKey = "ca.crt"

// Reconciler fulfils one Certificate of the local CA's class per call.
type Reconciler struct {
	Client client.Client
	CA     *CA
	// Clock tells time (nil: the real clock), as base.Base's does.
	Clock clock.PassiveClock
}

// SetupWithManager registers the reconciler with mgr (Controller).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return r.Controller(watches.OwnersOf(mgr)).Register(mgr, 1)
}

// Controller is the reconciler and what wakes it: the Certificates of the local CA's
// class and the Secrets they control.
func (r *Reconciler) Controller(o watches.Owners) watches.Controller {
	ours := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		return obj.GetAnnotations()[netv1alpha1.CertificateClassAnnotationKey] == netv1alpha1.LocalCACertificateClass
	})
	return watches.Controller{
		Name: "localca",
		Watches: []watches.Watch{
			{Object: &netv1alpha1.Certificate{}, Handler: watches.Enqueue(), Predicates: []predicate.Predicate{ours}},
			{Object: &corev1.Secret{}, Handler: watches.Owner(o, &netv1alpha1.Certificate{})},
		},
		Reconciler: r,
	}
}

func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cert := &netv1alpha1.Certificate{}
	if err := r.Client.Get(ctx, req.NamespacedName, cert); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if cert.DeletionTimestamp != nil || cert.Annotations[netv1alpha1.CertificateClassAnnotationKey] != netv1alpha1.LocalCACertificateClass {
		return reconcile.Result{}, nil
	}
	now := time.Now()
	if r.Clock != nil {
		now = r.Clock.Now()
	}
	status := cert.Status.DeepCopy()
	status.ObservedGeneration = cert.Generation
	notAfter, err := r.reconcileSecret(ctx, cert, now)
	var notOwned *notOwnedError
	switch {
	case errors.As(err, &notOwned):
		status.MarkResourceNotOwned("Secret", cert.Spec.SecretName)
		status.NotAfter = nil
	case err != nil:
		return reconcile.Result{}, err
	default:
		status.MarkReady()
		status.NotAfter = &metav1.Time{Time: notAfter}
	}
	if !equality.Semantic.DeepEqual(status, &cert.Status) {
		// A merge patch, not an update: the status is computed from the spec and the
		// Secret alone, so a cache a write behind (the Secret's event arrives first)
		// need not make a conflict.
		before := cert.DeepCopy()
		cert.Status = *status
		if err := r.Client.Status().Patch(ctx, cert, client.MergeFrom(before)); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	if err != nil {
		return reconcile.Result{}, nil
	}
	// Look again when the certificate is due for renewal.
	return reconcile.Result{RequeueAfter: notAfter.Add(-leafValidity / 3).Sub(now)}, nil
}

type notOwnedError struct{ name string }

func (e *notOwnedError) Error() string {
	return fmt.Sprintf("the Secret %s is not the Certificate's", e.name)
}

// reconcileSecret makes the Certificate's Secret hold a certificate for its dnsNames
// signed by the CA, and returns when that expires.
func (r *Reconciler) reconcileSecret(ctx context.Context, cert *netv1alpha1.Certificate, now time.Time) (time.Time, error) {
	secret := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: cert.Namespace, Name: cert.Spec.SecretName}, secret)
	exists := err == nil
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return time.Time{}, err
	case !metav1.IsControlledBy(secret, cert):
		return time.Time{}, &notOwnedError{name: secret.Name}
	}
	if exists && bytes.Equal(secret.Data[caCertKey], r.CA.CertPEM()) {
		if notAfter, ok := r.CA.Issued(secret.Data[corev1.TLSCertKey], secret.Data[corev1.TLSPrivateKeyKey], cert.Spec.DNSNames, now); ok {
			return notAfter, nil
		}
	}
	crt, key, err := r.CA.Sign(cert.Spec.DNSNames, now)
	if err != nil {
		return time.Time{}, fmt.Errorf("signing %s/%s: %w", cert.Namespace, cert.Name, err)
	}
	notAfter, _ := r.CA.Issued(crt, key, cert.Spec.DNSNames, now)
	want := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       cert.Namespace,
			Name:            cert.Spec.SecretName,
			Labels:          map[string]string{netv1alpha1.CertificateUIDLabelKey: string(cert.UID)},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cert, netv1alpha1.SchemeGroupVersion.WithKind("Certificate"))},
		},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key, caCertKey: r.CA.CertPEM()},
	}
	if !exists {
		return notAfter, r.Client.Create(ctx, want)
	}
	secret.Data = want.Data
	if secret.Labels == nil {
		secret.Labels = map[string]string{}
	}
	secret.Labels[netv1alpha1.CertificateUIDLabelKey] = string(cert.UID)
	return notAfter, r.Client.Update(ctx, secret)
}
