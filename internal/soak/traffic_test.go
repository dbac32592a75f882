package soak

import (
	"testing"
	"time"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func route(name, url string, targets ...v1.TrafficTarget) *v1.Route {
	r := &v1.Route{ObjectMeta: metav1.ObjectMeta{Name: name}}
	r.Status.URL = url
	r.Status.Traffic = targets
	return r
}

func percent(rev string, p int64) v1.TrafficTarget {
	return v1.TrafficTarget{RevisionName: rev, Percent: ptr.To(p)}
}

func tag(rev, tag, url string) v1.TrafficTarget {
	return v1.TrafficTarget{RevisionName: rev, Tag: tag, URL: url, Percent: ptr.To[int64](0)}
}

func TestTrafficLogJudgesAnswersByTheNamingsAroundThem(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	l := newTrafficLog()
	l.observe(at(0), route("split", "http://split.ns.example.com", percent("split-a", 100), percent("split-b", 0),
		tag("split-b", "next", "http://next-split.ns.example.com")))
	l.observe(at(30), route("split", "http://split.ns.example.com", percent("split-a", 0), percent("split-b", 100)))
	l.observe(at(60), route("split", "http://split.ns.soak.example.org", percent("split-b", 100)))

	const host, moved, tagHost = "split.ns.example.com", "split.ns.soak.example.org", "next-split.ns.example.com"
	cases := []struct {
		name     string
		host     string
		rev      string
		from, to int
		named    bool
	}{
		{"the only Revision with traffic", host, "split-a", 10, 11, true},
		{"0 % is not named on the Route's host", host, "split-b", 10, 11, false},
		{"the old split, just before the flip", host, "split-a", 29, 29, true},
		{"the old split long after the flip", host, "split-a", 40, 41, false},
		{"the new split, just after the flip", host, "split-b", 31, 31, true},
		{"a tag names its Revision on its own host", tagHost, "split-b", 10, 11, true},
		{"a tag does not name another Revision", tagHost, "split-a", 10, 11, false},
		{"a Revision nobody ever named", host, "split-c", 0, 100, false},
		{"the moved host names the Revision", moved, "split-b", 61, 62, true},
		{"a request spanning the flip may see either", host, "split-a", 25, 35, true},
	}
	for _, c := range cases {
		if got := l.named(c.host, c.rev, at(c.from), at(c.to)); got != c.named {
			t.Errorf("%s: named(%s, %s, %d..%ds) = %v, want %v", c.name, c.host, c.rev, c.from, c.to, got, c.named)
		}
	}

	if got := l.host("split", ""); got != moved {
		t.Errorf("the Route's current host is %q, want %q", got, moved)
	}
	if got := l.host("split", "next"); got != "" {
		t.Errorf("the tag dropped at 30s still has host %q", got)
	}
	movedCases := []struct {
		host     string
		from, to int
		moved    bool
	}{
		{host, 10, 11, false}, // served then: a 404 is a failure
		{host, 59, 61, true},  // the domain moved during the request
		{host, 70, 71, true},
		{moved, 10, 11, true}, // not served yet
		{tagHost, 31, 32, true},
		{tagHost, 10, 11, false},
	}
	for _, c := range movedCases {
		if got := l.moved(c.host, at(c.from), at(c.to)); got != c.moved {
			t.Errorf("moved(%s, %d..%ds) = %v, want %v", c.host, c.from, c.to, got, c.moved)
		}
	}

	l.gone(at(90), "split")
	if l.host("split", "") != "" || l.named(moved, "split-b", at(91), at(92)) {
		t.Error("a deleted Route's host still serves")
	}
}
