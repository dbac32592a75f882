package reconcilertest

import (
	"time"

	"github.com/ferry-serving/ferry/internal/reconciler/kit/base"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/created"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/statuswriter"
)

// Base is the base.Base of a reconciler under test: the Env's client, children and
// refusals of its own, and a status writer that holds nothing back and records its
// Events in the Env. Config (nil: Knative's defaults) and Clock (nil: the real clock)
// are the test's to set.
func (e *Env) Base() base.Base {
	return base.Base{Client: e.Client, Children: created.New(e.Client),
		Refused: refusal.New(refusal.DefaultInitial, refusal.DefaultMax), Status: statuswriter.New(e.Client, e.Events, 0)}
}

// Clock tells the time now returns: a test's clock that it moves by changing what now
// reads.
type Clock func() time.Time

// Now is the clock's time.
func (c Clock) Now() time.Time { return c() }

// Since is the time since t by the clock.
func (c Clock) Since(t time.Time) time.Duration { return c().Sub(t) }
