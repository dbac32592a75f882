// Package explain says why a Knative object is not Ready (or not routed), along the
// chain of objects its readiness depends on:
//
//	Service → Configuration → Revision → Deployment → ReplicaSet → Pods
//	        → Route → KIngress → the gateway
//
// It is its own package because two commands need it: `ferry scale` explains every
// Service that missed its deadline, and `ferry explain` (also `kubectl ferry
// explain`) explains one object on demand. Knative itself has nothing like it: a
// user reads six objects' conditions and two kinds of Events by hand.
//
// The package is split so that almost all of it is pure:
//
//   - Chain is a snapshot of the objects (and their Events, and a gateway's answer);
//   - Explain turns a Chain into an Explanation: the deepest object that holds the
//     rest up (the culprit), a kind to group culprits by, and the not-ready part of
//     the chain, one line per object;
//   - Build turns a Chain into a Report: every step, done or not, with Warning
//     Events, the culprit and what to do about it; Report.Write prints it on one
//     screen.
//
// Both come from one walk of the chain (walk.go), so that what `ferry scale` blames
// and what `ferry explain` shows cannot drift apart.
//
// Those are table-tested. Read is the small part that fills a Chain from the API
// server, or from a Snapshot of lists for many chains at once, and Probe sends one
// request to a gateway.
package explain
