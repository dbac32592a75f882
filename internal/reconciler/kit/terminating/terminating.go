// Package terminating keeps reconcilers out of a retry loop in a namespace that is
// being deleted.
package terminating

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Ignore wraps r so that an error saying the namespace is terminating ends the
// reconcile without a retry: the object is going away with its namespace, and
// creating children there can only fail until it is gone.
func Ignore(r reconcile.Reconciler) reconcile.Reconciler {
	return reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		res, err := r.Reconcile(ctx, req)
		if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return reconcile.Result{}, nil
		}
		return res, err
	})
}
