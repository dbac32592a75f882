package main

import (
	"context"
	"fmt"
	"io"
	"runtime/pprof"
	"sync"

	"golang.org/x/sync/errgroup"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/admission"
	"github.com/ferry-serving/ferry/internal/gateway"
	"github.com/ferry-serving/ferry/internal/manager"
	"github.com/ferry-serving/ferry/internal/reconciler"
	"github.com/ferry-serving/ferry/internal/scale"
)

// inProcessOptions are what ferry up and ferry scale choose of the Ferry they run
// in-process; the rest is the same for both.
type inProcessOptions struct {
	log             io.Writer // Ferry's log
	reconciler      reconciler.Options
	inProgressLimit int
	// The gateway's listeners; gatewayLocalAddrForPods is the cluster-local one's
	// second address, where the program node's pods reach it ("": none).
	gatewayAddr, gatewayLocalAddr, gatewayHTTPSAddr, gatewayLocalAddrForPods string
	// localCADir, if set, runs the local CA with its CA there, and makes its class
	// the default of Routes' Certificates.
	localCADir string
	pprofAddr  string
	// leaseNamespace is where the gateway keeps its replica Lease ("": none), so that
	// a `ferry gateway` started beside it shares the work as a second replica.
	leaseNamespace string
	// programs says a node runs some pods as processes: the gateway forwards to
	// those and answers only for kwok's.
	programs bool
	// reconcilersElsewhere leaves the reconcilers to `ferry controller` processes
	// (ferry soak kills them), whose autoscaler takes the gateway's load reports at
	// autoscalerAddr.
	reconcilersElsewhere bool
	autoscalerAddr       string
	// writes, when set, counts Ferry's own writes: the API server's metrics cannot
	// tell them apart from the controller manager's, the scheduler's and kwok's.
	writes *scale.WriteCounter
}

// inProcessFerry is Ferry running in this process against the local cluster.
type inProcessFerry struct {
	*manager.Ferry
	ctx    context.Context // ends when Ferry stops
	cancel context.CancelFunc
	g      *errgroup.Group
	stop   sync.Once
}

// startFerry runs Ferry's reconcilers, admission webhooks and gateway against the
// local cluster, as ferry up and ferry scale both do, and returns once admission is
// ready: the first creates must already be validated, defaulted and held back.
func startFerry(ctx context.Context, cluster localCluster, o inProcessOptions) (*inProcessFerry, error) {
	ctrl.SetLogger(zap.New(zap.WriteTo(o.log)))
	cfg := cluster.ControllerRESTConfig()
	if o.writes != nil {
		o.writes.Wrap(cfg)
	}
	if o.localCADir != "" && o.reconciler.CertificateClass == "" {
		o.reconciler.CertificateClass = netv1alpha1.LocalCACertificateClass
	}
	ferry, err := manager.New(cfg, manager.Options{
		Reconcilers:       !o.reconcilersElsewhere,
		ReconcilerOptions: o.reconciler,
		AutoscalerAddress: o.autoscalerAddr,
		LocalCADir:        o.localCADir,
		// Knative's validation and defaulting, by URL on 127.0.0.1, and back-pressure.
		Admission: &admission.Options{InProgressLimit: o.inProgressLimit, ControllerUser: cluster.ControllerUser()},
		// kwok simulates every pod but the program node's: the gateway answers for
		// them instead of dialing.
		Gateway: &gateway.Options{ExternalAddr: o.gatewayAddr, LocalAddr: o.gatewayLocalAddr, HTTPSAddr: o.gatewayHTTPSAddr,
			LocalAddrForPods: o.gatewayLocalAddrForPods, SimulatedPods: !o.programs,
			LeaseNamespace: o.leaseNamespace},
		// The whole process's profiles: the control plane's as much as Ferry's.
		PprofAddr: o.pprofAddr,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	g, gctx := errgroup.WithContext(ctx)
	// The label tells Ferry's CPU from the control plane's in a profile (go tool
	// pprof -tags): goroutines inherit it.
	pprof.Do(gctx, pprof.Labels("component", "ferry"), func(ctx context.Context) {
		g.Go(func() error { return ferry.Start(ctx) })
	})
	f := &inProcessFerry{Ferry: ferry, ctx: gctx, cancel: cancel, g: g}
	select {
	case <-ferry.Admission.Ready():
		return f, nil
	case <-gctx.Done():
		if err := f.Stop(); err != nil {
			return nil, fmt.Errorf("ferry: %w", err)
		}
		return nil, ctx.Err()
	}
}

// Context ends when Ferry stops: it failed, or Stop was called.
func (f *inProcessFerry) Context() context.Context { return f.ctx }

// Stop stops Ferry and waits until it has. The first call returns the error Ferry
// stopped with, later ones nil: it is reported once.
func (f *inProcessFerry) Stop() error {
	var err error
	f.stop.Do(func() {
		f.cancel()
		err = f.g.Wait()
	})
	return err
}
