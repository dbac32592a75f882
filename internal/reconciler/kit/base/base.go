// Package base is what every Ferry reconciler holds and does the same way: the client,
// the children's reader and refusals, the status writer, the live configuration, the
// test hook after the read, the clock and whether to run serially (Base, embedded in
// each Reconciler); and the opening of a reconcile's status (OpenStatus).
// reconciler.Build fills a Base for each reconciler from one client, one clock and one
// set of options.
package base

import (
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/child"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/created"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/statuswriter"
)

// Base is the part of a reconciler that every one has; a reconciler that owns no
// children or writes no status leaves those fields nil.
type Base struct {
	// Client reads from the manager's cache and writes to the API server.
	Client client.Client
	// Children reads and creates the objects the reconciler owns, so that one it has
	// just created counts as existing before the cache shows it.
	Children *created.Children
	// Refused remembers the children the API server refused, to report and back off.
	Refused *refusal.Writes
	// Status writes the status and records Warning Events for new failures.
	Status *statuswriter.Writer
	// Config returns the live configuration (config.Store.Load, with the command's
	// overrides); each reconciler says which parts it reads.
	Config func() *config.Config
	// AfterRead, if set, runs between reading the object and acting on it (tests use
	// it to widen races).
	AfterRead func()
	// Clock tells time (nil: the real clock); the convergence simulation passes its
	// own, so that what a reconcile decides by the time is a function of the seed.
	Clock clock.PassiveClock
	// Serial, if set, ensures a reconciler's independent children one after the other
	// (child.Together), so that the convergence simulation stays a function of its seed.
	Serial bool
}

// Now is the reconciler's time.
func (b *Base) Now() time.Time {
	if b.Clock == nil {
		return time.Now()
	}
	return b.Clock.Now()
}

// Read ends a reconcile's read of its object: AfterRead runs here.
func (b *Base) Read() {
	if b.AfterRead != nil {
		b.AfterRead()
	}
}

// Writer writes the reconciler's children (child.Ensure).
func (b *Base) Writer() child.Writer {
	return child.Writer{Client: b.Client, Children: b.Children, Refused: b.Refused}
}

// Status is a kind's status as OpenStatus opens it: every Knative status embeds a
// duck.Status and has a generated DeepCopy.
type Status[S any] interface {
	DeepCopy() S
	Duck() *duck.Status
}

// OpenStatus is how every reconcile starts its status: a copy of the object's
// (have), which the status writer compares with the original, that has observed
// generation and has every condition of set (Unknown if it had none), with the
// manager that marks them.
func OpenStatus[S Status[S]](have S, generation int64, set duck.ConditionSet) (S, duck.ConditionManager) {
	status := have.DeepCopy()
	status.Duck().ObservedGeneration = generation
	m := set.Manage(status.Duck())
	m.InitializeConditions()
	return status, m
}
