// Package convergence is a deterministic simulation of Ferry's whole chain — Service,
// Configuration, Revision, PodAutoscaler, Route and the KIngress they program — that
// perturbs every controller's view of the cluster and checks that the chain still
// converges. It exists because of knative/serving#2954 (a Route stuck
// Unknown/RevisionMissing after an update fell between a read and a watch): the
// tracker is proven alone by its own tests; this proves the chain.
//
// A run is a function of its seed. It uses Ferry's real reconcilers, status writers,
// tracker and wiring (reconciler.Build and each reconciler's watches.Controller, the
// same handlers and predicates controller-runtime runs), the gateway's own KIngress
// reconciler in a gateway process, over a simulated API server
// (store: resourceVersions, conflicts, generation, status apart from spec, owner
// garbage collection) and simulated informers whose delivery, handler timing and
// relists the seed picks. Reconciles run one step at a time on one goroutine; while one
// waits on a read or write, the seed may let events through or run another worker's
// reconcile (interleave). The simulated clock moves only by small steps and to the
// next timer when nothing else can happen.
//
// The perturbations follow Sieve (OSDI '22), one Scenario family each (and a fourth,
// admission refusing writes; a fifth, three gateway replicas that crash and come
// back, each keeping its Lease on the simulated clock; and a sixth, traffic: requests
// held for Revisions at zero, the autoscaler ticking on the leader): intermediate
// states (a crash before, after or in the middle of any write), stale states (a new
// leader whose caches lag the store, and the old leader's writes landing late), and
// unobserved states (relists that skip intermediate versions, writes that time out
// and land later or never). The checker holds the safety properties at every commit
// and, once nothing is left to happen, the liveness ones — including a fresh leader,
// started from the store, having nothing to write: any write it makes is a lost
// update. See docs/convergence.md.
package convergence
