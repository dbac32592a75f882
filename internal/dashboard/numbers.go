package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/ferry-serving/ferry/internal/autoscaler"
)

// NumbersPath is where the controller serves a Revision's autoscaler numbers, on its
// metrics listener beside /metrics: the same listener, the same filter, so whoever
// may scrape the autoscaler's metrics may read these, and nobody else.
const NumbersPath = "/autoscaler/numbers"

// errNotLeader is what a replica that does not lead answers: its Autoscaler takes
// the gateways' reports but decides nothing.
var errNotLeader = errors.New("this controller replica is not the leader: only the leader's autoscaler decides, ask the leader's metrics address")

// NumbersHandler serves GET NumbersPath?namespace=NS&revision=NAME from the
// Autoscaler that get returns (nil until the reconcilers are set up) as JSON:
// 503 on a replica that does not lead, 404 for a Revision no PodAutoscaler watches.
func NumbersHandler(get func() *autoscaler.Autoscaler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet {
			http.Error(w, "GET only", http.StatusMethodNotAllowed)
			return
		}
		n, err := InProcess(get).Numbers(r.Context(), types.NamespacedName{Namespace: r.URL.Query().Get("namespace"), Name: r.URL.Query().Get("revision")})
		switch {
		case errors.Is(err, errNotLeader):
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
		case errors.Is(err, errNoNumbers):
			http.Error(w, err.Error(), http.StatusNotFound)
		case err != nil:
			http.Error(w, err.Error(), http.StatusInternalServerError)
		default:
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(n)
		}
	})
}

var errNoNumbers = errors.New("the autoscaler does not watch this Revision (no PodAutoscaler, or not reconciled yet)")

// NumbersSource gives a Revision's current autoscaler numbers.
type NumbersSource interface {
	Numbers(ctx context.Context, key types.NamespacedName) (autoscaler.Numbers, error)
}

// InProcess reads the Autoscaler of a controller in this process (ferry up).
func InProcess(get func() *autoscaler.Autoscaler) NumbersSource { return inProcess(get) }

type inProcess func() *autoscaler.Autoscaler

func (f inProcess) Numbers(_ context.Context, key types.NamespacedName) (autoscaler.Numbers, error) {
	a := f()
	if a == nil || !a.Leading() {
		return autoscaler.Numbers{}, errNotLeader
	}
	n, ok := a.Numbers(key)
	if !ok {
		return autoscaler.Numbers{}, errNoNumbers
	}
	return n, nil
}

// FromURL asks a controller's metrics listener (its --metrics-addr as a URL, such as
// http://127.0.0.1:9090, or the API server's service proxy path to it) with client.
func FromURL(base string, client *http.Client) NumbersSource {
	return &remote{base: strings.TrimSuffix(base, "/"), client: client}
}

type remote struct {
	base   string
	client *http.Client
}

func (r *remote) Numbers(ctx context.Context, key types.NamespacedName) (autoscaler.Numbers, error) {
	u := r.base + NumbersPath + "?" + url.Values{"namespace": {key.Namespace}, "revision": {key.Name}}.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return autoscaler.Numbers{}, err
	}
	resp, err := r.client.Do(req)
	if err != nil {
		return autoscaler.Numbers{}, fmt.Errorf("asking the controller at %s: %w", r.base, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return autoscaler.Numbers{}, fmt.Errorf("the controller at %s answered %s: %s", r.base, resp.Status, strings.TrimSpace(string(msg)))
	}
	var n autoscaler.Numbers
	if err := json.NewDecoder(resp.Body).Decode(&n); err != nil {
		return autoscaler.Numbers{}, fmt.Errorf("reading the controller's answer: %w", err)
	}
	return n, nil
}

// Sample is one second of a Revision's numbers, or why there are none.
type Sample struct {
	At time.Time `json:"at"`
	autoscaler.Numbers
	Error string `json:"error,omitempty"`
}

// sampleLength is how many seconds of numbers a Revision's page charts.
const sampleLength = 600

// viewedFor is how long a Revision is still sampled after its page was last open:
// reloading the page finds its recent past.
const viewedFor = 10 * time.Minute

// sampler asks the source each second for the Revisions whose pages are open (the
// controller keeps no history, only windows), and keeps their last sampleLength
// seconds. Revisions nobody looks at cost nothing.
type sampler struct {
	source  NumbersSource
	changes *notifier

	mu     sync.Mutex
	series map[types.NamespacedName]*series
}

type series struct {
	viewed  time.Time
	samples []Sample
}

func newSampler(source NumbersSource) *sampler {
	return &sampler{source: source, changes: newNotifier(), series: map[types.NamespacedName]*series{}}
}

// view marks key as viewed and returns its samples so far.
func (s *sampler) view(key types.NamespacedName) []Sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	ser := s.series[key]
	if ser == nil {
		ser = &series{}
		s.series[key] = ser
	}
	ser.viewed = time.Now()
	return append([]Sample(nil), ser.samples...)
}

func (s *sampler) run(ctx context.Context) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.mu.Lock()
		var keys []types.NamespacedName
		for k, ser := range s.series {
			if time.Since(ser.viewed) > viewedFor {
				delete(s.series, k)
				continue
			}
			keys = append(keys, k)
		}
		s.mu.Unlock()
		for _, k := range keys {
			s.sample(ctx, k)
		}
		if len(keys) > 0 {
			s.changes.bump()
		}
	}
}

func (s *sampler) sample(ctx context.Context, key types.NamespacedName) {
	ctx, cancel := context.WithTimeout(ctx, 900*time.Millisecond)
	defer cancel()
	n, err := s.source.Numbers(ctx, key)
	smp := Sample{At: time.Now(), Numbers: n}
	if err != nil {
		smp.Error = err.Error()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ser := s.series[key]
	if ser == nil {
		return
	}
	ser.samples = append(ser.samples, smp)
	if len(ser.samples) > sampleLength {
		ser.samples = ser.samples[len(ser.samples)-sampleLength:]
	}
}
