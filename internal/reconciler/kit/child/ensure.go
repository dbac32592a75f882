package child

import (
	"context"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/created"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
)

// Writer reads and writes one reconciler's children.
type Writer struct {
	// Client writes to the API server.
	Client client.Client
	// Children reads through the cache, adding children just created.
	Children *created.Children
	// Refused remembers refused writes, to report them and back off.
	Refused *refusal.Writes
}

// NotOwnedError says a child's name is taken by an object its owner does not control.
type NotOwnedError struct {
	// Kind is what users call the child ("Configuration", "placeholder Service").
	Kind, Name string
}

func (e *NotOwnedError) Error() string { return duck.NotOwnedMessage(e.Kind, e.Name) }

// Get reads the child key into a new T. It returns nil when there is none, and a
// *NotOwnedError when the name is taken by an object owner does not control.
func Get[T client.Object](ctx context.Context, w Writer, owner metav1.Object, kind string, key client.ObjectKey) (T, error) {
	var none T
	have := reflect.New(reflect.TypeOf(none).Elem()).Interface().(T)
	err := w.Children.Get(ctx, key, have, owner.GetUID())
	switch {
	case apierrors.IsNotFound(err):
		return none, nil
	case err != nil:
		return none, err
	case !metav1.IsControlledBy(have, owner):
		return none, &NotOwnedError{Kind: kind, Name: key.Name}
	}
	return have, nil
}

// Ensure makes the child desired describes exist, controlled by owner, and returns it
// as the API server last acknowledged it. An existing child is passed to update with
// desired: update puts back on have what the owner sets (it may first copy into desired
// what is no longer the owner's, such as replicas an autoscaler set) and reports whether
// it changed have; only then is the child written.
//
// A child of another owner comes back as a *NotOwnedError, a refused write as a
// *refusal.Error; Outcome turns both into the owner's condition.
func Ensure[T client.Object](ctx context.Context, w Writer, owner metav1.Object, kind string, desired T, update func(desired, have T) bool) (T, error) {
	have, err := Get[T](ctx, w, owner, kind, client.ObjectKeyFromObject(desired))
	var none T
	switch {
	case err != nil:
		return none, err
	case reflect.ValueOf(have).IsNil():
		// On AlreadyExists the cache is behind; the error requeues the owner until it
		// catches up.
		return desired, w.Refused.Create(desired, func() error { return w.Children.Create(ctx, w.Client, desired) })
	case !update(desired, have):
		return have, nil
	}
	return have, w.Refused.Update(desired, func() error { return w.Children.Update(ctx, w.Client, have) })
}

// Together runs a and b side by side and returns when both are done: two children
// that do not depend on each other are created in one API round trip instead of two.
// With serial set it runs a, then b, on the caller's goroutine, so that the
// convergence simulation, which runs reconciles one step at a time, stays a function
// of its seed.
func Together(serial bool, a, b func()) {
	if serial {
		a()
		b()
		return
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		a()
	}()
	b()
	<-done
}
