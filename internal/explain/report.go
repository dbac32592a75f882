package explain

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	appsv1 "k8s.io/api/apps/v1"
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
	e := Explain(c)
	b := &builder{c: &c}
	r := Report{Target: fmt.Sprintf("%s %s in namespace %s", c.root(), c.Name, c.Namespace), Notes: c.ReadErrors}
	var rootOK bool
	switch c.root() {
	case KindService:
		rootOK = b.service()
	case KindConfiguration:
		rootOK = c.Configuration != nil && c.Configuration.IsReady()
		if c.Configuration == nil {
			b.missing(0, "Configuration", c.Name, "not found")
		} else {
			b.configuration(0)
		}
	case KindRevision:
		if len(c.Revisions) == 0 {
			b.missing(0, "Revision", c.Name, "not found")
		} else {
			rootOK = c.Revisions[0].IsReady()
			b.revision(0, &c.Revisions[0], "")
		}
	case KindRoute:
		if c.Route == nil {
			b.missing(0, "Route", c.Name, "not found")
		} else {
			b.route(0, c.Configuration != nil)
			rootOK = c.Route.IsReady() && c.Ingress != nil && c.Ingress.IsReady() && !(c.Probed && c.LastAnswer != "")
		}
	}
	r.Steps = b.steps
	r.OK = rootOK && c.CreateError == ""
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
		if s := b.stepOf(e.Culprit); s != nil {
			r.Why = s.Events
		}
		r.Advice = Advise(c, e)
	}
	return r
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

type builder struct {
	c     *Chain
	steps []Step
}

func (b *builder) add(s Step) *Step {
	b.steps = append(b.steps, s)
	return &b.steps[len(b.steps)-1]
}

func (b *builder) missing(depth int, kind, name, why string) {
	b.add(Step{Depth: depth, Kind: kind, Name: name, Summary: why})
}

// stepOf finds the step a culprit line is about: "Pod x: …" is the step of Pod x.
func (b *builder) stepOf(culprit string) *Step {
	for i := range b.steps {
		s := &b.steps[i]
		if s.Name != "" && strings.HasPrefix(culprit, s.Kind+" "+s.Name+":") {
			return s
		}
	}
	return nil
}

func (b *builder) service() bool {
	c := b.c
	svc := c.Service
	if c.CreateError != "" {
		b.missing(0, "ksvc", c.Name, "not created: "+c.CreateError)
		return false
	}
	if svc == nil {
		b.missing(0, "ksvc", c.Name, "not found")
		return false
	}
	summary := knativeSummary(svc.Generation, &svc.Status.Status)
	if svc.Status.URL != "" {
		summary += "; " + svc.Status.URL
	}
	b.add(Step{Kind: "ksvc", Name: svc.Name, Done: svc.IsReady(), Summary: summary, Events: b.events("Service", svc.Name, svc.UID)})
	if c.Configuration == nil {
		b.missing(1, "Configuration", svc.Name, "missing (the Service reconciler has not created it)")
	} else {
		b.configuration(1)
	}
	if c.Route == nil {
		b.missing(1, "Route", svc.Name, "missing (the Service reconciler has not created it)")
		return false
	}
	b.route(1, false)
	routed := c.Route.IsReady() && c.Ingress != nil && c.Ingress.IsReady()
	if c.Probed {
		routed = c.LastAnswer == ""
	}
	return svc.IsReady() && routed
}

func (b *builder) configuration(depth int) {
	c := b.c
	cfg := c.Configuration
	summary := knativeSummary(cfg.Generation, &cfg.Status.Status)
	created, ready := cfg.Status.LatestCreatedRevisionName, cfg.Status.LatestReadyRevisionName
	switch {
	case created == "" && ready == "":
	case created == ready:
		summary += "; latest created and ready " + created
	default:
		summary += fmt.Sprintf("; latest created %s, latest ready %s", orNone(created), orNone(ready))
	}
	b.add(Step{Depth: depth, Kind: "Configuration", Name: cfg.Name, Done: cfg.IsReady(), Summary: summary,
		Events: b.events("Configuration", cfg.Name, cfg.UID)})
	latest := LatestRevision(cfg, c.Revisions)
	if latest == nil {
		b.missing(depth+1, "Revision", "", fmt.Sprintf("none created yet for generation %d", cfg.Generation))
		return
	}
	role := "latest created"
	if latest.Name == ready {
		role = "latest created and ready"
	}
	b.revision(depth+1, latest, role)
	if ready != "" && ready != latest.Name {
		if rev := revisionNamed(c.Revisions, ready); rev != nil {
			b.add(Step{Depth: depth + 1, Kind: "Revision", Name: rev.Name, Role: "latest ready", Done: rev.IsReady(),
				Summary: knativeSummary(rev.Generation, &rev.Status.Status)})
		}
	}
}

func (b *builder) revision(depth int, rev *v1.Revision, role string) {
	c := b.c
	summary := knativeSummary(rev.Generation, &rev.Status.Status)
	if len(rev.Spec.Containers) > 0 {
		summary += "; image " + rev.Spec.Containers[0].Image
	}
	b.add(Step{Depth: depth, Kind: "Revision", Name: rev.Name, Role: role, Done: rev.IsReady(), Summary: summary,
		Events: b.events("Revision", rev.Name, rev.UID)})
	dep := c.Deployments[rev.Name]
	if dep == nil {
		b.missing(depth+1, "Deployment", v1.DeploymentName(rev.Name), "missing")
		return
	}
	want := replicas(dep)
	b.add(Step{Depth: depth + 1, Kind: "Deployment", Name: dep.Name, Done: dep.Status.AvailableReplicas >= want,
		Summary: strings.TrimPrefix(describeDeployment(dep), "Deployment "+dep.Name+": "),
		Events:  b.events("Deployment", dep.Name, dep.UID)})
	podDepth := depth + 2
	if c.ReplicaSets != nil {
		rs := NewestReplicaSet(c.ReplicaSets[rev.Name])
		if rs == nil {
			b.missing(depth+2, "ReplicaSet", "", "none yet (the controller manager has not created it)")
		} else {
			b.replicaSet(depth+2, rs)
		}
		podDepth++
	}
	pods := slices.Clone(c.Pods[rev.Name])
	if len(pods) == 0 {
		if want > 0 {
			b.missing(podDepth, "Pod", "", "none")
		}
		return
	}
	// Not-ready pods first; at most three shown.
	slices.SortStableFunc(pods, func(p, q corev1.Pod) int { return boolRank(podReady(&p)) - boolRank(podReady(&q)) })
	nReady := 0
	for i := range pods {
		if podReady(&pods[i]) {
			nReady++
		}
	}
	for i := range pods {
		if i == 3 {
			b.add(Step{Depth: podDepth, Kind: "Pod", Done: true, Skipped: true,
				Summary: fmt.Sprintf("… %d more (%d of %d pods ready)", len(pods)-3, nReady, len(pods))})
			break
		}
		p := &pods[i]
		line, _, ready := describePod(p)
		b.add(Step{Depth: podDepth, Kind: "Pod", Name: p.Name, Done: ready, Summary: strings.TrimPrefix(line, "Pod "+p.Name+": "),
			Events: b.events("Pod", p.Name, p.UID)})
	}
}

func (b *builder) replicaSet(depth int, rs *appsv1.ReplicaSet) {
	want := int32(1)
	if rs.Spec.Replicas != nil {
		want = *rs.Spec.Replicas
	}
	summary := fmt.Sprintf("%d/%d pods created, %d ready", rs.Status.Replicas, want, rs.Status.ReadyReplicas)
	f := replicaFailure(rs)
	if f != nil {
		summary += "; " + formatCondition(string(f.Type), string(f.Status), f.Reason, f.Message)
	}
	b.add(Step{Depth: depth, Kind: "ReplicaSet", Name: rs.Name, Done: f == nil && rs.Status.Replicas >= want, Summary: summary,
		Events: b.events("ReplicaSet", rs.Name, rs.UID)})
}

// route adds the Route, its KIngress and the gateway; withConfiguration puts the
// Configuration the Route sends traffic to between them.
func (b *builder) route(depth int, withConfiguration bool) {
	c := b.c
	rt := c.Route
	summary := knativeSummary(rt.Generation, &rt.Status.Status)
	if t := describeTraffic(rt.Status.Traffic); t != "" {
		summary += "; traffic " + t
	}
	if rt.Status.URL != "" {
		summary += "; " + rt.Status.URL
	}
	b.add(Step{Depth: depth, Kind: "Route", Name: rt.Name, Done: rt.IsReady(), Summary: summary, Events: b.events("Route", rt.Name, rt.UID)})
	if withConfiguration {
		b.configuration(depth + 1)
	}
	ing := c.Ingress
	if ing == nil {
		b.missing(depth+1, "KIngress", rt.Name, "missing")
		return
	}
	b.add(Step{Depth: depth + 1, Kind: "KIngress", Name: ing.Name, Done: ing.IsReady(),
		Summary: knativeSummary(ing.Generation, &ing.Status.Status), Events: b.events("Ingress", ing.Name, ing.UID)})
	host := HostOf(rt.Status.URL)
	gw := Step{Depth: depth + 2, Kind: "gateway"}
	switch {
	case c.Probed && c.LastAnswer == "":
		gw.Done, gw.Summary = true, fmt.Sprintf("routed GET / with Host %s: %s", host, orNone(truncate(c.RoutedAnswer, 160)))
	case c.Probed:
		gw.Summary = fmt.Sprintf("did not route GET / with Host %s: %s", host, truncate(c.LastAnswer, 160))
	default:
		gw.Done, gw.Skipped = ing.IsReady(), true
		gw.Summary = "not asked (--gateway URL sends one request with Host " + orNone(host) + ")"
	}
	if strings.HasSuffix(host, ".svc.cluster.local") || rt.Labels[v1.VisibilityLabelKey] == v1.VisibilityClusterLocal {
		gw.Summary += "; the Route is cluster-local: only the gateway's local listener serves it"
	}
	b.add(gw)
}

// events formats the Warning Events about one object, newest first, one per reason
// and message.
func (b *builder) events(kind, name string, uid types.UID) []string {
	var evs []corev1.Event
	for _, e := range b.c.Events {
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
		out = append(out, formatEvent(e, b.c.Now))
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
