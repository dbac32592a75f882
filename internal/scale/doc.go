// Package scale is the engine of `ferry scale`: it creates N Knative Services in one
// namespace (or round-robin over several) at a bounded concurrency, follows them
// with a watch until each is Ready (and, when a gateway is given, until the gateway
// first routes a request to it), and measures what that cost the API server: writes
// by resource and verb, and, with a floor run, how long the API server itself needs
// for the same number of plain writes.
//
// The package does not start Ferry: the caller runs the control plane (in-process or
// not) and hands Run a rest.Config and a namespace. The pure parts — names (of the
// Services and of the namespaces, and which Service goes where), percentiles, the
// metrics parser and the reports — are separate functions with table tests. A stuck
// Service is explained by internal/explain, which `ferry explain` shares.
package scale
