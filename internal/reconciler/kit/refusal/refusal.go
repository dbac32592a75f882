// Package refusal remembers the child writes the API server refused, so that a
// reconciler reports a refusal on its owner and backs off instead of retrying it in a
// loop.
//
// A refusal (the child is invalid, the request is forbidden by RBAC or a ResourceQuota,
// an admission webhook or policy denied it) does not go away by asking again at once:
// something else has to change first, the owner's spec or the cluster's rules. So the
// owner shows it (a False condition with the API server's message, which the status
// writer turns into one Warning Event) and the same write is tried again only after a
// back-off that doubles up to a cap. A write that differs from the refused one (the
// owner's spec changed) is tried at once. Errors that are not refusals (conflicts,
// timeouts, a server that is down) are left to the workqueue's own quick retries.
package refusal

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"reflect"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/api/duck"
)

// Defaults for New's back-off.
const (
	DefaultInitial = 2 * time.Second
	DefaultMax     = 5 * time.Minute
)

// Error is a write the API server refused, now or within the back-off.
type Error struct {
	// Verb is "create" or "update"; Kind and Name say what was refused.
	Verb, Kind, Name string
	// Err is the API server's answer.
	Err error
	// RetryAfter is when the same write will be tried again.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	return fmt.Sprintf("failed to %s %s %q: %v", e.Verb, e.Kind, e.Name, e.Message())
}

// Message is the API server's own message for the refusal.
func (e *Error) Message() string {
	if s, ok := e.Err.(apierrors.APIStatus); ok && s.Status().Message != "" {
		return s.Status().Message
	}
	return e.Err.Error()
}

func (e *Error) Unwrap() error { return e.Err }

// Reason is Knative's Event reason for the refused write: CreationFailed or UpdateFailed.
func (e *Error) Reason() string {
	if e.Verb == "create" {
		return duck.ReasonCreationFailed
	}
	return duck.ReasonUpdateFailed
}

// As returns the *Error in err's chain, if any.
func As(err error) (*Error, bool) {
	var r *Error
	ok := errors.As(err, &r)
	return r, ok
}

// IsRefusal reports whether err is the API server refusing a write for a reason that
// asking again at once would not change. A namespace being deleted is not one: the
// owner goes with it (package terminating ends such reconciles quietly).
func IsRefusal(err error) bool {
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		return false
	}
	return apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) ||
		apierrors.IsRequestEntityTooLargeError(err) || apierrors.IsMethodNotSupported(err) ||
		apierrors.IsUnsupportedMediaType(err) || apierrors.IsNotAcceptable(err)
}

// Writes is one reconciler's memory of refused writes. It is safe for concurrent use.
// (client-go's flowcontrol.Backoff keeps the same doubling, but does not say when an
// entry's wait ends, which the owner's requeue needs.)
type Writes struct {
	initial, max time.Duration
	now          func() time.Time
	// noRetry: refusals come back without a retry (NeverRetry).
	noRetry bool

	mu      sync.Mutex
	refused map[string]*entry
}

type entry struct {
	err   *Error
	delay time.Duration
	until time.Time
}

// New returns Writes whose back-off starts at initial and doubles up to max.
func New(initial, max time.Duration) *Writes {
	return &Writes{initial: initial, max: max, now: time.Now, refused: make(map[string]*entry)}
}

// WithClock makes the back-off tell time by c (the convergence simulation's clock).
func (w *Writes) WithClock(c clock.PassiveClock) *Writes {
	w.now = c.Now
	return w
}

// Do runs write unless the same write (id says what is written and with what content)
// was refused and its back-off has not run out, in which case it returns that refusal
// again. A refusal comes back as an *Error carrying when to try again; other errors
// come back as they are.
func (w *Writes) Do(id, verb, kind, name string, write func() error) error {
	now := w.now()
	w.mu.Lock()
	if e, ok := w.refused[id]; ok && now.Before(e.until) {
		again := *e.err
		again.RetryAfter = e.until.Sub(now)
		w.mu.Unlock()
		return &again
	}
	w.mu.Unlock()

	err := write()
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil || !IsRefusal(err) {
		delete(w.refused, id)
		return err
	}
	e, ok := w.refused[id]
	switch {
	case !ok:
		w.sweep(now)
		e = &entry{delay: w.initial}
		w.refused[id] = e
	case e.delay < w.max:
		e.delay = min(2*e.delay, w.max)
	}
	e.until = now.Add(e.delay)
	e.err = &Error{Verb: verb, Kind: kind, Name: name, Err: err, RetryAfter: e.delay}
	if w.noRetry {
		e.err.RetryAfter = 0
	}
	return e.err
}

// NeverRetry makes refusals come back without a time to try again, so that nothing
// wakes the owner when the back-off ends: the stall this package exists to prevent.
// The convergence simulation's sensitivity test only.
func (w *Writes) NeverRetry() *Writes {
	w.noRetry = true
	return w
}

// sweep forgets refusals nobody retried for twice the longest back-off: their owner
// was deleted or now writes something else. The caller holds w.mu.
func (w *Writes) sweep(now time.Time) {
	for id, e := range w.refused {
		if now.Sub(e.until) > 2*w.max {
			delete(w.refused, id)
		}
	}
}

// Create runs create for obj through Do, keyed by obj's content.
func (w *Writes) Create(obj client.Object, create func() error) error {
	return w.Do(id("create", obj), "create", kind(obj), obj.GetName(), create)
}

// Update runs update for obj through Do, keyed by obj's content.
func (w *Writes) Update(obj client.Object, update func() error) error {
	return w.Do(id("update", obj), "update", kind(obj), obj.GetName(), update)
}

// id names a write by its verb, the object's type and key, and a hash of what is
// written, so that a changed object is a new write.
func id(verb string, obj client.Object) string {
	h := fnv.New64a()
	if b, err := json.Marshal(obj); err == nil {
		h.Write(b)
	}
	return fmt.Sprintf("%s %s %s/%s %x", verb, kind(obj), obj.GetNamespace(), obj.GetName(), h.Sum64())
}

func kind(obj client.Object) string {
	if k := obj.GetObjectKind().GroupVersionKind().Kind; k != "" {
		return k
	}
	return reflect.TypeOf(obj).Elem().Name()
}

// Result adds the refusal's retry to a reconcile's result: the owner is reconciled
// again when the back-off ends, whatever else happens meanwhile.
func Result(res reconcile.Result, err error, refused *Error) (reconcile.Result, error) {
	if err == nil && (res.RequeueAfter == 0 || refused.RetryAfter < res.RequeueAfter) {
		res.RequeueAfter = refused.RetryAfter
	}
	return res, err
}
