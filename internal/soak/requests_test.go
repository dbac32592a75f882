package soak

import (
	"testing"
	"time"
)

func TestRevisionOf(t *testing.T) {
	cases := map[string]string{
		"Hello from revision hello-00001 (pod 10.244.0.5 is simulated by kwok; no process serves it)\n": "hello-00001",
		"Hello Ferry! Revision plain-00002, pod plain-00002-deployment-x (pid 7)\n":                     "plain-00002",
		"Revision netprobe-00001\n": "netprobe-00001",
		"Hello World!\n":            "",
	}
	for body, want := range cases {
		if got := revisionOf([]byte(body)); got != want {
			t.Errorf("revisionOf(%q) = %q, want %q", body, got, want)
		}
	}
}

func TestJudge(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	l := newTrafficLog()
	l.observe(at(0), route("plain", "http://plain.ns.example.com", percent("plain-00001", 100)))
	l.observe(at(100), route("plain", "http://plain.ns.example.com", percent("plain-00002", 100)))
	l.observe(at(200), route("plain", "http://plain.ns.example.org", percent("plain-00002", 100)))
	const host = "plain.ns.example.com"
	ask := func(s, status int, rev string) answer {
		return answer{host: host, start: at(s), end: at(s).Add(5 * time.Millisecond), status: status, revision: rev}
	}
	cases := []struct {
		name string
		a    answer
		want string
	}{
		{"200 from the named Revision", ask(50, 200, "plain-00001"), verdictOK},
		{"200 from the old Revision just after the change", ask(105, 200, "plain-00001"), verdictOK},
		{"200 from the old Revision long after", ask(150, 200, "plain-00001"), verdictWrongRev},
		{"200 from a Revision never named", ask(50, 200, "other-00001"), verdictWrongRev},
		{"200 that does not say", ask(50, 200, ""), verdictUnjudgeable},
		{"502 during a rollout", ask(100, 502, ""), verdictFailed},
		{"no answer", answer{host: host, start: at(50), end: at(51), err: "connection refused"}, verdictFailed},
		{"404 while the host is served", ask(50, 404, ""), verdictFailed},
		{"404 as the domain moves", ask(201, 404, ""), verdictHostMoved},
	}
	for _, c := range cases {
		if got := judge(c.a, l, grace); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestRecorderReportsBadRequestsOnceJudged(t *testing.T) {
	t0 := time.Now()
	l := newTrafficLog()
	l.observe(t0, route("plain", "http://plain.ns.example.com", percent("plain-00001", 100)))
	r := newRecorder(t0, l, grace)
	r.add(answer{target: "plain", host: "plain.ns.example.com", start: t0, end: t0.Add(time.Millisecond), status: 200, revision: "plain-00001"})
	r.add(answer{target: "plain", host: "plain.ns.example.com", start: t0, end: t0.Add(time.Millisecond), status: 503})
	// Answered by the next Revision before the Route says so: judged at the end.
	r.add(answer{target: "plain", host: "plain.ns.example.com", start: t0.Add(time.Second), end: t0.Add(time.Second), status: 200, revision: "plain-00002"})
	l.observe(t0.Add(2*time.Second), route("plain", "http://plain.ns.example.com", percent("plain-00002", 100)))
	r.settle()
	targets, minutes, bad, badN := r.snapshot()
	if targets["plain"].Requests != 3 || badN[verdictFailed] != 1 || badN[verdictWrongRev] != 0 || len(bad) != 1 || bad[0].Status != 503 {
		t.Errorf("got %+v, bad %v %v", targets["plain"], bad, badN)
	}
	if len(minutes) != 1 || minutes[0].Requests != 3 || minutes[0].Failed != 1 {
		t.Errorf("minutes %+v", minutes)
	}
}

func TestHistogramQuantiles(t *testing.T) {
	var h histogram
	for range 99 {
		h.add(3 * time.Millisecond)
	}
	h.add(900 * time.Millisecond)
	if p50, p99, p100 := h.quantile(0.5), h.quantile(0.99), h.quantile(1); p50 != 4096*time.Microsecond || p99 != p50 || p100 < 900*time.Millisecond || p100 > 1800*time.Millisecond {
		t.Errorf("p50 %s p99 %s max %s", p50, p99, p100)
	}
}

func TestFrontendAnswersAreJudgedWithTheirBackEnds(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	l := newTrafficLog()
	l.observe(t0, route("frontend", "http://frontend.ns.example.com", percent("frontend-00001", 100)))
	l.observe(t0, route("private", "http://private.ns.svc.cluster.local", percent("private-00001", 100)))
	ask := func(body string) answer {
		a := answer{target: "frontend", host: "frontend.ns.example.com", start: t0.Add(time.Minute), end: t0.Add(time.Minute), status: 200}
		parseFrontend(&a, []byte(body))
		return a
	}
	cases := []struct {
		body, want string
	}{
		{"frontend frontend-00001 asked http://private.ns.svc.cluster.local (200 in 2ms): Hello Ferry! Revision private-00001, pod p (pid 9)\n", verdictOK},
		{"frontend frontend-00001 asked http://private.ns.svc.cluster.local (502 in 2ms): no pod\n", verdictFailed},
		{"frontend frontend-00001 asked http://private.ns.svc.cluster.local (200 in 2ms): Hello Ferry! Revision private-00009, pod p (pid 9)\n", verdictWrongRev},
		{"frontend frontend-00007 asked http://private.ns.svc.cluster.local (200 in 2ms): Hello Ferry! Revision private-00001, pod p (pid 9)\n", verdictWrongRev},
	}
	for _, c := range cases {
		if got := judge(ask(c.body), l, grace); got != c.want {
			t.Errorf("%q: %q, want %q", c.body, got, c.want)
		}
	}
}
