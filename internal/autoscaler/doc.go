// Package autoscaler runs Ferry's KPA: it keeps each Revision's load, as the gateways
// report it (package stats), and decides how many pods the Revision wants (package
// decider, pure functions). The PodAutoscaler reconciler applies the decisions.
//
// Split as Knative splits it, for the same reason: deciding needs history (the stable
// and panic windows, panic mode) that lives between reconciles, while applying it
// (bounds, scale to zero, the scale write, the status) is level-based and belongs in a
// reconciler. The Autoscaler owns the history; the reconciler reads the latest
// Decision and registers each PodAutoscaler's Settings with Watch.
//
// Decisions are made every Tick (2 s, Knative's) for Revisions that have load or
// pods to shed, and at once when the gateway pokes a Revision that has none: the first
// request to a Revision at zero does not wait for a tick. A Revision at zero with no
// load costs nothing per tick, so a thousand idle Revisions keep the controller idle.
// Only a changed decision wakes the reconciler.
//
// Every controller replica takes the gateways' reports (Report and Poke need no
// leadership), so a new leader decides from the same history; only the ticking, whose
// results wake the leader's reconciler, runs on the leader.
package autoscaler
