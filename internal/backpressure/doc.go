// Package backpressure holds Service creates at admission while too many Services are
// already on their way to Ready.
//
// Why: the API server admits creates far faster than the control plane behind it can
// bring Services to Ready (on two cores, ~100 creates/s against ~15 Services Ready/s).
// Without a limit, a burst of thousands queues up inside the cluster, and a Service
// created late in the burst waits for every Service before it: the seed's symptom,
// "timed out waiting for Ready", by slowness. Holding the create instead moves that wait
// to the client's request, where it is bounded and visible (a warning on the response),
// and keeps the work in flight small enough that every admitted Service is Ready within
// minutes of its create, at any burst size.
//
// The API server's Priority and Fairness cannot do this: it limits requests in flight,
// not objects in progress, which only the controller knows.
//
// A Backlog counts the Services in progress from an informer's events (every replica
// has one: admission is not leader-elected). Hold blocks a create while the count is at
// the limit, up to a maximum wait, after which the create is admitted anyway: nothing
// the user sent is refused or lost, and a stuck Service can slow creates, never stop
// them. Every waiter wakes when a Service finishes, so the count may overshoot the
// limit by the number of creates in flight.
package backpressure
