package manager

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
)

// probeTimeout keeps each readiness check within a kubelet probe's default 1 s.
const probeTimeout = 500 * time.Millisecond

// addProbes adds the checks behind the manager's /healthz and /readyz. Liveness is
// only that the process answers: a dependency that is down must not restart it.
// Readiness is that the caches have synced and, for what serves traffic, that it
// serves: the gateway's listeners answer HTTP and its table routes every KIngress it
// found at start, and the webhooks are registered.
func (f *Ferry) addProbes(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return err
	}
	started := make(startedGate)
	if err := mgr.Add(started); err != nil {
		return err
	}
	ready := map[string]healthz.Checker{"caches": afterStart(started, cachesSynced(mgr.GetCache()))}
	if f.Gateway != nil {
		ready["gateway"] = listenersServe(f.Gateway.ExternalAddr(), f.Gateway.LocalAddr())
		// Programmed every KIngress the API server held once its Lease was created
		// (gateway.Gateway.Warm): a replica that restarts must not take traffic it
		// would answer 404, or with a Revision older than a Ready status promises.
		ready["routes"] = afterStart(started, func(ctx context.Context) error { return f.Gateway.Warm(ctx, mgr.GetAPIReader()) })
	}
	if f.Admission != nil {
		ready["admission"] = closed(f.Admission.Ready(), "the webhooks are not registered yet")
	}
	for name, check := range ready {
		if err := mgr.AddReadyzCheck(name, check); err != nil {
			return err
		}
	}
	return nil
}

// startedGate closes when the manager starts the runnables that run on every replica.
// controller-runtime starts them once its caches have synced, and the controllers
// among them add the informers of their watches as they start, so until then a cache
// that reports itself synced may simply not hold them yet.
type startedGate chan struct{}

func (g startedGate) Start(context.Context) error {
	close(g)
	return nil
}

func (g startedGate) NeedLeaderElection() bool { return false }

// afterStart runs check, within a probe's time, once the manager has started its
// controllers; before, it fails.
func afterStart(started startedGate, check func(ctx context.Context) error) healthz.Checker {
	return func(req *http.Request) error {
		select {
		case <-started:
		default:
			return errors.New("the manager has not started its controllers yet")
		}
		ctx, cancel := context.WithTimeout(req.Context(), probeTimeout)
		defer cancel()
		return check(ctx)
	}
}

// cachesSynced passes once every informer the manager runs has synced; an informer
// added later (a watch of a controller that just started, or that waited for leader
// election) fails it until it has synced too.
func cachesSynced(c cache.Cache) func(context.Context) error {
	return func(ctx context.Context) error {
		if !c.WaitForCacheSync(ctx) {
			return errors.New("the caches have not synced yet")
		}
		return nil
	}
}

// listenersServe checks that each address answers "OPTIONS *", which net/http's
// server answers itself: it proves the listener is being served without reaching the
// proxy, so probes neither show up in the request metrics nor depend on a route.
func listenersServe(addrs ...string) healthz.Checker {
	client := &http.Client{Timeout: probeTimeout, Transport: &http.Transport{DisableKeepAlives: true, Proxy: nil}}
	return func(req *http.Request) error {
		for _, addr := range addrs {
			probe := (&http.Request{Method: http.MethodOptions, URL: &url.URL{Scheme: "http", Host: addr, Opaque: "*"},
				Host: addr, Header: http.Header{}}).WithContext(req.Context())
			res, err := client.Do(probe)
			if err != nil {
				return fmt.Errorf("listener %s: %w", addr, err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return fmt.Errorf("listener %s answered OPTIONS * with %s", addr, res.Status)
			}
		}
		return nil
	}
}

func closed(ch <-chan struct{}, notYet string) healthz.Checker {
	return func(*http.Request) error {
		select {
		case <-ch:
			return nil
		default:
			return errors.New(notYet)
		}
	}
}
