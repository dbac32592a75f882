package soak

import (
	"testing"
	"time"
)

func TestReadinessLogBoundsNotReadyAfterTheLatestChange(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	const bound = 60 * time.Second
	cases := []struct {
		name  string
		steps func(l *readinessLog)
		now   int
		late  int
	}{
		{"Ready within the bound of its creation", func(l *readinessLog) {
			l.observe(at(0), "Service/a", 1, false, "creating")
			l.observe(at(30), "Service/a", 1, true, "")
		}, 100, 0},
		{"not Ready past the bound of its creation", func(l *readinessLog) {
			l.observe(at(0), "Service/a", 1, false, "creating")
			l.observe(at(90), "Service/a", 1, true, "")
		}, 100, 1},
		{"a new generation starts the clock again", func(l *readinessLog) {
			l.observe(at(0), "Service/a", 1, false, "creating")
			l.observe(at(50), "Service/a", 2, false, "updated")
			l.observe(at(100), "Service/a", 2, true, "")
		}, 120, 0},
		{"a fault starts every object's clock again", func(l *readinessLog) {
			l.observe(at(0), "Service/a", 1, false, "creating")
			l.struck(at(40))
			l.observe(at(95), "Service/a", 1, true, "")
		}, 120, 0},
		{"still not Ready at the end is judged then", func(l *readinessLog) {
			l.observe(at(0), "Service/a", 1, true, "")
			l.observe(at(10), "Service/a", 2, false, "stuck")
		}, 100, 1},
		{"still not Ready at the end, within the bound", func(l *readinessLog) {
			l.observe(at(0), "Service/a", 1, true, "")
			l.observe(at(50), "Service/a", 2, false, "rolling")
		}, 100, 0},
		{"a deleted object is not judged after", func(l *readinessLog) {
			l.observe(at(0), "Service/a", 1, false, "creating")
			l.deletedAt(at(20), "Service/a")
		}, 200, 0},
		{"flapping after a long quiet time is late", func(l *readinessLog) {
			l.observe(at(0), "Service/a", 1, true, "")
			l.observe(at(300), "Service/a", 1, false, "lost its pods")
			l.observe(at(301), "Service/a", 1, true, "")
		}, 400, 1},
		{"the soak's own write counts as a change before the watch sees it", func(l *readinessLog) {
			l.observe(at(0), "Service/a", 1, true, "")
			l.changed(at(200), "Service/a")
			l.observe(at(201), "Service/a", 1, false, "old generation still observed")
			l.observe(at(230), "Service/a", 2, true, "")
		}, 400, 0},
	}
	for _, c := range cases {
		l := newReadinessLog()
		c.steps(l)
		if got := l.late(at(c.now), bound, nil); len(got) != c.late {
			t.Errorf("%s: %d late, want %d: %v", c.name, len(got), c.late, got)
		}
	}
}

func TestReadinessLogExemptsExpectedFailures(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	r := &run{o: Options{ReadyBound: time.Minute}, crashes: []crashWindow{{from: at(100), to: at(200)}}}
	cases := []struct {
		object   string
		from, to int
		exempt   bool
	}{
		{"Service/crashy", 101, 230, true},       // Ready again within the bound of the rollback
		{"Configuration/crashy", 101, 259, true}, //
		{"Service/crashy", 101, 300, false},      // not Ready long after the rollback
		{"Service/crashy", 50, 150, false},       // began before the crash
		{"Service/plain", 101, 150, false},       // only crashy is expected to fail
		{"Route/crashy", 101, 150, false},        // traffic stays on the Revision before: the Route stays Ready
	}
	for _, c := range cases {
		if got := r.expectedFailure(c.object, at(c.from), at(c.to)); got != c.exempt {
			t.Errorf("expectedFailure(%s, %d..%ds) = %v, want %v", c.object, c.from, c.to, got, c.exempt)
		}
	}
}
