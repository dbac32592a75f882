package manager

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/ferry-serving/ferry/internal/autoscaler/stats"
)

// statsServer serves the gateways' load reports to the autoscaler, on every replica:
// a standby keeps the same history as the leader, so a failover loses none of it.
type statsServer struct {
	ln      net.Listener
	handler http.Handler
}

func newStatsServer(addr string, sink stats.Sink) (*statsServer, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("listening for the gateways' reports on %s: %w", addr, err)
	}
	return &statsServer{ln: ln, handler: stats.Handler(sink)}, nil
}

// Start serves until ctx ends.
func (s *statsServer) Start(ctx context.Context) error {
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// NeedLeaderElection implements manager.LeaderElectionRunnable: every replica serves.
func (s *statsServer) NeedLeaderElection() bool { return false }
