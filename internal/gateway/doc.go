// Package gateway is Ferry's data plane: it serves KIngresses, so that an Ingress that
// says Ready routes traffic. It is the wiring of three packages, each one concern:
//
//   - routing compiles each KIngress of Ferry's class into an immutable routing
//     table, and writes its status once the table that serves it is published;
//   - backends follows what the routes point at: the ready endpoints of each Service
//     or Revision, the requests in flight on each pod, the other gateway replicas
//     (by their Leases) and this replica's share of each pod's containerConcurrency;
//   - proxy serves requests from the table: it holds them while a revision has no
//     pod free (Knative's activator), enforces the revision's timeouts, and forwards
//     them, or answers for kwok's simulated pods; and it serves spec.tls over HTTPS.
//
// A fourth, http1, serves the plain listeners' HTTP/1.1 with a lean connection loop
// of its own and hands every connection it does not take (h2c, bodies, upgrades) to
// net/http's server; it serves any http.Handler and imports none of the others but
// requestctx, the context of one request that both use (one allocation where the
// standard library's stacked contexts made fifteen).
//
// Imports run one way only, as docs/gateway.md draws them: proxy imports routing and
// backends, routing imports backends (a compiled split holds its *backends.Service),
// backends imports neither, and none imports gateway. Gateway assembles them: New
// makes the backends registry, the programmer and the request path; SetupWithManager
// registers their reconcilers and binds the external, local and (with
// Options.HTTPSAddr) HTTPS listeners. docs/gateway.md has the design.
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
// manager's metrics endpoint serves.
package gateway
