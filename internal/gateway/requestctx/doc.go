// Package requestctx is the context of one request in the gateway: cancelled by its
// owner or with its parent, with what runs on its cancellation kept in a short list.
//
// Why not context.WithCancel: a proxied request has three cancellations stacked, the
// connection's (the client left), the revision's timer and the exchange with the pod
// (context.AfterFunc, which poisons the pod connection's deadline). With the standard
// library each is a cancelCtx, and registering one on another makes the parent's
// Done channel and its map of children; at c=64 that was 15 of the 29 allocations of
// a proxied request and 10% of the gateway's CPU (docs/gateway.md, "One context per
// request"). A Context registers on a parent Context by pointer, keeps AfterFunc's
// functions in a list with room for two inside it, and makes its Done channel only
// when someone asks for it. It can live inside another struct (Init), so the proxy's
// routed request is its own context.
//
// A Context over a context that only adds values to a Context (a span's, say)
// registers on the Context beneath by pointer too, and AfterFunc here does the same
// where context.AfterFunc would start a goroutine to wait on the value context.
//
// The standard library works over it unchanged: context.AfterFunc, WithCancel and
// WithTimeout use its AfterFunc method (their afterFuncer), so they start no
// goroutine either; context.Cause reports its Err.
package requestctx
