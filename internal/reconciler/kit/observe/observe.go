// Package observe reads the object a reconcile is about: the prologue every Ferry
// reconciler shares. There is nothing to reconcile for an object that is gone or being
// deleted (Ferry keeps no finalizers: its children go with their owner by garbage
// collection), only memory about it to drop: a status writer's record of its writes,
// the tracker's references, the autoscaler's metrics.
package observe

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Object reads key into obj and reports whether there is something to reconcile. When
// the object is gone or being deleted it returns false, with no error, after calling
// each of forget with key.
func Object(ctx context.Context, c client.Reader, key types.NamespacedName, obj client.Object, forget ...func(types.NamespacedName)) (bool, error) {
	err := c.Get(ctx, key, obj)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return false, err
	case err == nil && obj.GetDeletionTimestamp() == nil:
		return true, nil
	}
	for _, f := range forget {
		f(key)
	}
	return false, nil
}
