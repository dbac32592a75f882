package rollout

import (
	"encoding/json"
	"math"
	"slices"
	"strings"
	"time"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// Annotation is the KIngress annotation that holds the rollout state.
const Annotation = netv1alpha1.RolloutAnnotationKey

// Rollout is the rollout state of one Route. The JSON field names are Knative's.
type Rollout struct {
	// Configurations are sorted by tag, then by configuration name.
	Configurations []*ConfigurationRollout `json:"configurations,omitempty"`
}

// ConfigurationRollout is the state of one Configuration's share of one host's
// traffic: the Route's default split (Tag "") or a tag's own host.
type ConfigurationRollout struct {
	ConfigurationName string `json:"configurationName"`
	// Tag is "" for the default split, else the tag whose own host this rolls (a tag
	// has one target, so one entry).
	Tag string `json:"tag,omitempty"`
	// Percent is the Configuration's share of the host's traffic: of the default
	// split, or 100 for a tag's host; Revisions' percents sum to it.
	Percent int `json:"percent"`
	// Revisions serve the share, oldest first; the last is the one rolling in. One
	// Revision: no rollout in progress.
	Revisions  []RevisionRollout `json:"revisions,omitempty"`
	StepParams Params            `json:"stepParams"`
}

// Params time and size the steps. Times are Unix nanoseconds, as Knative writes them.
type Params struct {
	// StartTime is when the newest Revision got its first 1 %.
	StartTime int64 `json:"starttime,omitempty"`
	// NextStepTime is when the next step is due.
	NextStepTime int64 `json:"nextStepTime,omitempty"`
	// StepDuration is the time between steps, in nanoseconds; 0 until the KIngress
	// served the first 1 %, whose time sets the pace.
	StepDuration int64 `json:"stepDuration,omitempty"`
	// StepSize is the percent each step moves.
	StepSize int `json:"stepSize,omitempty"`
}

// RevisionRollout is one Revision's share of the host's traffic (not of its
// Configuration's).
type RevisionRollout struct {
	RevisionName string `json:"revisionName"`
	Percent      int    `json:"percent"`
}

// Duration is the Route's rollout duration: its rollout-duration annotation (a Go
// duration), else config-network's rollout-duration (whole seconds). Like Knative it
// counts whole seconds, so an annotation under a second falls back to the
// configuration.
func Duration(annotations map[string]string, configSeconds int) time.Duration {
	if _, v, ok := v1.RolloutDurationAnnotation.Get(annotations); ok {
		if d, err := time.ParseDuration(v); err == nil && d >= time.Second {
			return d.Truncate(time.Second)
		}
	}
	return time.Duration(configSeconds) * time.Second
}

// Build is the state the traffic asks for, with no rollout, as Knative builds it:
// one entry per Configuration the default split reaches through latestRevision
// targets, and one per tag on a latestRevision target (its host's 100 %, whatever the
// target's share of the default split), each at the Revision resolved for it. spec is
// the Route's defaulted spec traffic, resolved the targets Resolve made of it (same
// order).
func Build(spec, resolved []v1.TrafficTarget) *Rollout {
	r := &Rollout{}
	for i, t := range spec {
		if t.Tag != "" && follows(t) {
			r.Configurations = append(r.Configurations, &ConfigurationRollout{
				ConfigurationName: t.ConfigurationName,
				Tag:               t.Tag,
				Percent:           100,
				Revisions:         []RevisionRollout{{RevisionName: resolved[i].RevisionName, Percent: 100}},
			})
		}
		if !rolls(t) {
			continue
		}
		// Targets naming the same Configuration share its Revision and one entry.
		if c := r.find("", t.ConfigurationName); c != nil {
			c.Percent += int(*t.Percent)
			c.Revisions[0].Percent = c.Percent
			continue
		}
		p := int(*t.Percent)
		r.Configurations = append(r.Configurations, &ConfigurationRollout{
			ConfigurationName: t.ConfigurationName,
			Percent:           p,
			Revisions:         []RevisionRollout{{RevisionName: resolved[i].RevisionName, Percent: p}},
		})
	}
	r.sort()
	return r
}

// rolls says the target follows its Configuration's latest Revision with a share of
// the default split: only those roll in it, a named Revision moves at once.
func rolls(t v1.TrafficTarget) bool {
	return follows(t) && t.Percent != nil && *t.Percent > 0
}

// follows says the target follows its Configuration's latest Revision.
func follows(t v1.TrafficTarget) bool {
	return t.ConfigurationName != "" && t.LatestRevision != nil && *t.LatestRevision
}

// Parse reads the state from the annotation; nil if there is none or it does not add
// up (edited by hand), which starts afresh as Knative does.
func Parse(s string) *Rollout {
	if s == "" {
		return nil
	}
	r := &Rollout{}
	if err := json.Unmarshal([]byte(s), r); err != nil || !r.valid() {
		return nil
	}
	return r
}

// String is the annotation's value.
func (r *Rollout) String() string {
	b, err := json.Marshal(r)
	if err != nil {
		// Plain structs of strings and numbers always marshal.
		panic(err)
	}
	return string(b)
}

func (r *Rollout) valid() bool {
	for _, c := range r.Configurations {
		if c == nil || c.Percent > 100 || c.StepParams.StepSize < 0 || c.StepParams.StepSize > c.Percent {
			return false
		}
		sum := 0
		for _, rev := range c.Revisions {
			sum += rev.Percent
		}
		if sum != c.Percent {
			return false
		}
	}
	return true
}

// Done says no Configuration is rolling.
func (r *Rollout) Done() bool {
	for _, c := range r.Configurations {
		if len(c.Revisions) > 1 {
			return false
		}
	}
	return true
}

// ObserveReady sets the pace of each rollout that started but has none yet, once the
// KIngress serves its first 1 %: a step lasts at least as long as that took, in whole
// seconds (at least 1), and the steps fill what is left of duration.
func (r *Rollout) ObserveReady(now time.Time, duration time.Duration) {
	for _, c := range r.Configurations {
		if c.StepParams.StepDuration != 0 || c.StepParams.StartTime == 0 {
			continue
		}
		took := time.Duration(now.UnixNano() - c.StepParams.StartTime).Seconds()
		c.pace(now.UnixNano(), math.Max(1, math.Ceil(took)), duration.Seconds())
	}
}

// pace computes the step size and duration (Knative's computeProperties): as many
// steps of minStep seconds as fit in the rest of the duration, but no step under 1 %,
// each moving an equal part of the remaining percent.
func (c *ConfigurationRollout) pace(now int64, minStep, duration float64) {
	duration = math.Max(1, duration-minStep)
	steps := math.Max(1, duration/minStep)
	// The first 1 % already moved.
	rest := float64(c.Percent - 1)
	if rest < steps {
		steps = rest
	}
	// Rounding, not truncating: 1.9 % steps as 1 % would nearly double the time.
	c.StepParams.StepSize = int(math.Round(rest / steps))
	c.StepParams.StepDuration = int64(duration / steps * float64(time.Second))
	c.StepParams.NextStepTime = now + c.StepParams.StepDuration
}

// Step merges the desired state (Build) with the previous one at time now and returns
// the state to serve, and when its next step is due (zero: none scheduled). A
// Configuration without a previous state, or with 1 % or less, gets its Revision at
// once; one whose Revision is new starts a rollout from the previous split; one
// rolling takes a step if it is due. prev is not changed.
func Step(desired, prev *Rollout, now time.Time) (*Rollout, time.Time) {
	if prev == nil {
		return desired, time.Time{}
	}
	out := &Rollout{}
	var next int64
	for _, d := range desired.Configurations {
		p := prev.find(d.Tag, d.ConfigurationName)
		if p == nil || d.Percent <= 1 {
			out.Configurations = append(out.Configurations, d)
			continue
		}
		c := step(d, p.clone(), now.UnixNano())
		out.Configurations = append(out.Configurations, c)
		if n := c.StepParams.NextStepTime; n > 0 && (next == 0 || n < next) {
			next = n
		}
	}
	if next == 0 {
		return out, time.Time{}
	}
	return out, time.Unix(0, next)
}

// step is one Configuration's Step; prev is a copy it may change.
func step(desired, prev *ConfigurationRollout, now int64) *ConfigurationRollout {
	if len(prev.Revisions) == 0 {
		return desired
	}
	prev.resize(desired.Percent)
	latest := desired.Revisions[0].RevisionName
	last := prev.Revisions[len(prev.Revisions)-1]
	switch {
	case last.RevisionName == latest && len(prev.Revisions) == 1:
		return desired
	case last.RevisionName == latest:
		// Rolling, pace known or not; the duration it was paced for stays.
		if prev.StepParams.StepSize > 0 && now >= prev.StepParams.NextStepTime {
			prev.advance(now)
		}
		return prev
	}
	// A newer Revision: it starts at 1 %, taken from the newest Revision that has
	// traffic; the older ones keep their shares and are drained, newest first, as the
	// new one grows. The pace is set once the KIngress serves the 1 % (ObserveReady).
	revs := prev.Revisions
	for i := len(revs) - 1; i >= 0; i-- {
		if revs[i].Percent > 0 {
			revs[i].Percent--
			break
		}
	}
	grown := 1
	kept := make([]RevisionRollout, 0, len(revs)+1)
	for _, r := range revs {
		switch {
		case r.RevisionName == latest:
			// Back to a Revision still draining: it continues from its share.
			grown += r.Percent
		case r.Percent > 0:
			kept = append(kept, r)
		}
	}
	return &ConfigurationRollout{
		ConfigurationName: desired.ConfigurationName,
		Tag:               desired.Tag,
		Percent:           desired.Percent,
		Revisions:         append(kept, RevisionRollout{RevisionName: latest, Percent: grown}),
		StepParams:        Params{StartTime: now},
	}
}

// resize makes the Revisions' percents sum to percent, when the Configuration's share
// changed: a larger share goes to the newest Revision, a smaller one is taken from the
// oldest first.
func (c *ConfigurationRollout) resize(percent int) {
	diff := percent - c.Percent
	c.Percent = percent
	switch {
	case diff > 0:
		c.Revisions[len(c.Revisions)-1].Percent += diff
	case diff < 0:
		cut := -diff
		i := 0
		for ; i < len(c.Revisions) && c.Revisions[i].Percent <= cut; i++ {
			cut -= c.Revisions[i].Percent
		}
		if i < len(c.Revisions) {
			c.Revisions[i].Percent -= cut
		}
		c.Revisions = c.Revisions[i:]
	}
	if c.StepParams.StepSize > c.Percent {
		c.StepParams.StepSize = c.Percent
	}
}

// advance moves one step to the newest Revision, taking it from the older ones,
// newest first, and schedules the next step, or clears the pace when done.
func (c *ConfigurationRollout) advance(now int64) {
	n := len(c.Revisions)
	newest := c.Revisions[n-1]
	take := c.StepParams.StepSize
	keep := n - 1
	for i := n - 2; i >= 0 && take > 0; i-- {
		if c.Revisions[i].Percent > take {
			c.Revisions[i].Percent -= take
			take = 0
			break
		}
		take -= c.Revisions[i].Percent
		keep = i
	}
	newest.Percent += c.StepParams.StepSize - take
	if newest.Percent > c.Percent {
		newest.Percent = c.Percent
	}
	c.Revisions = append(c.Revisions[:keep], newest)
	if len(c.Revisions) > 1 {
		c.StepParams.NextStepTime = now + c.StepParams.StepDuration
		return
	}
	c.StepParams = Params{}
}

// Default is the default split the KIngress serves for the state: each rolling
// target is split into one entry per Revision serving it, oldest first, keeping its
// tag and latestRevision; the other targets are resolved as they are. Targets that
// share a Configuration take its Revisions in spec order. spec and resolved are as
// for Build; with no rollout in progress it is resolved itself.
func Default(spec, resolved []v1.TrafficTarget, r *Rollout) []v1.TrafficTarget {
	if r.Done() {
		return resolved
	}
	var out []v1.TrafficTarget
	for _, share := range shares(spec, resolved, r) {
		out = append(out, share...)
	}
	return out
}

// shares is each target's part of the default split (Default), target by target.
func shares(spec, resolved []v1.TrafficTarget, r *Rollout) [][]v1.TrafficTarget {
	left := make(map[string][]RevisionRollout, len(r.Configurations))
	for _, c := range r.Configurations {
		if c.Tag == "" && len(c.Revisions) > 1 {
			left[c.ConfigurationName] = slices.Clone(c.Revisions)
		}
	}
	out := make([][]v1.TrafficTarget, len(spec))
	for i, t := range spec {
		revs, ok := left[t.ConfigurationName]
		if !ok || !rolls(t) {
			out[i] = []v1.TrafficTarget{resolved[i]}
			continue
		}
		want := int(*t.Percent)
		for want > 0 && len(revs) > 0 {
			take := min(want, revs[0].Percent)
			e := resolved[i]
			e.RevisionName, e.Percent = revs[0].RevisionName, ptr(int64(take))
			out[i] = append(out[i], e)
			want -= take
			if revs[0].Percent -= take; revs[0].Percent == 0 {
				revs = revs[1:]
			}
		}
		left[t.ConfigurationName] = revs
	}
	return out
}

// TagHosts is what each tag's own host serves, tag by tag in spec order: the tag's
// Revision at 100 %, or while the tag rolls one entry per Revision of its rollout,
// oldest first, with its percent of the host's traffic. resolved is as for Build; r
// may be nil (no rollout duration).
func TagHosts(resolved []v1.TrafficTarget, r *Rollout) []v1.TrafficTarget {
	var out []v1.TrafficTarget
	for _, t := range resolved {
		if t.Tag == "" {
			continue
		}
		e := t
		if c := r.rolling(t); c != nil {
			for _, rev := range c.Revisions {
				e.RevisionName, e.Percent = rev.RevisionName, ptr(int64(rev.Percent))
				out = append(out, e)
			}
			continue
		}
		e.Percent = ptr(int64(100))
		out = append(out, e)
	}
	return out
}

// rolling is the rollout of the tag of the resolved target t, if it is in progress.
// A tag has one target, and a rollout only while that target follows its latest
// Revision (Build), so the tag alone finds it.
func (r *Rollout) rolling(t v1.TrafficTarget) *ConfigurationRollout {
	if r == nil || t.LatestRevision == nil || !*t.LatestRevision {
		return nil
	}
	for _, c := range r.Configurations {
		if c.Tag == t.Tag && len(c.Revisions) > 1 {
			return c
		}
	}
	return nil
}

// Served is status.traffic for the state: what the hosts serve. A target whose tag's
// host rolls shows that host's split, as Knative shows it: one entry per Revision,
// oldest first, with its percent of the tag host's traffic (so those entries do not
// add up to the target's share of the default split). Every other target shows its
// part of the default split (Default); an entry for a Revision the tag's host does
// not serve (the default split still rolling where the tag's host is not, or no
// longer) drops the tag, so that each tag's entries are its host's Revisions and
// every Revision served stays listed. spec and resolved are as for Build; with no
// rollout in progress it is resolved itself.
func Served(spec, resolved []v1.TrafficTarget, r *Rollout) []v1.TrafficTarget {
	if r.Done() {
		return resolved
	}
	out := make([]v1.TrafficTarget, 0, len(resolved)+1)
	for i, share := range shares(spec, resolved, r) {
		t := resolved[i]
		if t.Tag == "" {
			out = append(out, share...)
			continue
		}
		host := []RevisionRollout{{RevisionName: t.RevisionName}}
		if c := r.rolling(t); c != nil {
			host = c.Revisions
			for _, rev := range host {
				e := t
				e.RevisionName, e.Percent = rev.RevisionName, ptr(int64(rev.Percent))
				out = append(out, e)
			}
			// The tag's entries stand for its share of the default split too, where
			// they name the same Revisions.
			share = slices.DeleteFunc(share, func(e v1.TrafficTarget) bool { return serves(host, e.RevisionName) })
		}
		for _, e := range share {
			if !serves(host, e.RevisionName) {
				e.Tag = ""
			}
			out = append(out, e)
		}
	}
	return out
}

// serves says a Revision is among revs.
func serves(revs []RevisionRollout, name string) bool {
	return slices.ContainsFunc(revs, func(r RevisionRollout) bool { return r.RevisionName == name })
}

func ptr[T any](v T) *T { return &v }

func (r *Rollout) find(tag, name string) *ConfigurationRollout {
	for _, c := range r.Configurations {
		if c.Tag == tag && c.ConfigurationName == name {
			return c
		}
	}
	return nil
}

func (r *Rollout) sort() {
	slices.SortFunc(r.Configurations, func(a, b *ConfigurationRollout) int {
		if c := strings.Compare(a.Tag, b.Tag); c != 0 {
			return c
		}
		return strings.Compare(a.ConfigurationName, b.ConfigurationName)
	})
}

func (c *ConfigurationRollout) clone() *ConfigurationRollout {
	cp := *c
	cp.Revisions = slices.Clone(c.Revisions)
	return &cp
}
