// Package requestlog writes the gateway's request log as Knative writes its own: one
// line per request, rendered by config-observability's logging.request-log-template
// with the same fields (Request, Response, Revision, TraceID), so that a template and
// a log pipeline made for Knative read Ferry's lines unchanged.
//
// In Knative the queue-proxy beside each pod writes these lines and knows the pod;
// Ferry has no queue-proxy, and its gateway picks the pod itself, so the gateway
// writes them, with PodName and PodIP filled in (Knative's activator leaves them
// empty). A request that matches no route is logged too, with an empty Revision.
//
// The Logger takes a new configuration live (Apply). While request logs are off, a
// request costs one atomic load: no wrapper, no allocation.
package requestlog
