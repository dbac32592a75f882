// Package backends is the gateway's view of what its routes point at: the ready
// endpoints of each Service or Revision a KIngress split names, the in-flight count on
// each pod, and the other gateway replicas, with whom each pod's containerConcurrency
// is shared.
//
// It exists apart from routing and serving because endpoints change far more often
// than routes, and must change without touching the routing table: a compiled split
// holds a *Service from the Registry, and the endpoints reconciler swaps that
// Service's Endpoints snapshot in place, atomically. Knative's activator keeps its
// revision backends (pkg/activator/net) apart from its handler the same way.
//
//   - Registry, Service, Endpoints: one entry per Service name, shared by every split
//     that names it, each holding an immutable snapshot of its ready endpoints.
//   - TargetSet, Target, PodSlot: the endpoints of one port, and the per-pod counter
//     that balancing and containerConcurrency read (targets.go).
//   - ReplicaSet: the gateway replicas, counted by their Leases (replicas.go); what
//     each has programmed, so that a KIngress is Ready only once all serve it
//     (record.go); and this replica's share of each pod's slots (share.go).
//   - RevisionLoad and Reporter: the demand accounting the autoscaler scales on
//     (load.go, reporter.go).
//
// The request path reads all of it with atomic loads only; nothing here writes HTTP.
package backends
