package reconciler

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/internal/telemetry"
	"github.com/ferry-serving/ferry/internal/watches"
)

// traced has every reconcile of c in a span "reconcile <kind>" with the object's key,
// while config-observability turns tracing on: a slow reconcile shows in the same
// backend as a slow request. Each reconcile is a trace of its own, sampled at
// tracing-sampling-rate. Off, the cost is one atomic load per reconcile.
func traced(tel *telemetry.Telemetry, kind string, c watches.Controller) watches.Controller {
	if tel == nil {
		return c
	}
	r, name := c.Reconciler, "reconcile "+kind
	c.Reconciler = reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
		tr := tel.Tracer()
		if tr == nil {
			return r.Reconcile(ctx, req)
		}
		ctx, span := tr.Start(ctx, name, trace.WithAttributes(
			attribute.String("ferry.controller", c.Name),
			attribute.String("k8s.object.kind", kind),
			attribute.String("k8s.namespace.name", req.Namespace),
			attribute.String("k8s.object.name", req.Name),
			attribute.String("ferry.key", req.String()),
		))
		defer span.End()
		res, err := r.Reconcile(ctx, req)
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
		if res.RequeueAfter > 0 {
			span.SetAttributes(attribute.String("ferry.requeue_after", res.RequeueAfter.String()))
		}
		return res, err
	})
	return c
}
