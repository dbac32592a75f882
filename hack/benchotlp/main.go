// Command benchotlp is the OTLP/gRPC receiver of hack/bench-dataplane.sh's tracing
// rows: the OpenTelemetry project's TraceService, served with grpc-go, that counts the
// spans it gets and keeps none, so that the gateway's exporter has a real endpoint to
// send to and the receiver costs little beside it. On SIGTERM it prints the count.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"

	tracev1 "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
)

type receiver struct {
	tracev1.UnimplementedTraceServiceServer
	spans atomic.Int64
}

func (r *receiver) Export(_ context.Context, req *tracev1.ExportTraceServiceRequest) (*tracev1.ExportTraceServiceResponse, error) {
	for _, rs := range req.GetResourceSpans() {
		for _, ss := range rs.GetScopeSpans() {
			r.spans.Add(int64(len(ss.GetSpans())))
		}
	}
	return &tracev1.ExportTraceServiceResponse{}, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:19084", "address to listen on")
	flag.Parse()
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	r := &receiver{}
	s := grpc.NewServer()
	tracev1.RegisterTraceServiceServer(s, r)
	go func() {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, os.Interrupt)
		<-stop
		s.Stop()
	}()
	if err := s.Serve(ln); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("benchotlp: %d spans received\n", r.spans.Load())
}
