package reconciler

import (
	"context"
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/telemetry"
	"github.com/ferry-serving/ferry/internal/telemetry/otlptest"
	"github.com/ferry-serving/ferry/internal/watches"
)

func TestEachReconcileIsASpanWithItsKey(t *testing.T) {
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50") // ms
	rcv := otlptest.Start(t)
	tel := telemetry.New(telemetry.Options{})
	t.Cleanup(tel.Shutdown)
	failed := errors.New("conflict")
	c := traced(tel, "Route", watches.Controller{Name: "route", Reconciler: reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
		return reconcile.Result{}, failed
	})})
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns", Name: "r"}}
	// Off: no span, the reconcile as it is.
	if _, err := c.Reconciler.Reconcile(context.Background(), req); err != failed {
		t.Fatalf("reconcile: %v", err)
	}
	tel.Apply(&config.Observability{Tracing: config.Tracing{Protocol: config.ProtocolGRPC, Endpoint: rcv.Endpoint(), SamplingRate: 1}})
	if _, err := c.Reconciler.Reconcile(context.Background(), req); err != failed {
		t.Fatalf("reconcile: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rcv.Wait(ctx, func(r *otlptest.Receiver) bool { return len(r.Spans()) > 0 })
	spans := rcv.Spans()
	if len(spans) != 1 {
		t.Fatalf("received %+v, want one span", spans)
	}
	s := spans[0]
	if s.Name != "reconcile Route" || s.Attributes["ferry.key"] != "ns/r" || s.Attributes["k8s.object.kind"] != "Route" || s.StatusCode != 2 {
		t.Errorf("span %+v", s)
	}
}
