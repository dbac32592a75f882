package soak

import (
	"net/url"
	"slices"
	"sync"
	"time"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// trafficLog keeps, for every host of the soak's Routes, which Revisions the Route's
// status named for it over time, and each (Route, tag)'s current host. An answer is
// judged against the namings in effect around the time it was asked: the gateway
// serves a new split shortly before the Route says so (the Route reports traffic once
// its KIngress is Ready), and an old one until the new one is programmed.
type trafficLog struct {
	mu      sync.Mutex
	hosts   map[string][]naming
	current map[hostKey]string
}

// hostKey names a host by what it serves: a Route, and a tag ("" for the Route's
// own host).
type hostKey struct{ route, tag string }

// naming is the Revisions that serve a host from a moment on (none: the host is gone).
type naming struct {
	at        time.Time
	revisions []string
}

func newTrafficLog() *trafficLog {
	return &trafficLog{hosts: map[string][]naming{}, current: map[hostKey]string{}}
}

// observe records a Route's status traffic at a moment.
func (l *trafficLog) observe(at time.Time, r *v1.Route) {
	served := map[hostKey]string{}
	byHost := map[string][]string{}
	if h := hostOf(r.Status.URL); h != "" {
		served[hostKey{r.Name, ""}] = h
		byHost[h] = nil
		for _, t := range r.Status.Traffic {
			if t.Percent != nil && *t.Percent > 0 && t.RevisionName != "" {
				byHost[h] = append(byHost[h], t.RevisionName)
			}
		}
	}
	for _, t := range r.Status.Traffic {
		if h := hostOf(t.URL); t.Tag != "" && h != "" && t.RevisionName != "" {
			served[hostKey{r.Name, t.Tag}] = h
			byHost[h] = append(byHost[h], t.RevisionName)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, h := range l.current {
		if k.route == r.Name && served[k] != h {
			l.set(at, h, nil) // moved or dropped: nothing serves the old host now
			delete(l.current, k)
		}
	}
	for k, h := range served {
		l.current[k] = h
	}
	for h, revs := range byHost {
		l.set(at, h, revs)
	}
}

// gone records that a Route was deleted.
func (l *trafficLog) gone(at time.Time, route string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, h := range l.current {
		if k.route == route {
			l.set(at, h, nil)
			delete(l.current, k)
		}
	}
}

func (l *trafficLog) set(at time.Time, host string, revs []string) {
	revs = slices.Compact(slices.Sorted(slices.Values(revs)))
	hist := l.hosts[host]
	if n := len(hist); n > 0 && slices.Equal(hist[n-1].revisions, revs) {
		return
	}
	l.hosts[host] = append(hist, naming{at: at, revisions: revs})
}

// host is the current host of a Route (tag ""), or of one of its tags; "" if none yet.
func (l *trafficLog) host(route, tag string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.current[hostKey{route, tag}]
}

// named says whether some naming of host in effect at any moment of [from, to] named
// rev.
func (l *trafficLog) named(host, rev string, from, to time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return inEffect(l.hosts[host], from, to, func(n naming) bool { return slices.Contains(n.revisions, rev) })
}

// moved says whether host stopped being served (or had not begun) at some moment of
// [from, to]: a 404 then is what any client of Knative sees.
func (l *trafficLog) moved(host string, from, to time.Time) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	hist := l.hosts[host]
	if len(hist) == 0 || hist[0].at.After(from) {
		return true
	}
	return inEffect(hist, from, to, func(n naming) bool { return n.revisions == nil })
}

// inEffect says whether a naming in effect at some moment of [from, to] satisfies ok.
func inEffect(hist []naming, from, to time.Time, ok func(naming) bool) bool {
	for i, n := range hist {
		end := time.Time{}
		if i+1 < len(hist) {
			end = hist[i+1].at
		}
		if n.at.After(to) || (!end.IsZero() && !end.After(from)) {
			continue
		}
		if ok(n) {
			return true
		}
	}
	return false
}

func hostOf(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	return p.Host
}
