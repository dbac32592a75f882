package dashboard

import (
	"bytes"
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
)

//go:embed assets
var assets embed.FS

// pageSize is how many Services one list page shows: with 5,000 Services the page
// stays a few hundred kilobytes and draws at once.
const pageSize = 100

// streamInterval is the least time between two updates of one open page: a burst of
// changes is one redraw, and a new Service still shows well within a second.
const streamInterval = 200 * time.Millisecond

// Dashboard serves the pages from a Model and a Revision's numbers from a
// NumbersSource.
type Dashboard struct {
	model   *Model
	sampler *sampler
	pages   *template.Template
	// requests counts the dashboard's own requests to the API server, by verb.
	requests *requestCounter
}

// New builds a dashboard that reads the cluster with cfg (only ever get, list and
// watch: any other request is refused before it leaves the process), every
// namespace or namespace alone, and a Revision's autoscaler numbers from numbers.
func New(cfg *rest.Config, namespace string, numbers NumbersSource) (*Dashboard, error) {
	cfg = rest.CopyConfig(cfg)
	counter := &requestCounter{}
	cfg.Wrap(counter.wrap)
	m, err := NewModel(cfg, namespace)
	if err != nil {
		return nil, err
	}
	pages, err := parsePages()
	if err != nil {
		return nil, err
	}
	return &Dashboard{model: m, sampler: newSampler(numbers), pages: pages, requests: counter}, nil
}

// parsePages parses the page templates embedded in the binary.
func parsePages() (*template.Template, error) {
	return template.New("").Funcs(funcs).ParseFS(assets, "assets/templates/*.html")
}

// Serve runs the watches and serves the pages on ln until ctx ends (or the watches
// fail to start: the pages need them).
func (d *Dashboard) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	modelErr := make(chan error, 1)
	go func() {
		modelErr <- d.model.Start(ctx)
		cancel()
	}()
	go d.sampler.run(ctx)
	srv := &http.Server{Handler: d.Handler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx }}
	go func() {
		<-ctx.Done()
		shutdown, stop := context.WithTimeout(context.Background(), 2*time.Second)
		defer stop()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	cancel()
	return <-modelErr
}

// Handler serves the pages, their live streams and the embedded assets.
func (d *Dashboard) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets/static")
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", d.list)
	mux.HandleFunc("GET /services/{namespace}/{name}", d.service)
	mux.HandleFunc("GET /revisions/{namespace}/{name}", d.revision)
	mux.HandleFunc("GET /live/list", d.liveList)
	mux.HandleFunc("GET /live/services/{namespace}/{name}", d.liveService)
	mux.HandleFunc("GET /live/revisions/{namespace}/{name}", d.liveRevision)
	mux.HandleFunc("GET /api/requests", d.apiRequests)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			// Read-only: nothing here takes a form or a write.
			http.Error(w, "the dashboard is read-only", http.StatusMethodNotAllowed)
			return
		}
		d.notFound(w, fmt.Sprintf("There is no page %s.", r.URL.Path))
	})
	return securityHeaders(mux)
}

// securityHeaders keep the pages from being framed or fed scripts from elsewhere:
// the pages load only their own assets.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		h.ServeHTTP(w, r)
	})
}

// ready answers for every page while the cache has not synced: the API server's
// message if it refused, else a page that reloads itself.
func (d *Dashboard) ready(w http.ResponseWriter) bool {
	synced, reachErr := d.model.State()
	switch {
	case synced:
		return true
	case reachErr != "":
		d.render(w, http.StatusBadGateway, "error", errorPage{Title: "The API server refused", Message: reachErr,
			Hint: "The dashboard reads the cluster with your kubeconfig's credentials: they may have expired, or not allow reading what it shows in every namespace (then ferry dashboard --namespace NS shows one)."})
	default:
		d.render(w, http.StatusServiceUnavailable, "error", errorPage{Title: "Reading the cluster …", Message: "The dashboard is still listing the cluster's objects.", Refresh: true})
	}
	return false
}

type errorPage struct {
	Title, Message, Hint string
	Refresh              bool
}

func (d *Dashboard) notFound(w http.ResponseWriter, msg string) {
	d.render(w, http.StatusNotFound, "error", errorPage{Title: "Not found", Message: msg})
}

// failed answers 404 for what is not there, 500 for anything else.
func (d *Dashboard) failed(w http.ResponseWriter, err error) {
	if m := (errMissing{}); errors.As(err, &m) {
		d.notFound(w, m.msg)
		return
	}
	d.render(w, http.StatusInternalServerError, "error", errorPage{Title: "Error", Message: err.Error()})
}

func (d *Dashboard) render(w http.ResponseWriter, status int, name string, data any) {
	var buf bytes.Buffer
	if err := d.pages.ExecuteTemplate(&buf, name, data); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (d *Dashboard) list(w http.ResponseWriter, r *http.Request) {
	if !d.ready(w) {
		return
	}
	v, err := d.listView(r.Context(), r.URL.Query())
	if err != nil {
		d.failed(w, err)
		return
	}
	d.render(w, http.StatusOK, "list", v)
}

func (d *Dashboard) service(w http.ResponseWriter, r *http.Request) {
	if !d.ready(w) {
		return
	}
	v, err := d.serviceView(r.Context(), key(r))
	if err != nil {
		d.failed(w, err)
		return
	}
	d.render(w, http.StatusOK, "service", v)
}

func (d *Dashboard) revision(w http.ResponseWriter, r *http.Request) {
	if !d.ready(w) {
		return
	}
	v, err := d.revisionView(r.Context(), key(r))
	if err != nil {
		d.failed(w, err)
		return
	}
	d.render(w, http.StatusOK, "revision", v)
}

func key(r *http.Request) types.NamespacedName {
	return types.NamespacedName{Namespace: r.PathValue("namespace"), Name: r.PathValue("name")}
}

// event is one server-sent event.
type event struct {
	name string
	data string
}

// stream sends the events next returns at once and after each change that wake
// signals, at most every streamInterval (or twice the render's time), until the page
// closes; an event whose data did not change since it was last sent is not sent again.
func (d *Dashboard) stream(w http.ResponseWriter, r *http.Request, wake func() <-chan struct{}, next func(context.Context) ([]event, error)) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	ctx := r.Context()
	sent := map[string]string{}
	for {
		changed := wake()
		began := time.Now()
		evs, err := next(ctx)
		// A page that takes long to render (a list of thousands while they churn) is
		// rendered at most a third of the time: each open page costs the server a
		// bounded share of a core.
		pause := max(streamInterval, 2*time.Since(began))
		if err != nil {
			evs = []event{{name: "gone", data: err.Error()}}
		}
		for _, ev := range evs {
			if sent[ev.name] == ev.data {
				continue
			}
			sent[ev.name] = ev.data
			fmt.Fprintf(w, "event: %s\ndata: %s\n\n", ev.name, strings.ReplaceAll(ev.data, "\n", "\ndata: "))
		}
		flusher.Flush()
		if err != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(pause):
		}
	}
}

func (d *Dashboard) fragment(name string, data any) (string, error) {
	var buf bytes.Buffer
	err := d.pages.ExecuteTemplate(&buf, name, data)
	return buf.String(), err
}

func (d *Dashboard) liveList(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	d.stream(w, r, d.model.Changed, func(ctx context.Context) ([]event, error) {
		if synced, _ := d.model.State(); !synced {
			return nil, nil
		}
		v, err := d.listView(ctx, q)
		if err != nil {
			return nil, err
		}
		html, err := d.fragment("list-live", v)
		return []event{{name: "html", data: html}}, err
	})
}

func (d *Dashboard) liveService(w http.ResponseWriter, r *http.Request) {
	k := key(r)
	d.stream(w, r, d.model.Changed, func(ctx context.Context) ([]event, error) {
		v, err := d.serviceView(ctx, k)
		if err != nil {
			return nil, err
		}
		html, err := d.fragment("service-live", v)
		if err != nil {
			return nil, err
		}
		chart, err := json.Marshal(v.Chart)
		return []event{{name: "html", data: html}, {name: "traffic", data: string(chart)}}, err
	})
}

func (d *Dashboard) liveRevision(w http.ResponseWriter, r *http.Request) {
	k := key(r)
	wake := func() <-chan struct{} { return either(d.model.Changed(), d.sampler.changes.wait()) }
	d.stream(w, r, wake, func(ctx context.Context) ([]event, error) {
		v, err := d.revisionView(ctx, k)
		if err != nil {
			return nil, err
		}
		html, err := d.fragment("revision-live", v)
		if err != nil {
			return nil, err
		}
		// The page has the samples it was drawn with; the stream sends the latest
		// few, which the page adds when newer than its own.
		samples, err := json.Marshal(v.Samples[max(0, len(v.Samples)-10):])
		return []event{{name: "html", data: html}, {name: "samples", data: string(samples)}}, err
	})
}

// either closes when a or b does.
func either(a, b <-chan struct{}) <-chan struct{} {
	c := make(chan struct{})
	go func() {
		select {
		case <-a:
		case <-b:
		}
		close(c)
	}()
	return c
}

// apiRequests is the dashboard's own load on the API server since it started, by
// verb (docs/dashboard.md measures it).
func (d *Dashboard) apiRequests(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(d.requests.counts())
}
