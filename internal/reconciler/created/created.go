// Package created remembers the children a reconciler has just created until its cache
// shows them. Without it, a reconcile that runs between a create and the watch event
// that brings the child into the cache (the child's own create event wakes the parent,
// and often arrives first) finds no child and creates it again: a wasted write that
// fails with AlreadyExists and a retry.
package created

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// forgetAfter bounds how long a child the cache never shows is taken to exist: if it
// was deleted before the cache saw it, the parent creates it again after this.
const forgetAfter = time.Minute

// Children reads children through a cache, adding those created through it that the
// cache does not show yet. It is safe for concurrent use.
type Children struct {
	cache client.Reader
	now   func() time.Time

	mu        sync.Mutex
	pending   map[string]pending
	nextSweep time.Time
}

type pending struct {
	obj client.Object
	at  time.Time
}

// New returns Children reading through cache.
func New(cache client.Reader) *Children {
	return &Children{cache: cache, now: time.Now, pending: make(map[string]pending)}
}

// Get reads key into obj from the cache or, while the cache does not show it yet, from
// the copy Create kept.
func (c *Children) Get(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	err := c.cache.Get(ctx, key, obj)
	k := id(obj, key)
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[k]
	switch {
	case !ok:
		return err
	case err == nil || !apierrors.IsNotFound(err) || c.now().Sub(p.at) > forgetAfter:
		delete(c.pending, k)
		return err
	}
	return copyInto(p.obj, obj)
}

// Create creates obj through w and, if it succeeds, keeps a copy until the cache shows it.
func (c *Children) Create(ctx context.Context, w client.Writer, obj client.Object) error {
	if err := w.Create(ctx, obj); err != nil {
		return err
	}
	now := c.now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if now.After(c.nextSweep) {
		for k, p := range c.pending {
			if now.Sub(p.at) > forgetAfter {
				delete(c.pending, k)
			}
		}
		c.nextSweep = now.Add(forgetAfter)
	}
	c.pending[id(obj, client.ObjectKeyFromObject(obj))] = pending{obj: obj.DeepCopyObject().(client.Object), at: now}
	return nil
}

func id(obj client.Object, key client.ObjectKey) string {
	return fmt.Sprintf("%T %s", obj, key)
}

// copyInto copies src into dst, of the same Go type, as the cache would.
func copyInto(src, dst client.Object) error {
	d, s := reflect.ValueOf(dst), reflect.ValueOf(src.DeepCopyObject())
	if d.Type() != s.Type() {
		return fmt.Errorf("created: read %T into %T", src, dst)
	}
	d.Elem().Set(s.Elem())
	return nil
}
