// Package routing compiles KIngresses into the gateway's routing table: an immutable
// Table, published through an atomic pointer, that the listeners read once per
// request without a lock.
//
// It exists apart from the request path because programming is the control plane's
// pace (once per KIngress generation) and the request path's is every request: the
// KIngress reconciler compiles each ingress of Ferry's class, decides which ingress
// serves each host (the oldest claimant wins), publishes the next Table, and only then
// writes the ingress's status. A compiled Split points at a backends.Service, whose
// endpoints change without a recompile.
//
// The request path uses the Table, and a Route's Pick and Follow (a Host rewrite
// routed again, as a DomainMapping needs); CanonicalHost is the key of both.
package routing
