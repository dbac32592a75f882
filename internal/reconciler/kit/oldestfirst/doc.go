// Package oldestfirst orders a controller's work by the age of the objects it is
// about: the requests an event handler adds to controller-runtime's priority queue get
// a priority that is higher the earlier the object they reconcile was created — its
// own age, which the controller's own watch records, whatever event woke it (a child
// is younger than its owner).
//
// Why: each of Ferry's controllers has one queue, and a Service goes through several
// of them, several times (the Route is woken by its Configuration, its Revision, its
// KIngress; the Service by its Configuration and Route). In first-in-first-out queues
// every later step of a Service waits behind the first steps of every Service created
// after it, so during a burst nearly every Service becomes Ready at the end of the
// burst, whatever its place in it (the convoy `ferry scale` measures as p50/total and
// rank correlation). Oldest first finishes what was started: a user who creates one
// Service during a burst waits for the Services created before it, not for the whole
// burst. Nothing is starved for long: a new object's priority is only below those of
// objects created in earlier seconds, and every burst ends.
//
// Two lanes. Oldest first alone puts every change to an old object ahead of a new
// one: while 2,000 idle Revisions scale to zero, a new Service's Revision waited
// seconds behind their status echoes. So work on a settled Knative object (its status
// speaks for its generation, Ready True or False) goes in a lower lane, below every
// object in progress, oldest first within each lane. A settled object woken by a
// Knative object in progress (a Route by its Configuration's new generation) is part of
// a change a user waits for and keeps the upper lane. The Autoscaler's decisions to
// scale down go below both (Unchanged): no request waits for them, while its scale-ups
// (a cold start) come first.
//
// Events from an informer's initial list and resyncs stay below every other event, as
// controller-runtime's own handlers keep them, so a restarted controller serves new
// changes before it re-reads what exists.
package oldestfirst
