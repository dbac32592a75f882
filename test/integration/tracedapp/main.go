// Command tracedapp is the app of the tracing integration test (TestTracing): an HTTP
// server instrumented as a user's app would be, with the OpenTelemetry SDK and
// otelhttp, exporting its spans over OTLP/gRPC to OTEL_EXPORTER_OTLP_ENDPOINT. Each
// request is a server span, a child of the span in the request's traceparent, which
// Ferry's gateway sets to its upstream span. It listens on $PORT (default 8080).
package main

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	// The exporter reads OTEL_EXPORTER_OTLP_ENDPOINT; the provider OTEL_SERVICE_NAME and
	// OTEL_BSP_SCHEDULE_DELAY; the default sampler follows the caller's sampled flag.
	exporter, err := otlptracegrpc.New(ctx)
	if err != nil {
		log.Fatal(err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter))
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))

	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "traced: revision %s\n", os.Getenv("K_REVISION"))
	})
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	srv := &http.Server{Addr: ":" + port, Handler: otelhttp.NewHandler(mux, "tracedapp"), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Shutdown(context.Background())
	}()
	log.Printf("tracedapp: listening on :%s", port)
	if err := srv.ListenAndServe(); err != http.ErrServerClosed {
		log.Fatal(err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tp.Shutdown(sctx)
}
