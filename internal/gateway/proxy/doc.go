// Package proxy serves requests from the routing table: each listener's handler
// routes a request, holds it while its revision has no pod free (the activator),
// enforces the revision's timeouts, and forwards it to the pod it was given, or
// answers for a kwok-simulated one. The HTTPS listener's certificates come from the
// KIngresses' spec.tls (tls.go).
//
// It exists apart from routing and backends, as Knative's activator keeps its handler
// apart from its net package: this is the only package that speaks HTTP to clients
// and pods, and it owns the request's life from arrival to the last byte. It reads a
// routing.Table and the backends.Service a split names, takes a backends.Target's
// slot, and gives it back.
package proxy
