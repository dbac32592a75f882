// Package created remembers the children a reconciler has just created or updated until
// its cache shows them. Without it, a reconcile that runs between a create and the watch
// event that brings the child into the cache (the child's own create event wakes the
// parent, and often arrives first) finds no child and creates it again: a wasted write
// that fails with AlreadyExists and a retry. After an update it is worse: the cache
// still holds the child as it was before, and when the owner's spec went back to what
// that old child says (a traffic split, then back within a few milliseconds), the
// reconcile finds nothing to write and reports the child's old, Ready status as the
// owner's, while the child serves the split (the convergence simulation, seed
// unobserved:2114). So an update's result is read instead of any older copy the cache
// holds, by resourceVersion order (comparable, KEP-5504).
package created

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/utils/clock"
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
	// updated: obj is what an update returned, and the cache holds the child, maybe
	// older than that.
	updated bool
}

// New returns Children reading through cache.
func New(cache client.Reader) *Children {
	return &Children{cache: cache, now: time.Now, pending: make(map[string]pending)}
}

// WithClock makes the Children tell time by c (the convergence simulation's clock).
func (c *Children) WithClock(clk clock.PassiveClock) *Children {
	c.now = clk.Now
	return c
}

// Get reads key into obj from the cache or, while the cache does not show it yet, from
// the copy Create kept for the same owner (owner is its UID), or, while the cache
// holds an older version, from the copy Update kept. A copy made for another
// owner of the same name — one deleted and created again before the cache showed the
// child — is dropped: that child is garbage, and taking it for the new owner's would
// report the name taken until the copy expired, with nothing to wake the owner then.
func (c *Children) Get(ctx context.Context, key client.ObjectKey, obj client.Object, owner types.UID) error {
	err := c.cache.Get(ctx, key, obj)
	k := id(obj, key)
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.pending[k]
	switch {
	case !ok:
		return err
	case p.updated:
		// Not found: deleted since, or never seen; either way the cache decides, at
		// worst at the cost of a create refused as AlreadyExists.
		if err == nil && obj.GetUID() == p.obj.GetUID() && older(obj, p.obj) && c.now().Sub(p.at) <= forgetAfter {
			return copyInto(p.obj, obj)
		}
		delete(c.pending, k)
		return err
	case err == nil || !apierrors.IsNotFound(err) || c.now().Sub(p.at) > forgetAfter || !controlledBy(p.obj, owner):
		delete(c.pending, k)
		return err
	}
	return copyInto(p.obj, obj)
}

func controlledBy(obj client.Object, owner types.UID) bool {
	ref := metav1.GetControllerOf(obj)
	return ref != nil && ref.UID == owner
}

// older says the cache's copy of a child comes before the one written: a
// resourceVersion that cannot be compared never does, and the cache is read.
func older(cached, written client.Object) bool {
	n, err := resourceversion.CompareResourceVersion(cached.GetResourceVersion(), written.GetResourceVersion())
	return err == nil && n < 0
}

// Create creates obj through w and, if it succeeds, keeps a copy until the cache shows it.
func (c *Children) Create(ctx context.Context, w client.Writer, obj client.Object) error {
	if err := w.Create(ctx, obj); err != nil {
		return err
	}
	c.remember(obj, false)
	return nil
}

// Update updates obj through w and, if it succeeds, keeps what the API server returned
// until the cache shows that version or a later one.
func (c *Children) Update(ctx context.Context, w client.Writer, obj client.Object) error {
	if err := w.Update(ctx, obj); err != nil {
		return err
	}
	c.remember(obj, true)
	return nil
}

func (c *Children) remember(obj client.Object, updated bool) {
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
	c.pending[id(obj, client.ObjectKeyFromObject(obj))] = pending{obj: obj.DeepCopyObject().(client.Object), at: now, updated: updated}
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
