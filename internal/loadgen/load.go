package loadgen

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-serving/ferry/internal/scale"
)

// The bounds of a run.
const (
	MaxConcurrency = 1000
	MaxDuration    = 10 * time.Minute
	MaxRequests    = 1_000_000
)

// Options describe a run.
type Options struct {
	// URL is what each request GETs; its host must be a loopback address or
	// localhost.
	URL string
	// Host, if set, is the Host header (the gateway routes by it).
	Host string
	// Concurrency is the number of workers, each with one request in flight.
	Concurrency int
	// Duration ends the run.
	Duration time.Duration
	// Requests, if above 0, ends the run after that many requests.
	Requests int
	// Timeout bounds each request. Default 30s.
	Timeout time.Duration
}

func (o Options) validate() error {
	u, err := url.Parse(o.URL)
	if err != nil {
		return fmt.Errorf("URL %q: %w", o.URL, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("URL %q: want an http:// or https:// URL", o.URL)
	}
	if !loopback(u.Hostname()) {
		return fmt.Errorf("URL %q: ferry load only sends to loopback addresses (127.0.0.1, ::1, localhost), such as ferry up's gateway", o.URL)
	}
	switch {
	case o.Concurrency < 1 || o.Concurrency > MaxConcurrency:
		return fmt.Errorf("concurrency %d: want 1 to %d", o.Concurrency, MaxConcurrency)
	case o.Duration <= 0 || o.Duration > MaxDuration:
		return fmt.Errorf("duration %v: want more than 0 and at most %v", o.Duration, MaxDuration)
	case o.Requests < 0 || o.Requests > MaxRequests:
		return fmt.Errorf("requests %d: want 0 (no limit but the duration) to %d", o.Requests, MaxRequests)
	case o.Timeout < 0:
		return fmt.Errorf("timeout %v: must not be negative", o.Timeout)
	}
	return nil
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Result is what a run measured.
type Result struct {
	// Elapsed is from the first request sent to the last answer.
	Elapsed time.Duration
	// Codes counts the answers by status code.
	Codes map[int]int
	// Errors counts the requests that got no answer, by error.
	Errors map[string]int
	// Latency is the distribution of the answered requests' latencies.
	Latency scale.Distribution
}

// Requests is how many requests were sent.
func (r *Result) Requests() int {
	n := 0
	for _, c := range r.Codes {
		n += c
	}
	for _, c := range r.Errors {
		n += c
	}
	return n
}

// Rate is the requests per second over the run.
func (r *Result) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Requests()) / r.Elapsed.Seconds()
}

// Run sends the load and returns what it measured. It stops early, with what it has,
// when ctx ends.
func Run(ctx context.Context, o Options) (*Result, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	transport := &http.Transport{
		Proxy:               nil, // loopback only: never an environment proxy
		MaxIdleConnsPerHost: o.Concurrency,
		DisableCompression:  true,
	}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport, Timeout: o.Timeout,
		// A redirect is an answer to count, not one to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	ctx, cancel := context.WithTimeout(ctx, o.Duration)
	defer cancel()
	var taken atomic.Int64
	// take reserves one request of the budget; false once it is spent.
	take := func() bool { return o.Requests == 0 || taken.Add(1) <= int64(o.Requests) }

	workers := make([]worker, o.Concurrency)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range workers {
		wg.Add(1)
		go func(w *worker) {
			defer wg.Done()
			for ctx.Err() == nil && take() {
				w.send(ctx, client, o)
			}
		}(&workers[i])
	}
	wg.Wait()
	res := &Result{Elapsed: time.Since(start), Codes: map[int]int{}, Errors: map[string]int{}}
	var latencies []time.Duration
	for _, w := range workers {
		for code, n := range w.codes {
			res.Codes[code] += n
		}
		for e, n := range w.errors {
			res.Errors[e] += n
		}
		latencies = append(latencies, w.latencies...)
	}
	res.Latency = scale.Summarize(latencies)
	return res, nil
}

// worker is one closed loop's tallies, merged at the end, so that no request waits
// on a lock.
type worker struct {
	codes     map[int]int
	errors    map[string]int
	latencies []time.Duration
}

func (w *worker) send(ctx context.Context, client *http.Client, o Options) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.URL, nil)
	if err != nil {
		w.fail(err)
		return
	}
	if o.Host != "" {
		req.Host = o.Host
	}
	start := time.Now()
	res, err := client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return // the run ended under it: neither an answer nor a failure
		}
		w.fail(err)
		return
	}
	_, err = io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if err != nil && ctx.Err() != nil {
		return
	}
	if w.codes == nil {
		w.codes = map[int]int{}
	}
	w.codes[res.StatusCode]++
	w.latencies = append(w.latencies, time.Since(start))
}

func (w *worker) fail(err error) {
	if w.errors == nil {
		w.errors = map[string]int{}
	}
	// Group by the innermost error: the URL and the attempt differ every time.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	w.errors[err.Error()]++
}

// Print writes the result for people.
func (r *Result) Print(out io.Writer) {
	fmt.Fprintf(out, "Requests:  %d in %v, %.1f requests/s\n", r.Requests(), r.Elapsed.Round(time.Millisecond), r.Rate())
	codes := make([]int, 0, len(r.Codes))
	for c := range r.Codes {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	fmt.Fprint(out, "Status:   ")
	for _, c := range codes {
		fmt.Fprintf(out, " %d: %d", c, r.Codes[c])
	}
	if len(codes) == 0 {
		fmt.Fprint(out, " no answer")
	}
	fmt.Fprintln(out)
	errs := make([]string, 0, len(r.Errors))
	for e := range r.Errors {
		errs = append(errs, e)
	}
	sort.Strings(errs)
	for _, e := range errs {
		fmt.Fprintf(out, "Error:     %d × %s\n", r.Errors[e], e)
	}
	l := r.Latency
	if l.Count == 0 {
		return
	}
	fmt.Fprintf(out, "Latency:   p50 %v  p90 %v  p99 %v  max %v\n", ms(l.P50), ms(l.P90), ms(l.P99), ms(l.Max))
}

func ms(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
