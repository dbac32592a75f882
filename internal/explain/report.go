package explain

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Step is one object of the chain, done (Ready) or not.
type Step struct {
	// Depth is the step's place in the tree: 0 for the root.
	Depth int `json:"depth"`
	// Kind and Name name the object ("Revision", "hello-00001"); the gateway step's
	// kind is "gateway".
	Kind string `json:"kind"`
	Name string `json:"name,omitempty"`
	// Role says why the object is in the chain: "latest created", "latest ready".
	Role string `json:"role,omitempty"`
	// Done says the step is Ready; Skipped that it was not checked.
	Done    bool `json:"done"`
	Skipped bool `json:"skipped,omitempty"`
	// Summary is the object's state on one line: Ready, or what is not.
	Summary string `json:"summary"`
	// Events are the Warning Events about the object, newest first.
	Events []string `json:"events,omitempty"`
}

// Report is what `ferry explain` prints: whether the object is Ready and routed,
// and if not, which step is not done, why, and what to do.
type Report struct {
	// Target names the object: "ksvc hello in namespace default".
	Target string `json:"target"`
	// OK says the object is Ready (and, for a Service or Route, routed).
	OK bool `json:"ok"`
	// Headline is the verdict in a few words.
	Headline string `json:"headline"`
	// Culprit and Kind are the Explanation's when not OK.
	Culprit string `json:"culprit,omitempty"`
	Kind    string `json:"kind,omitempty"`
	// Why are the Warning Events about the culprit.
	Why []string `json:"why,omitempty"`
	// Advice says what to do.
	Advice []string `json:"advice,omitempty"`
	Steps  []Step   `json:"steps"`
	// Notes say what could not be read.
	Notes []string `json:"notes,omitempty"`
}

// Build walks the chain and reports every step, the culprit and what to do.
func Build(c Chain) Report {
	w := walk(&c)
	e := w.e
	r := Report{Target: fmt.Sprintf("%s %s in namespace %s", c.root(), c.Name, c.Namespace), Notes: c.ReadErrors, Steps: w.steps}
	r.OK = rootOK(c) && c.CreateError == ""
	switch {
	case r.OK && (c.root() == KindService || c.root() == KindRoute) && c.Probed:
		r.Headline = "Ready and routed: the gateway at " + c.GatewayURL + " routed a request to it"
	case r.OK && (c.root() == KindService || c.root() == KindRoute):
		r.Headline = "Ready and routed (by the KIngress status; --gateway URL sends a request too)"
	case r.OK:
		r.Headline = "Ready"
	default:
		r.Headline = "NOT READY"
		if rootReady(c) {
			r.Headline = "Ready but NOT ROUTED"
		}
		r.Culprit, r.Kind = e.Culprit, e.Kind
		if s := stepOf(r.Steps, e.Culprit); s != nil {
			r.Why = s.Events
		}
		r.Advice = Advise(c, e)
	}
	return r
}

// rootOK says the root object is Ready and, for a Service or a Route, routed: by
// the gateway's answer when it was asked, else by the KIngress status.
func rootOK(c Chain) bool {
	switch c.root() {
	case KindConfiguration:
		return c.Configuration != nil && c.Configuration.IsReady()
	case KindRevision:
		return len(c.Revisions) > 0 && c.Revisions[0].IsReady()
	case KindRoute:
		return c.Route != nil && c.Route.IsReady() && c.Ingress != nil && c.Ingress.IsReady() && !(c.Probed && c.LastAnswer != "")
	case KindDomainMapping:
		return c.DomainMapping != nil && isReady(c.DomainMapping.Generation, &c.DomainMapping.Status.Status) && c.Ingress != nil && c.Ingress.IsReady()
	}
	if c.Service == nil || c.Route == nil {
		return false
	}
	routed := c.Route.IsReady() && c.Ingress != nil && c.Ingress.IsReady()
	if c.Probed {
		routed = c.LastAnswer == ""
	}
	return c.Service.IsReady() && routed
}

// rootReady says the root object says Ready (whether or not it is routed).
func rootReady(c Chain) bool {
	switch c.root() {
	case KindService:
		return c.Service != nil && c.Service.IsReady()
	case KindRoute:
		return c.Route != nil && c.Route.IsReady()
	}
	return false
}

// stepOf finds the step a culprit line is about: "Pod x: …" is the step of Pod x.
func stepOf(steps []Step, culprit string) *Step {
	for i := range steps {
		s := &steps[i]
		if s.Name != "" && strings.HasPrefix(culprit, s.Kind+" "+s.Name+":") {
			return s
		}
	}
	return nil
}

// events formats the Warning Events about one object, newest first, one per reason
// and message.
func (w *walker) events(kind, name string, uid types.UID) []string {
	var evs []corev1.Event
	for _, e := range w.c.Events {
		io := e.InvolvedObject
		if e.Type != corev1.EventTypeWarning {
			continue
		}
		if io.UID != "" && uid != "" {
			if io.UID != uid {
				continue
			}
		} else if io.Kind != kind || io.Name != name {
			continue
		}
		evs = append(evs, e)
	}
	slices.SortStableFunc(evs, func(a, b corev1.Event) int { return lastSeen(b).Compare(lastSeen(a)) })
	var out []string
	seen := map[string]bool{}
	for _, e := range evs {
		key := e.Reason + "\x00" + e.Message
		if seen[key] {
			continue
		}
		seen[key] = true
		if len(out) == 3 {
			out = append(out, "…")
			break
		}
		out = append(out, formatEvent(e, w.c.Now))
	}
	return out
}

func lastSeen(e corev1.Event) time.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return e.Series.LastObservedTime.Time
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.FirstTimestamp.Time
}

// formatEvent is "Warning Failed (×3, 20s ago): message".
func formatEvent(e corev1.Event, now time.Time) string {
	var meta []string
	count := e.Count
	if e.Series != nil && e.Series.Count > count {
		count = e.Series.Count
	}
	if count > 1 {
		meta = append(meta, fmt.Sprintf("×%d", count))
	}
	if t := lastSeen(e); !now.IsZero() && !t.IsZero() {
		meta = append(meta, duration.HumanDuration(now.Sub(t))+" ago")
	}
	s := e.Type + " " + e.Reason
	if len(meta) > 0 {
		s += " (" + strings.Join(meta, ", ") + ")"
	}
	return s + ": " + truncate(e.Message, 200)
}

// knativeSummary is "Ready", or what is not True.
func knativeSummary(generation int64, s *duck.Status) string {
	if isReady(generation, s) {
		return "Ready"
	}
	return describeStatus(generation, s, true)
}

func isReady(generation int64, s *duck.Status) bool {
	return s.ObservedGeneration == generation && s.GetCondition(duck.ConditionReady).IsTrue()
}

// describeTraffic is "90% → a-00001, 10% → a-00002 (latest, tag next)".
func describeTraffic(ts []v1.TrafficTarget) string {
	var parts []string
	for _, t := range ts {
		p := int64(0)
		if t.Percent != nil {
			p = *t.Percent
		}
		s := fmt.Sprintf("%d%% → %s", p, t.RevisionName)
		var notes []string
		if t.LatestRevision != nil && *t.LatestRevision {
			notes = append(notes, "latest")
		}
		if t.Tag != "" {
			notes = append(notes, "tag "+t.Tag)
		}
		if len(notes) > 0 {
			s += " (" + strings.Join(notes, ", ") + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func podReady(p *corev1.Pod) bool {
	_, _, ready := describePod(p)
	return ready
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Write prints the report on one screen: the verdict, the step that is not done
// with why and what to do, then every step.
func (r Report) Write(w io.Writer) {
	fmt.Fprintf(w, "%s: %s\n", r.Target, r.Headline)
	if !r.OK {
		if r.Culprit != "" {
			fmt.Fprintf(w, "  not done: %s\n", r.Culprit)
		}
		for i, e := range r.Why {
			label := "          "
			if i == 0 {
				label = "  events:  "
			}
			fmt.Fprintf(w, "%s%s\n", label, e)
		}
		for i, a := range r.Advice {
			label := "          "
			if i == 0 {
				label = "  to do:   "
			}
			fmt.Fprintf(w, "%s%s\n", label, a)
		}
	}
	fmt.Fprintln(w)
	for _, s := range r.Steps {
		mark := "✗"
		switch {
		case s.Skipped:
			mark = "·"
		case s.Done:
			mark = "✓"
		}
		name := s.Kind
		if s.Name != "" {
			name += " " + s.Name
		}
		if s.Role != "" {
			name += " (" + s.Role + ")"
		}
		indent := strings.Repeat("  ", s.Depth)
		fmt.Fprintf(w, "%s%s %s: %s\n", indent, mark, name, s.Summary)
		for _, e := range s.Events {
			fmt.Fprintf(w, "%s    ! %s\n", indent, e)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(w, "note: %s\n", n)
	}
}

// String is Write into a string.
func (r Report) String() string {
	var b strings.Builder
	r.Write(&b)
	return b.String()
}
