package scale

// The warm-up Service: the run is to time a Ferry that is up with synced caches, not
// its start.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/explain"
	"k8s.io/apimachinery/pkg/labels"
)

// warmup creates one Service and waits until it is Ready and, with a gateway,
// routed: Ferry is up and its caches are synced.
func (r *runner) warmup(ctx context.Context) error {
	name := "scale-warmup-" + RandomSuffix(r.o.Rand)
	runLabel := r.o.RunID + "-warmup"
	ctx, cancel := context.WithTimeout(ctx, r.o.TimeoutPerService)
	defer cancel()
	ready := make(chan *v1.Service, 1)
	var once sync.Once
	first := r.namespaces[0]
	if _, err := r.watchServices(ctx, first, labels.Set{RunLabel: runLabel}, func(svc *v1.Service) {
		if svc.IsReady() {
			once.Do(func() { ready <- svc })
		}
	}); err != nil {
		return err
	}
	svc := r.service(first, name, runLabel)
	if err := createWithRetry(ctx, r.c, svc); err != nil {
		return fmt.Errorf("warm-up: creating Service %s: %w", name, err)
	}
	start := time.Now()
	select {
	case got := <-ready:
		if r.o.GatewayURL == "" {
			return nil
		}
		routed, _, answer := r.probe(ctx, hostOf(got.Status.URL), time.Now().Add(r.o.TimeoutPerService))
		if routed.IsZero() {
			return fmt.Errorf("warm-up: Service %s is Ready but the gateway at %s never routed to it; last answer: %s", name, r.o.GatewayURL, answer)
		}
		return nil
	case <-ctx.Done():
		if errors.Is(context.Cause(ctx), context.Canceled) {
			return ctx.Err()
		}
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer rcancel()
		snap, _ := r.readRun(rctx, runLabel, first)
		chain, _ := explain.Read(rctx, snap, explain.Target{Kind: explain.KindService, Namespace: first, Name: name})
		return fmt.Errorf("warm-up: Service %s was not Ready after %s; is Ferry running?\n%s", name, fmtDur(time.Since(start)), explain.Explain(chain))
	}
}
