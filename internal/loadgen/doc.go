// Package loadgen is `ferry load`: a small closed-loop load generator, in the manner of
// hey, for trying Ferry's autoscaling on ferry up. C workers each send one request
// after another to a URL (with a Host header, for the gateway's routing) until the
// duration is over or the request budget is spent, and the result is the rate, the
// status codes and the latency percentiles.
//
// It is bounded by design: only loopback targets (it is for a local gateway, not for
// load-testing other people's servers), at most MaxConcurrency workers, at most
// MaxDuration, at most MaxRequests requests, each within a per-request timeout.
package loadgen
