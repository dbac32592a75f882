package rollout

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

var t0 = time.Unix(1_700_000_000, 0)

func at(d time.Duration) time.Time { return t0.Add(d) }

func ns(d time.Duration) int64 { return at(d).UnixNano() }

func latest(cfg, tag string, percent int64) v1.TrafficTarget {
	return v1.TrafficTarget{ConfigurationName: cfg, Tag: tag, LatestRevision: ptr(true), Percent: ptr(percent)}
}

func named(rev, tag string, percent int64) v1.TrafficTarget {
	return v1.TrafficTarget{RevisionName: rev, Tag: tag, LatestRevision: ptr(false), Percent: ptr(percent)}
}

// resolve stands in for traffic.Resolve: revs names the Revision of each target.
func resolve(spec []v1.TrafficTarget, revs ...string) []v1.TrafficTarget {
	out := make([]v1.TrafficTarget, len(spec))
	for i, t := range spec {
		out[i] = v1.TrafficTarget{Tag: t.Tag, RevisionName: revs[i], LatestRevision: t.LatestRevision, Percent: t.Percent}
	}
	return out
}

func one(cfg string, percent int, revs ...RevisionRollout) *ConfigurationRollout {
	return &ConfigurationRollout{ConfigurationName: cfg, Percent: percent, Revisions: revs}
}

// tagged is a tag's host's state: the tag's Configuration at 100 %.
func tagged(cfg, tag string, revs ...RevisionRollout) *ConfigurationRollout {
	c := one(cfg, 100, revs...)
	c.Tag = tag
	return c
}

func rev(name string, percent int) RevisionRollout { return RevisionRollout{name, percent} }

func TestBuild(t *testing.T) {
	for _, tc := range []struct {
		name string
		spec []v1.TrafficTarget
		revs []string
		want []*ConfigurationRollout
	}{{
		name: "latest target",
		spec: []v1.TrafficTarget{latest("c", "", 100)},
		revs: []string{"c-1"},
		want: []*ConfigurationRollout{one("c", 100, rev("c-1", 100))},
	}, {
		name: "named revisions do not roll",
		spec: []v1.TrafficTarget{named("c-1", "", 70), latest("c", "", 30)},
		revs: []string{"c-1", "c-2"},
		want: []*ConfigurationRollout{one("c", 30, rev("c-2", 30))},
	}, {
		name: "a Configuration's percent split across tags is one rollout, each tag's host another",
		spec: []v1.TrafficTarget{latest("c", "a", 40), latest("c", "", 40), latest("d", "b", 20)},
		revs: []string{"c-1", "c-1", "d-1"},
		want: []*ConfigurationRollout{
			one("c", 80, rev("c-1", 80)), one("d", 20, rev("d-1", 20)),
			tagged("c", "a", rev("c-1", 100)), tagged("d", "b", rev("d-1", 100)),
		},
	}, {
		name: "tag-only target: its host rolls",
		spec: []v1.TrafficTarget{latest("c", "", 100), latest("d", "candidate", 0)},
		revs: []string{"c-1", "d-1"},
		want: []*ConfigurationRollout{one("c", 100, rev("c-1", 100)), tagged("d", "candidate", rev("d-1", 100))},
	}, {
		name: "a tag on a named Revision does not roll",
		spec: []v1.TrafficTarget{latest("c", "", 90), named("c-1", "old", 10)},
		revs: []string{"c-2", "c-1"},
		want: []*ConfigurationRollout{one("c", 90, rev("c-2", 90))},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Build(tc.spec, resolve(tc.spec, tc.revs...)).Configurations); diff != "" {
				t.Error("(-want +got)\n", diff)
			}
		})
	}
}

// TestRolloutSteps follows one rollout of 100 % over 6 s, the KIngress taking 0.5 s
// to serve each change: 1 %, then a pace of 5 steps of 20 % a second.
func TestRolloutSteps(t *testing.T) {
	spec := []v1.TrafficTarget{latest("c", "", 100)}
	before := Build(spec, resolve(spec, "c-1"))
	desired := Build(spec, resolve(spec, "c-2"))

	ro, next := Step(desired, before, at(0))
	if !next.IsZero() {
		t.Errorf("next step before the pace is known = %v, want none", next)
	}
	want := one("c", 100, rev("c-1", 99), rev("c-2", 1))
	want.StepParams.StartTime = ns(0)
	if diff := cmp.Diff(want, ro.Configurations[0]); diff != "" {
		t.Fatal("start (-want +got)\n", diff)
	}

	// Not ready yet: nothing moves, nothing scheduled.
	ro, next = Step(desired, Parse(ro.String()), at(300*time.Millisecond))
	if diff := cmp.Diff(want, ro.Configurations[0]); diff != "" || !next.IsZero() {
		t.Fatalf("before ready: next %v (-want +got)\n%s", next, diff)
	}

	prev := Parse(ro.String())
	prev.ObserveReady(at(500*time.Millisecond), 6*time.Second)
	want.StepParams = Params{StartTime: ns(0), StepDuration: int64(time.Second), StepSize: 20, NextStepTime: ns(1500 * time.Millisecond)}
	if diff := cmp.Diff(want, prev.Configurations[0]); diff != "" {
		t.Fatal("paced (-want +got)\n", diff)
	}

	served := []int{1}
	now := 500 * time.Millisecond
	for !prev.Done() {
		ro, next = Step(desired, prev, at(now))
		c := ro.Configurations[0]
		served = append(served, c.Revisions[len(c.Revisions)-1].Percent)
		if !ro.Done() && next != time.Unix(0, c.StepParams.NextStepTime) {
			t.Fatalf("at %v: next = %v, want the state's %v", now, next, c.StepParams.NextStepTime)
		}
		if ro.Done() && (!next.IsZero() || c.StepParams != (Params{})) {
			t.Fatalf("done at %v but next %v, params %+v", now, next, c.StepParams)
		}
		prev = Parse(ro.String())
		if prev == nil {
			t.Fatalf("at %v: state %s does not parse", now, ro)
		}
		now += time.Second
	}
	// The first Step after ObserveReady is not due yet (0.5 s < 1.5 s).
	if diff := cmp.Diff([]int{1, 1, 21, 41, 61, 81, 100}, served); diff != "" {
		t.Error("c-2's percent per step (-want +got)\n", diff)
	}
	if diff := cmp.Diff(desired, prev); diff != "" {
		t.Error("finished state (-want +got)\n", diff)
	}
}

func TestStep(t *testing.T) {
	paced := func(c *ConfigurationRollout, next time.Duration, size int) *ConfigurationRollout {
		c.StepParams = Params{StartTime: ns(-10 * time.Second), StepDuration: int64(time.Second), StepSize: size, NextStepTime: ns(next)}
		return c
	}
	started := func(c *ConfigurationRollout) *ConfigurationRollout {
		c.StepParams = Params{StartTime: ns(0)}
		return c
	}
	for _, tc := range []struct {
		name          string
		desired, prev []*ConfigurationRollout
		want          []*ConfigurationRollout
		next          time.Duration // from t0; 0: none
	}{{
		name:    "no previous state: at once",
		desired: []*ConfigurationRollout{one("c", 100, rev("c-2", 100))},
		want:    []*ConfigurationRollout{one("c", 100, rev("c-2", 100))},
	}, {
		name:    "same Revision: steady",
		desired: []*ConfigurationRollout{one("c", 100, rev("c-1", 100))},
		prev:    []*ConfigurationRollout{one("c", 100, rev("c-1", 100))},
		want:    []*ConfigurationRollout{one("c", 100, rev("c-1", 100))},
	}, {
		name:    "step not due yet",
		desired: []*ConfigurationRollout{one("c", 100, rev("c-2", 100))},
		prev:    []*ConfigurationRollout{paced(one("c", 100, rev("c-1", 60), rev("c-2", 40)), time.Second, 20)},
		want:    []*ConfigurationRollout{paced(one("c", 100, rev("c-1", 60), rev("c-2", 40)), time.Second, 20)},
		next:    time.Second,
	}, {
		name:    "step due",
		desired: []*ConfigurationRollout{one("c", 100, rev("c-2", 100))},
		prev:    []*ConfigurationRollout{paced(one("c", 100, rev("c-1", 60), rev("c-2", 40)), 0, 20)},
		want:    []*ConfigurationRollout{paced(one("c", 100, rev("c-1", 40), rev("c-2", 60)), time.Second, 20)},
		next:    time.Second,
	}, {
		name:    "last step clears the pace",
		desired: []*ConfigurationRollout{one("c", 100, rev("c-2", 100))},
		prev:    []*ConfigurationRollout{paced(one("c", 100, rev("c-1", 10), rev("c-2", 90)), 0, 20)},
		want:    []*ConfigurationRollout{one("c", 100, rev("c-2", 100))},
	}, {
		name:    "new Revision mid-rollout: starts from the current split",
		desired: []*ConfigurationRollout{one("c", 100, rev("c-3", 100))},
		prev:    []*ConfigurationRollout{paced(one("c", 100, rev("c-1", 60), rev("c-2", 40)), time.Second, 20)},
		want:    []*ConfigurationRollout{started(one("c", 100, rev("c-1", 60), rev("c-2", 39), rev("c-3", 1)))},
	}, {
		name:    "older Revisions drain newest first, together",
		desired: []*ConfigurationRollout{one("c", 100, rev("c-3", 100))},
		prev:    []*ConfigurationRollout{paced(one("c", 100, rev("c-1", 60), rev("c-2", 15), rev("c-3", 25)), 0, 20)},
		want:    []*ConfigurationRollout{paced(one("c", 100, rev("c-1", 55), rev("c-3", 45)), time.Second, 20)},
		next:    time.Second,
	}, {
		name:    "a Revision at 1 % goes to 0 and is dropped when the next starts",
		desired: []*ConfigurationRollout{one("c", 100, rev("c-3", 100))},
		prev:    []*ConfigurationRollout{started(one("c", 100, rev("c-1", 99), rev("c-2", 1)))},
		want:    []*ConfigurationRollout{started(one("c", 100, rev("c-1", 99), rev("c-3", 1)))},
	}, {
		name:    "share grows: the newest Revision gets the difference",
		desired: []*ConfigurationRollout{one("c", 80, rev("c-2", 80))},
		prev:    []*ConfigurationRollout{paced(one("c", 50, rev("c-1", 30), rev("c-2", 20)), time.Second, 10)},
		want:    []*ConfigurationRollout{paced(one("c", 80, rev("c-1", 30), rev("c-2", 50)), time.Second, 10)},
		next:    time.Second,
	}, {
		name:    "share shrinks: taken from the oldest first",
		desired: []*ConfigurationRollout{one("c", 30, rev("c-3", 30))},
		prev:    []*ConfigurationRollout{paced(one("c", 100, rev("c-1", 50), rev("c-2", 30), rev("c-3", 20)), time.Second, 20)},
		want:    []*ConfigurationRollout{paced(one("c", 30, rev("c-2", 10), rev("c-3", 20)), time.Second, 20)},
		next:    time.Second,
	}, {
		name:    "1 % does not roll",
		desired: []*ConfigurationRollout{one("c", 1, rev("c-2", 1))},
		prev:    []*ConfigurationRollout{one("c", 1, rev("c-1", 1))},
		want:    []*ConfigurationRollout{one("c", 1, rev("c-2", 1))},
	}, {
		name:    "a Configuration new to the split and one gone",
		desired: []*ConfigurationRollout{one("d", 100, rev("d-1", 100))},
		prev:    []*ConfigurationRollout{paced(one("c", 100, rev("c-1", 60), rev("c-2", 40)), time.Second, 20)},
		want:    []*ConfigurationRollout{one("d", 100, rev("d-1", 100))},
	}, {
		name:    "two Configurations: the earliest step is next",
		desired: []*ConfigurationRollout{one("c", 50, rev("c-2", 50)), one("d", 50, rev("d-2", 50))},
		prev: []*ConfigurationRollout{
			paced(one("c", 50, rev("c-1", 30), rev("c-2", 20)), 3*time.Second, 10),
			paced(one("d", 50, rev("d-1", 30), rev("d-2", 20)), 2*time.Second, 10),
		},
		want: []*ConfigurationRollout{
			paced(one("c", 50, rev("c-1", 30), rev("c-2", 20)), 3*time.Second, 10),
			paced(one("d", 50, rev("d-1", 30), rev("d-2", 20)), 2*time.Second, 10),
		},
		next: 2 * time.Second,
	}, {
		name:    "a tag removed mid-rollout: its state goes",
		desired: []*ConfigurationRollout{one("c", 100, rev("c-2", 100))},
		prev:    []*ConfigurationRollout{paced(tagged("c", "a", rev("c-1", 50), rev("c-2", 50)), time.Second, 10)},
		want:    []*ConfigurationRollout{one("c", 100, rev("c-2", 100))},
	}, {
		name:    "a tag added: its host serves the latest at once",
		desired: []*ConfigurationRollout{one("c", 100, rev("c-2", 100)), tagged("c", "a", rev("c-2", 100))},
		prev:    []*ConfigurationRollout{paced(one("c", 100, rev("c-1", 60), rev("c-2", 40)), time.Second, 20)},
		want:    []*ConfigurationRollout{paced(one("c", 100, rev("c-1", 60), rev("c-2", 40)), time.Second, 20), tagged("c", "a", rev("c-2", 100))},
		next:    time.Second,
	}, {
		name:    "a tag's Revision changes: its host rolls on its own",
		desired: []*ConfigurationRollout{one("c", 100, rev("c-1", 100)), tagged("d", "a", rev("d-2", 100))},
		prev:    []*ConfigurationRollout{one("c", 100, rev("c-1", 100)), tagged("d", "a", rev("d-1", 100))},
		want:    []*ConfigurationRollout{one("c", 100, rev("c-1", 100)), started(tagged("d", "a", rev("d-1", 99), rev("d-2", 1)))},
	}, {
		name:    "the default split and a tag step together",
		desired: []*ConfigurationRollout{one("c", 100, rev("c-2", 100)), tagged("c", "a", rev("c-2", 100))},
		prev: []*ConfigurationRollout{
			paced(one("c", 100, rev("c-1", 60), rev("c-2", 40)), 0, 20),
			paced(tagged("c", "a", rev("c-1", 60), rev("c-2", 40)), 0, 20),
		},
		want: []*ConfigurationRollout{
			paced(one("c", 100, rev("c-1", 40), rev("c-2", 60)), time.Second, 20),
			paced(tagged("c", "a", rev("c-1", 40), rev("c-2", 60)), time.Second, 20),
		},
		next: time.Second,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			var prev *Rollout
			if tc.prev != nil {
				prev = &Rollout{Configurations: tc.prev}
			}
			before := ""
			if prev != nil {
				before = prev.String()
			}
			got, next := Step(&Rollout{Configurations: tc.desired}, prev, t0)
			if diff := cmp.Diff(tc.want, got.Configurations); diff != "" {
				t.Error("(-want +got)\n", diff)
			}
			wantNext := time.Time{}
			if tc.next != 0 {
				wantNext = at(tc.next)
			}
			if !next.Equal(wantNext) {
				t.Errorf("next = %v, want %v", next, wantNext)
			}
			if prev != nil && prev.String() != before {
				t.Error("Step changed prev")
			}
		})
	}
}

func TestObserveReady(t *testing.T) {
	for _, tc := range []struct {
		name     string
		percent  int
		took     time.Duration
		duration time.Duration
		want     Params
	}{{
		name: "1 s steps fill the duration", percent: 100, took: 200 * time.Millisecond, duration: 6 * time.Second,
		want: Params{StepDuration: int64(time.Second), StepSize: 20},
	}, {
		name: "no step under 1 %", percent: 100, took: time.Second, duration: 1000 * time.Second,
		want: Params{StepDuration: int64(999 * time.Second / 99), StepSize: 1},
	}, {
		name: "steps as long as the first 1 % took, in whole seconds", percent: 100, took: 2500 * time.Millisecond, duration: 12 * time.Second,
		want: Params{StepDuration: int64(3 * time.Second), StepSize: 33},
	}, {
		name: "the first 1 % took longer than the duration: one step", percent: 100, took: 10 * time.Second, duration: 5 * time.Second,
		want: Params{StepDuration: int64(time.Second), StepSize: 99},
	}, {
		name: "a share of the split", percent: 11, took: time.Second, duration: 60 * time.Second,
		want: Params{StepDuration: int64(59 * time.Second / 10), StepSize: 1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := one("c", tc.percent, rev("c-1", tc.percent-1), rev("c-2", 1))
			c.StepParams.StartTime = ns(0)
			r := &Rollout{Configurations: []*ConfigurationRollout{c}}
			r.ObserveReady(at(tc.took), tc.duration)
			tc.want.StartTime = ns(0)
			tc.want.NextStepTime = ns(tc.took) + tc.want.StepDuration
			if diff := cmp.Diff(tc.want, c.StepParams); diff != "" {
				t.Error("(-want +got)\n", diff)
			}
			// Paced once: a later observation keeps the pace.
			r.ObserveReady(at(tc.took+time.Minute), tc.duration)
			if diff := cmp.Diff(tc.want, c.StepParams); diff != "" {
				t.Error("second observation (-want +got)\n", diff)
			}
		})
	}
}

// TestDurationChange: a rollout keeps the pace it started with when the duration
// changes (as in Knative); the next rollout takes the new one.
func TestDurationChange(t *testing.T) {
	c := one("c", 100, rev("c-1", 99), rev("c-2", 1))
	c.StepParams.StartTime = ns(0)
	prev := &Rollout{Configurations: []*ConfigurationRollout{c}}
	prev.ObserveReady(at(time.Second), 100*time.Second)
	if got := c.StepParams; got.StepSize != 1 || got.StepDuration != int64(time.Second) {
		t.Fatalf("pace %+v, want 1 %% a second", got)
	}
	prev.ObserveReady(at(2*time.Second), 3*time.Second)
	spec := []v1.TrafficTarget{latest("c", "", 100)}
	ro, _ := Step(Build(spec, resolve(spec, "c-2")), prev, at(2*time.Second))
	if got := ro.Configurations[0].StepParams; got.StepSize != 1 || got.StepDuration != int64(time.Second) {
		t.Errorf("pace after the duration changed %+v, want 1 %% a second still", got)
	}
}

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		config      int
		want        time.Duration
	}{
		{"none", nil, 0, 0},
		{"config-network, whole seconds", nil, 120, 2 * time.Minute},
		{"annotation wins", map[string]string{"serving.knative.dev/rollout-duration": "90s"}, 120, 90 * time.Second},
		{"old spelling", map[string]string{"serving.knative.dev/rolloutDuration": "1m"}, 0, time.Minute},
		{"whole seconds", map[string]string{"serving.knative.dev/rollout-duration": "2500ms"}, 0, 2 * time.Second},
		{"under a second: config", map[string]string{"serving.knative.dev/rollout-duration": "500ms"}, 7, 7 * time.Second},
		{"zero annotation: config", map[string]string{"serving.knative.dev/rollout-duration": "0s"}, 7, 7 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Duration(tc.annotations, tc.config); got != tc.want {
				t.Errorf("Duration = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestServed(t *testing.T) {
	state := func(cs ...*ConfigurationRollout) *Rollout { return &Rollout{Configurations: cs} }
	entry := func(tag, name string, percent int64, latest bool) v1.TrafficTarget {
		return v1.TrafficTarget{Tag: tag, RevisionName: name, Percent: ptr(percent), LatestRevision: ptr(latest)}
	}
	for _, tc := range []struct {
		name  string
		spec  []v1.TrafficTarget
		revs  []string
		state *Rollout
		// want is both the default split and status.traffic, unless def is set: then
		// def, status and hosts (if set, TagHosts) are.
		want, def, status, hosts []v1.TrafficTarget
	}{{
		name:  "done: as resolved",
		spec:  []v1.TrafficTarget{latest("c", "", 100)},
		revs:  []string{"c-2"},
		state: state(one("c", 100, rev("c-2", 100))),
		want:  []v1.TrafficTarget{entry("", "c-2", 100, true)},
	}, {
		name:  "rolling, beside a named Revision that does not",
		spec:  []v1.TrafficTarget{named("c-1", "old", 20), latest("c", "", 80)},
		revs:  []string{"c-1", "c-3"},
		state: state(one("c", 80, rev("c-2", 50), rev("c-3", 30))),
		want:  []v1.TrafficTarget{entry("old", "c-1", 20, false), entry("", "c-2", 50, true), entry("", "c-3", 30, true)},
	}, {
		name: "a Configuration split across tags: spec order takes the oldest first; a tag shows its host's split",
		spec: []v1.TrafficTarget{latest("c", "a", 40), latest("c", "", 60)},
		revs: []string{"c-2", "c-2"},
		state: state(one("c", 100, rev("c-1", 70), rev("c-2", 30)),
			tagged("c", "a", rev("c-1", 70), rev("c-2", 30))),
		def:    []v1.TrafficTarget{entry("a", "c-1", 40, true), entry("", "c-1", 30, true), entry("", "c-2", 30, true)},
		hosts:  []v1.TrafficTarget{entry("a", "c-1", 70, true), entry("a", "c-2", 30, true)},
		status: []v1.TrafficTarget{entry("a", "c-1", 70, true), entry("a", "c-2", 30, true), entry("", "c-1", 30, true), entry("", "c-2", 30, true)},
	}, {
		name: "a tag-only target: its host's split, apart from the default split",
		spec: []v1.TrafficTarget{latest("c", "", 100), latest("c", "next", 0)},
		revs: []string{"c-2", "c-2"},
		state: state(one("c", 100, rev("c-1", 70), rev("c-2", 30)),
			tagged("c", "next", rev("c-1", 71), rev("c-2", 29))),
		def:    []v1.TrafficTarget{entry("", "c-1", 70, true), entry("", "c-2", 30, true), entry("next", "c-2", 0, true)},
		hosts:  []v1.TrafficTarget{entry("next", "c-1", 71, true), entry("next", "c-2", 29, true)},
		status: []v1.TrafficTarget{entry("", "c-1", 70, true), entry("", "c-2", 30, true), entry("next", "c-1", 71, true), entry("next", "c-2", 29, true)},
	}, {
		name:   "a tag added mid-rollout: its host serves the latest, the rest of its share is untagged",
		spec:   []v1.TrafficTarget{latest("c", "a", 100)},
		revs:   []string{"c-2"},
		state:  state(one("c", 100, rev("c-1", 70), rev("c-2", 30)), tagged("c", "a", rev("c-2", 100))),
		def:    []v1.TrafficTarget{entry("a", "c-1", 70, true), entry("a", "c-2", 30, true)},
		hosts:  []v1.TrafficTarget{entry("a", "c-2", 100, true)},
		status: []v1.TrafficTarget{entry("", "c-1", 70, true), entry("a", "c-2", 30, true)},
	}, {
		name: "a tag's host rolling alone: the default split as resolved",
		spec: []v1.TrafficTarget{latest("c", "", 100), latest("d", "a", 0)},
		revs: []string{"c-1", "d-2"},
		state: state(one("c", 100, rev("c-1", 100)),
			tagged("d", "a", rev("d-1", 80), rev("d-2", 20))),
		def:    []v1.TrafficTarget{entry("", "c-1", 100, true), entry("a", "d-2", 0, true)},
		hosts:  []v1.TrafficTarget{entry("a", "d-1", 80, true), entry("a", "d-2", 20, true)},
		status: []v1.TrafficTarget{entry("", "c-1", 100, true), entry("a", "d-1", 80, true), entry("a", "d-2", 20, true)},
	}, {
		name: "a tag's host and the default split apart: Revisions only the default split serves are untagged",
		spec: []v1.TrafficTarget{latest("c", "a", 100)},
		revs: []string{"c-3"},
		state: state(one("c", 100, rev("c-1", 10), rev("c-2", 60), rev("c-3", 30)),
			tagged("c", "a", rev("c-2", 70), rev("c-3", 30))),
		def:    []v1.TrafficTarget{entry("a", "c-1", 10, true), entry("a", "c-2", 60, true), entry("a", "c-3", 30, true)},
		hosts:  []v1.TrafficTarget{entry("a", "c-2", 70, true), entry("a", "c-3", 30, true)},
		status: []v1.TrafficTarget{entry("a", "c-2", 70, true), entry("a", "c-3", 30, true), entry("", "c-1", 10, true)},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			resolved := resolve(tc.spec, tc.revs...)
			def, status := tc.def, tc.status
			if def == nil {
				def, status = tc.want, tc.want
			}
			if diff := cmp.Diff(def, Default(tc.spec, resolved, tc.state)); diff != "" {
				t.Error("Default (-want +got)\n", diff)
			}
			if diff := cmp.Diff(status, Served(tc.spec, resolved, tc.state)); diff != "" {
				t.Error("Served (-want +got)\n", diff)
			}
			if tc.hosts != nil {
				if diff := cmp.Diff(tc.hosts, TagHosts(resolved, tc.state)); diff != "" {
					t.Error("TagHosts (-want +got)\n", diff)
				}
			}
		})
	}
}

func TestTagHosts(t *testing.T) {
	spec := []v1.TrafficTarget{latest("c", "", 90), named("c-1", "old", 10), latest("d", "next", 0)}
	want := []v1.TrafficTarget{
		{Tag: "old", RevisionName: "c-1", LatestRevision: ptr(false), Percent: ptr[int64](100)},
		{Tag: "next", RevisionName: "d-1", LatestRevision: ptr(true), Percent: ptr[int64](100)},
	}
	if diff := cmp.Diff(want, TagHosts(resolve(spec, "c-2", "c-1", "d-1"), nil)); diff != "" {
		t.Error("no rollout (-want +got)\n", diff)
	}
}

func TestParse(t *testing.T) {
	// As Knative writes it.
	knative := `{"configurations":[{"configurationName":"c","percent":100,"revisions":[{"revisionName":"c-1","percent":60},{"revisionName":"c-2","percent":40}],"stepParams":{"starttime":1,"nextStepTime":3,"stepDuration":2,"stepSize":20}}]}`
	got := Parse(knative)
	want := one("c", 100, rev("c-1", 60), rev("c-2", 40))
	want.StepParams = Params{StartTime: 1, NextStepTime: 3, StepDuration: 2, StepSize: 20}
	if got == nil || !cmp.Equal([]*ConfigurationRollout{want}, got.Configurations) {
		t.Fatalf("Parse(%s) = %+v", knative, got)
	}
	if s := got.String(); s != knative {
		t.Errorf("String() = %s, want %s", s, knative)
	}
	for _, bad := range []string{
		"", "{", `{"configurations":[null]}`,
		`{"configurations":[{"configurationName":"c","percent":101,"revisions":[{"revisionName":"c-1","percent":101}]}]}`,
		`{"configurations":[{"configurationName":"c","percent":100,"revisions":[{"revisionName":"c-1","percent":90}]}]}`,
		`{"configurations":[{"configurationName":"c","percent":10,"revisions":[{"revisionName":"c-1","percent":10}],"stepParams":{"stepSize":20}}]}`,
	} {
		if r := Parse(bad); r != nil {
			t.Errorf("Parse(%q) = %+v, want nil", bad, r)
		}
	}
}

// TestTagRolloutSteps follows a rollout of a Route whose default split and tag "next"
// both follow c: the two roll on the same clock, so each step changes both at once (one
// KIngress update per step), and the tag's host serves what status shows for it.
func TestTagRolloutSteps(t *testing.T) {
	spec := []v1.TrafficTarget{latest("c", "", 100), latest("c", "next", 0)}
	desired := Build(spec, resolve(spec, "c-2", "c-2"))
	ro, _ := Step(desired, Build(spec, resolve(spec, "c-1", "c-1")), at(0))
	prev := Parse(ro.String())
	prev.ObserveReady(at(time.Second), 6*time.Second)
	var splits []int
	now := time.Second
	for !prev.Done() {
		ro, next := Step(desired, prev, at(now))
		def, tag := ro.Configurations[0], ro.Configurations[1]
		if !cmp.Equal(def.Revisions, tag.Revisions) || def.StepParams != tag.StepParams {
			t.Fatalf("at %v: default %+v and tag %+v apart", now, def, tag)
		}
		if ro.Done() {
			// Done: status is the spec's again, the tag's 0 % share of the default split.
		} else if diff := cmp.Diff(TagHosts(resolve(spec, "c-2", "c-2"), ro), Served(spec, resolve(spec, "c-2", "c-2"), ro)[len(def.Revisions):]); diff != "" {
			t.Fatalf("at %v: tag's status is not its host's split (-host +status)\n%s", now, diff)
		}
		if !ro.Done() && !next.Equal(time.Unix(0, def.StepParams.NextStepTime)) {
			t.Fatalf("at %v: next %v, want the state's", now, next)
		}
		// A change of split is a KIngress update; both hosts' in one.
		if c := def.Revisions[len(def.Revisions)-1].Percent; len(splits) == 0 || c != splits[len(splits)-1] {
			splits = append(splits, c)
		}
		prev = Parse(ro.String())
		now += 250 * time.Millisecond
	}
	// 6 s, the 1 % served in 1 s: 5 steps of 20 % a second.
	if diff := cmp.Diff([]int{1, 21, 41, 61, 81, 100}, splits); diff != "" {
		t.Error("c-2's percent per split (-want +got)\n", diff)
	}
}

// TestOlderFerryState: an annotation from a Ferry that rolled only the default split
// (no tag entries) continues; a tag's host starts at its latest Revision.
func TestOlderFerryState(t *testing.T) {
	older := `{"configurations":[{"configurationName":"c","percent":100,"revisions":[{"revisionName":"c-1","percent":60},{"revisionName":"c-2","percent":40}],"stepParams":{"starttime":1,"nextStepTime":2,"stepDuration":1000000000,"stepSize":20}}]}`
	prev := Parse(older)
	if prev == nil {
		t.Fatal("older state does not parse")
	}
	spec := []v1.TrafficTarget{latest("c", "", 100), latest("c", "next", 0)}
	resolved := resolve(spec, "c-2", "c-2")
	ro, next := Step(Build(spec, resolved), prev, time.Unix(0, 2))
	wantDef := one("c", 100, rev("c-1", 40), rev("c-2", 60))
	wantDef.StepParams = Params{StartTime: 1, NextStepTime: 2 + int64(time.Second), StepDuration: int64(time.Second), StepSize: 20}
	if diff := cmp.Diff([]*ConfigurationRollout{wantDef, tagged("c", "next", rev("c-2", 100))}, ro.Configurations); diff != "" {
		t.Error("(-want +got)\n", diff)
	}
	if !next.Equal(time.Unix(0, wantDef.StepParams.NextStepTime)) {
		t.Errorf("next = %v", next)
	}
	want := []v1.TrafficTarget{
		{RevisionName: "c-1", LatestRevision: ptr(true), Percent: ptr[int64](40)},
		{RevisionName: "c-2", LatestRevision: ptr(true), Percent: ptr[int64](60)},
		{Tag: "next", RevisionName: "c-2", LatestRevision: ptr(true), Percent: ptr[int64](0)},
	}
	if diff := cmp.Diff(want, Served(spec, resolved, ro)); diff != "" {
		t.Error("status (-want +got)\n", diff)
	}
}
