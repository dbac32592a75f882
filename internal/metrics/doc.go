// Package metrics holds the Prometheus series of Ferry's controller that
// controller-runtime does not provide: how long objects take to become Ready,
// and the size of the Route tracker. They are registered in controller-runtime's
// registry (sigs.k8s.io/controller-runtime/pkg/metrics.Registry), which the
// manager serves on its metrics address next to controller-runtime's own
// reconcile and workqueue series. docs/observability.md lists them all.
package metrics
