// Package gateway is Ferry's data plane: it serves KIngresses, so that an Ingress that
// says Ready routes traffic.
//
// Two reconcilers program it. The KIngress reconciler compiles each ingress of Ferry's
// class (v1alpha1.IngressClass, or no class annotation) once per generation, decides which
// ingress serves each host (the oldest claimant wins), publishes an immutable routing
// table through an atomic pointer, and only then writes NetworkConfigured,
// LoadBalancerReady and observedGeneration; with Options.LeaseNamespace the replicas
// count each other by a Lease each (replicas.go), which records what each has
// programmed, and LoadBalancerReady waits for every live replica. The endpoints
// reconciler swaps the ready endpoints of each backend a split names in place,
// without touching the table: a Revision's ready pods (there is no Kubernetes Service per Revision; the gateway
// follows the pods by their serving.knative.dev/revision label), or any other
// Service's EndpointSlices.
//
// Two listeners serve the table: the external one serves ExternalIP rules, the local
// one serves every rule. With Options.HTTPSAddr a third serves the ExternalIP rules of
// the hosts a KIngress's spec.tls gives a certificate, picked by SNI from the Secrets
// it names (tls.go), and httpOption Redirected makes the external listener answer
// those hosts with 301 to https. A request is routed by Host and longest path prefix (and
// header matches), split by percent, and proxied to the ready endpoint with the
// fewest requests in flight (ties round-robin), over HTTP/2 cleartext when the
// Revision's port is named h2c, else HTTP/1.1. Knative's timeoutSeconds,
// responseStartTimeoutSeconds and idleTimeoutSeconds bound each request from its
// arrival, enforced by one timer per request. The gateway answers for
// kwok-simulated pods itself: 200, a body naming the revision and the pod, and
// X-Ferry-Simulated: true, after the Revision's serving.ferry.dev/simulated-service-time
// (or ?sleep=, as Knative's autoscale test image) and with at most its
// serving.ferry.dev/simulated-capacity requests served at once per pod, so that load
// on ferry up scales as on real pods (simulated.go).
//
// The gateway is also Knative's activator and queue-proxy breaker, in one place:
//
//   - A request for a revision without a ready endpoint is held, not refused, until
//     the endpoints reconciler publishes one (the swap wakes it; nothing polls), for
//     at most the revision's timeout (504) and with at most Options.MaxQueued held
//     per revision (503 with Retry-After). The first one held pokes Options.Stats.
//     Held answers carry X-Ferry-Activation-Wait.
//   - A revision's containerConcurrency (from its spec; for another Service, its
//     serving.ferry.dev/container-concurrency annotation) is a hard limit per pod,
//     for all replicas together: each replica takes its share of every pod's slots
//     and a request takes a free slot of the replica's on the least loaded pod, or
//     waits for one.
//   - Every request, held ones included, is counted per revision with atomic adds
//     only; with Options.Stats set, a Runnable sends a stats.Report every
//     ReportInterval with the average concurrency and the arrivals of each revision
//     that had traffic.
//
// # Wiring
//
// The manager's scheme needs client-go's kinds (Pods, Services, EndpointSlices,
// Nodes), networking/v1alpha1 and serving/v1; its cache must be able to list and
// watch KIngresses, Revisions, Services, EndpointSlices and Node metadata
// cluster-wide, and the pods of Revisions (a label selector on
// serving.knative.dev/revision and a transform that keeps the status and
// spec.nodeName are enough), and the client must update KIngress status. With
// Options.LeaseNamespace, the cache must list and watch the Leases labelled
// ReplicaLabel there, and the client create, patch and delete them.
//
//	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme})
//	...
//	gw := gateway.New(gateway.Options{
//		ExternalAddr:  "127.0.0.1:8080",
//		LocalAddr:     "127.0.0.1:8081",
//		SimulatedPods: true,       // ferry up: kwok runs every pod
//		Stats:         autoscaler, // a stats.Sink; or a *stats.Client, added to mgr too
//	})
//	if err := gw.SetupWithManager(mgr); err != nil { // binds the listeners, adds the reporter
//		return err
//	}
//	log.Printf("gateway on %s (external), %s (cluster-local)", gw.ExternalAddr(), gw.LocalAddr())
//	return mgr.Start(ctx) // serves until ctx ends, then drains in-flight requests
//
// Metrics go to Options.Registry, by default controller-runtime's registry that the
// manager's metrics endpoint serves. docs/gateway.md has the design.
package gateway
