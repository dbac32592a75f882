package soak

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// target is one stream of the load: a Route's host (or one of its tags') on the
// external or the cluster-local listener.
type target struct {
	name       string // as the report names it
	route, tag string
	local      bool
	active     func() bool // nil: always
}

// targets is what the load sends to: every Service of the fleet, both tags of the
// tagged one, and the zero Service only while its burst is on.
func (r *run) targets() []target {
	var ts []target
	for _, name := range r.o.fleet() {
		t := target{name: name, route: name, local: name == private}
		if name == zero {
			t.active = r.zeroBurst.Load
		}
		ts = append(ts, t)
	}
	return append(ts, target{name: tagged + "/" + stableTag, route: tagged, tag: stableTag},
		target{name: tagged + "/" + candidate, route: tagged, tag: candidate})
}

// maxInFlight bounds one target's requests in flight: a request held while a pod
// starts must not let the others pile up behind it without bound.
const maxInFlight = 16

// load sends requests to every target at its share of the rate until ctx ends, and
// waits for the last answers.
func (r *run) load(ctx context.Context) {
	ts := r.targets()
	interval := time.Duration(float64(time.Second) * float64(len(ts)) / r.o.Rate)
	client := &http.Client{
		Transport:     &http.Transport{MaxIdleConnsPerHost: maxInFlight, IdleConnTimeout: 30 * time.Second, DisableCompression: true},
		Timeout:       loadTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	var wg sync.WaitGroup
	for _, t := range ts {
		wg.Go(func() { r.stream(ctx, client, t, interval) })
	}
	wg.Wait()
	client.CloseIdleConnections()
}

// loadTimeout is how long one request may take: Knative's activator holds a request
// for a pod up to its default timeout-seconds, 300 s; a soak's program answers in
// milliseconds once it is up.
const loadTimeout = 60 * time.Second

func (r *run) stream(ctx context.Context, client *http.Client, t target, interval time.Duration) {
	var inFlight atomic.Int32
	var wg sync.WaitGroup
	defer wg.Wait()
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if t.active != nil && !t.active() || inFlight.Load() >= maxInFlight {
			continue
		}
		host := r.traffic.host(t.route, t.tag)
		if host == "" {
			continue
		}
		inFlight.Add(1)
		wg.Go(func() {
			defer inFlight.Add(-1)
			r.requests.add(r.ask(client, t, host))
		})
	}
}

// ask sends one request; it is not cancelled with the run, so that every request sent
// is answered or times out.
func (r *run) ask(client *http.Client, t target, host string) answer {
	a := answer{target: t.name, host: host, start: time.Now()}
	req, err := http.NewRequest(http.MethodGet, r.o.Gateways.Pick(t.local)+"/", nil)
	if err != nil {
		a.err = err.Error()
		a.end = time.Now()
		return a
	}
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		a.err, a.end = err.Error(), time.Now()
		return a
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	resp.Body.Close()
	a.end = time.Now()
	if err != nil {
		a.err = "reading the answer: " + err.Error()
		return a
	}
	a.status = resp.StatusCode
	if t.route == frontend {
		parseFrontend(&a, body)
	} else {
		a.revision = revisionOf(body)
	}
	return a
}
