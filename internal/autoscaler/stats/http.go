package stats

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// The paths of the controller's stats listener.
const (
	ReportPath = "/report"
	PokePath   = "/poke"
)

// maxBodyBytes bounds what the listener reads of one request: a Report of ten thousand
// revisions is about a megabyte.
const maxBodyBytes = 8 << 20

// pokeMessage is the body of POST /poke.
type pokeMessage struct {
	Namespace string `json:"namespace"`
	Revision  string `json:"revision"`
}

// Handler serves a controller's stats listener for sink: POST /report with a JSON
// Report, and POST /poke with {"namespace": …, "revision": …}. It answers 204 once
// sink has the message, 400 for a body that is not one, 405 for other methods and 404
// for other paths. Unknown fields are ignored, so that an older controller accepts a
// newer gateway's messages.
func Handler(sink Sink) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != ReportPath && r.URL.Path != PokePath {
			http.NotFound(w, r)
			return
		}
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "stats: POST only", http.StatusMethodNotAllowed)
			return
		}
		body := http.MaxBytesReader(w, r.Body, maxBodyBytes)
		switch r.URL.Path {
		case ReportPath:
			var report Report
			if !decode(w, body, &report) {
				return
			}
			sink.Report(report)
		case PokePath:
			var poke pokeMessage
			if !decode(w, body, &poke) {
				return
			}
			if poke.Namespace == "" || poke.Revision == "" {
				http.Error(w, "stats: a poke needs a namespace and a revision", http.StatusBadRequest)
				return
			}
			sink.Poke(poke.Namespace, poke.Revision)
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

func decode(w http.ResponseWriter, body io.Reader, v any) bool {
	err := json.NewDecoder(body).Decode(v)
	if err == nil {
		return true
	}
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		http.Error(w, "stats: body too large", http.StatusRequestEntityTooLarge)
	} else {
		http.Error(w, "stats: bad JSON: "+err.Error(), http.StatusBadRequest)
	}
	return false
}

// Client is the Sink a gateway uses when the autoscaler runs in another process: it
// posts each Report and Poke to the stats listener (Handler) at every address that
// its host name resolves to, so that each controller replica behind a headless
// Service, leader or not, keeps the whole history.
//
// Report and Poke never block: they hand the message to a buffered queue, which the
// sender started by Start drains; when the queue is full the message is dropped and
// counted (Dropped). Each message resolves the host anew (an IP literal is used as
// is), so replicas that come and go are followed, and goes to the addresses at once,
// each with its own timeout, so that a replica that hangs delays no other.
//
// A Client is a controller-runtime Runnable: add it to the manager, and it sends
// until the manager stops.
type Client struct {
	address string
	// targets are the address's comma-separated host:port entries.
	targets   []target
	addrErr   error
	resolve   func(ctx context.Context, host string) ([]string, error)
	http      *http.Client
	timeout   time.Duration
	log       logr.Logger
	hasLogger bool

	queue chan message
	// posts bounds the posts under way, so that unreachable replicas cannot pile up
	// goroutines; a post that finds no room is dropped and counted.
	posts chan struct{}

	dropped atomic.Uint64
	failed  atomic.Uint64
	sent    atomic.Uint64

	mu      sync.Mutex
	failing map[string]bool // by address, to log changes rather than every failure
}

var _ Sink = (*Client)(nil)

type target struct{ host, port string }

type message struct {
	path string
	body any
}

// ClientOption configures a Client.
type ClientOption func(*Client)

// WithResolver replaces net.DefaultResolver.LookupHost, e.g. in tests.
func WithResolver(lookupHost func(ctx context.Context, host string) ([]string, error)) ClientOption {
	return func(c *Client) { c.resolve = lookupHost }
}

// WithTimeout bounds each post, connection included. Default 2s.
func WithTimeout(d time.Duration) ClientOption {
	return func(c *Client) { c.timeout = d }
}

// WithQueueSize sets how many messages wait for the sender before new ones are
// dropped. Default 256.
func WithQueueSize(n int) ClientOption {
	return func(c *Client) { c.queue = make(chan message, n) }
}

// WithHTTPClient replaces the HTTP client the posts use.
func WithHTTPClient(hc *http.Client) ClientOption {
	return func(c *Client) { c.http = hc }
}

// WithLogger sets where failures (and recoveries) of an address are logged. Default:
// the logger of Start's context, if any.
func WithLogger(log logr.Logger) ClientOption {
	return func(c *Client) { c.log, c.hasLogger = log, true }
}

// NewClient returns a Client that posts to address: host:port (a Service's DNS name
// and port, or an IP literal and port), or several, separated by commas (replicas
// that no one name resolves to, such as processes on one host). A malformed address
// makes Start fail.
func NewClient(address string, opts ...ClientOption) *Client {
	c := &Client{
		address: address,
		resolve: net.DefaultResolver.LookupHost,
		timeout: 2 * time.Second,
		queue:   make(chan message, 256),
		posts:   make(chan struct{}, 64),
		failing: map[string]bool{},
	}
	for _, a := range strings.Split(address, ",") {
		host, port, err := net.SplitHostPort(strings.TrimSpace(a))
		if err == nil && (host == "" || port == "") {
			err = errors.New("missing host or port")
		}
		if err != nil {
			c.addrErr = err
			break
		}
		c.targets = append(c.targets, target{host, port})
	}
	for _, o := range opts {
		o(c)
	}
	if c.http == nil {
		c.http = &http.Client{Transport: &http.Transport{
			Proxy:               nil, // in-cluster addresses, never an environment proxy
			DialContext:         (&net.Dialer{KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 2,
			IdleConnTimeout:     90 * time.Second,
		}}
	}
	return c
}

// Report queues r for every controller replica; it never blocks.
func (c *Client) Report(r Report) { c.enqueue(message{path: ReportPath, body: r}) }

// Poke queues a poke for every controller replica; it never blocks.
func (c *Client) Poke(namespace, revision string) {
	c.enqueue(message{path: PokePath, body: pokeMessage{Namespace: namespace, Revision: revision}})
}

func (c *Client) enqueue(m message) {
	select {
	case c.queue <- m:
	default:
		c.dropped.Add(1)
	}
}

// Dropped counts the messages, and the posts of a message to one address, that were
// dropped because the queue or the posts under way were full.
func (c *Client) Dropped() uint64 { return c.dropped.Load() }

// Failed counts the posts that failed: no address, no connection, a timeout, or an
// answer other than 2xx.
func (c *Client) Failed() uint64 { return c.failed.Load() }

// Sent counts the posts that a stats listener accepted.
func (c *Client) Sent() uint64 { return c.sent.Load() }

// Start sends queued messages until ctx ends; posts under way are cancelled then, and
// messages still queued are dropped. It fails at once for a malformed address.
func (c *Client) Start(ctx context.Context) error {
	if c.addrErr != nil {
		return fmt.Errorf("stats client: address %q: %w", c.address, c.addrErr)
	}
	if !c.hasLogger {
		c.log = logr.FromContextOrDiscard(ctx).WithName("stats-client")
	}
	var posts sync.WaitGroup
	defer posts.Wait()
	for {
		select {
		case <-ctx.Done():
			return nil
		case m := <-c.queue:
			c.send(ctx, m, &posts)
		}
	}
}

// NeedLeaderElection is false: every gateway replica reports.
func (c *Client) NeedLeaderElection() bool { return false }

// send resolves the host and starts one post of m per address.
func (c *Client) send(ctx context.Context, m message, posts *sync.WaitGroup) {
	body, err := json.Marshal(m.body)
	if err != nil { // not for these types
		c.failed.Add(1)
		return
	}
	var addrs []string
	for _, t := range c.targets {
		resolved, err := c.addresses(ctx, t.host)
		if err != nil || len(resolved) == 0 {
			c.failed.Add(1)
			c.noteFailure(t.host, fmt.Errorf("resolving: %v", err))
			continue
		}
		c.noteSuccess(t.host)
		for _, ip := range resolved {
			addrs = append(addrs, net.JoinHostPort(ip, t.port))
		}
	}
	for _, addr := range addrs {
		select {
		case c.posts <- struct{}{}:
		default:
			c.dropped.Add(1)
			continue
		}
		posts.Go(func() {
			defer func() { <-c.posts }()
			c.post(ctx, addr, m.path, body)
		})
	}
}

func (c *Client) addresses(ctx context.Context, host string) ([]string, error) {
	if net.ParseIP(host) != nil {
		return []string{host}, nil
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	return c.resolve(ctx, host)
}

func (c *Client) post(stop context.Context, addr, path string, body []byte) {
	ctx, cancel := context.WithTimeout(stop, c.timeout)
	defer cancel()
	url := "http://" + addr + path
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		c.failed.Add(1)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := c.http.Do(req)
	if err == nil {
		io.Copy(io.Discard, io.LimitReader(res.Body, 4<<10))
		res.Body.Close()
		if res.StatusCode/100 != 2 {
			err = fmt.Errorf("%s answered %s", url, res.Status)
		}
	}
	if err != nil {
		if stop.Err() != nil {
			return // stopping
		}
		c.failed.Add(1)
		c.noteFailure(addr, err)
		return
	}
	c.sent.Add(1)
	c.noteSuccess(addr)
}

// noteFailure logs the first failure of an address (or of resolving, keyed by the
// host) after a success; noteSuccess logs the recovery.
func (c *Client) noteFailure(addr string, err error) {
	c.mu.Lock()
	first := !c.failing[addr]
	if first && len(c.failing) >= 1024 {
		clear(c.failing) // replicas come and go; forget the ones long gone
	}
	c.failing[addr] = true
	c.mu.Unlock()
	if first {
		c.log.Info("cannot send load stats; dropping them until it works again", "address", addr, "error", err.Error())
	}
}

func (c *Client) noteSuccess(addr string) {
	c.mu.Lock()
	was := c.failing[addr]
	delete(c.failing, addr)
	c.mu.Unlock()
	if was {
		c.log.Info("sending load stats again", "address", addr)
	}
}
