package explain

import (
	"fmt"
	"strings"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// walker goes down the chain once and writes what Explain and Build both need as
// it goes: a Step for every object, and for the objects that hold the root up a
// line each and the culprit. Methods take say: whether the object (and what is
// below it) gets lines; a Ready or already explained part gets steps only.
type walker struct {
	c     *Chain
	steps []Step
	e     Explanation
}

// walk is the one traversal of the chain, from the root down; the Configuration
// comes before the Route, because a Route that waits for traffic usually waits for
// a Revision.
func walk(c *Chain) *walker {
	w := &walker{c: c}
	switch c.root() {
	case KindConfiguration:
		if c.Configuration == nil {
			w.notFound("Configuration")
		} else {
			w.configuration(0, true)
		}
	case KindRevision:
		if len(c.Revisions) == 0 {
			w.notFound("Revision")
			break
		}
		rev := &c.Revisions[0]
		if rev.IsReady() {
			w.line(0, fmt.Sprintf("Revision %s: Ready", rev.Name))
		}
		w.revision(0, rev, "", !rev.IsReady())
	case KindRoute:
		if c.Route == nil {
			w.notFound("Route")
		} else {
			w.routeRoot()
		}
	case KindDomainMapping:
		if c.DomainMapping == nil {
			w.notFound("DomainMapping")
		} else {
			w.domainMapping()
		}
	default:
		w.service()
	}
	return w
}

func (w *walker) add(s Step) {
	w.steps = append(w.steps, s)
}

func (w *walker) missing(depth int, kind, name, why string) {
	w.add(Step{Depth: depth, Kind: kind, Name: name, Summary: why})
}

// line adds a line of the Explanation, indented by depth.
func (w *walker) line(depth int, line string) {
	prefix := ""
	if depth > 0 {
		prefix = strings.Repeat("  ", depth) + "→ "
	}
	w.e.Lines = append(w.e.Lines, prefix+line)
}

// blame records the culprit unless an earlier branch already named one.
func (w *walker) blame(culprit, kind string) {
	if w.e.Culprit == "" {
		w.e.Culprit, w.e.Kind = culprit, kind
	}
}

// notFound is a root that is not there: the culprit.
func (w *walker) notFound(kind string) {
	w.missing(0, kind, w.c.Name, "not found")
	w.line(0, fmt.Sprintf("%s %s: not found", kind, w.c.Name))
	w.blame(w.e.Lines[0], kind+" not found")
}

// service walks a Service root. It always gets a culprit: `ferry scale` explains
// only the Services that missed their deadline, so a Ready one was late.
func (w *walker) service() {
	c := w.c
	switch {
	case c.CreateError != "":
		w.missing(0, "ksvc", c.Name, "not created: "+c.CreateError)
		w.line(0, fmt.Sprintf("ksvc %s: not created: %s", c.Name, c.CreateError))
		w.blame(w.e.Lines[0], "ksvc not created")
		return
	case c.Service == nil:
		w.missing(0, "ksvc", c.Name, "not found")
		w.line(0, fmt.Sprintf("ksvc %s: not found (deleted, or never seen by the watch)", c.Name))
		w.blame(w.e.Lines[0], "ksvc not found")
		return
	}
	svc := c.Service
	svcReady := svc.IsReady()
	summary := knativeSummary(svc.Generation, &svc.Status.Status)
	if svc.Status.URL != "" {
		summary += "; " + svc.Status.URL
	}
	w.add(Step{Kind: "ksvc", Name: svc.Name, Done: svcReady, Summary: summary, Events: w.events("Service", svc.Name, svc.UID)})
	if svcReady {
		line := fmt.Sprintf("ksvc %s: Ready", svc.Name)
		if c.ReadyAfter > 0 && c.Deadline > 0 && c.ReadyAfter > c.Deadline {
			line += fmt.Sprintf(", but only after %s (deadline %s)", FormatDuration(c.ReadyAfter), FormatDuration(c.Deadline))
		}
		w.line(0, line)
	} else {
		w.line(0, "ksvc "+svc.Name+": "+describeStatus(svc.Generation, &svc.Status.Status, true))
	}

	cfgOK := w.serviceConfiguration(svcReady)
	routeOK := w.serviceRoute(svcReady)

	switch {
	case svcReady && c.Probed && c.LastAnswer != "":
		w.line(1, "gateway: never routed a request to it; last answer: "+truncate(c.LastAnswer, 200))
		w.blame(fmt.Sprintf("gateway: no routed answer for %s: %s", svc.Name, truncate(c.LastAnswer, 120)), "gateway not routing")
	case svcReady:
		w.blame(w.e.Lines[0], "ksvc Ready late")
	case cfgOK && routeOK:
		w.line(1, "Configuration and Route are Ready but the Service's status does not say so yet (Service reconciler behind)")
		w.blame(fmt.Sprintf("ksvc %s: %s", svc.Name, describeStatus(svc.Generation, &svc.Status.Status, false)), "ksvc "+conditionKind(svc.Generation, &svc.Status.Status))
	}
}

// serviceChildMissing reports a Service's Configuration or Route that does not exist:
// a step always, a line and the blame only if the Service waits on it. It returns
// whether that branch is fine.
func (w *walker) serviceChildMissing(kind string, svcReady bool) bool {
	why := "missing (the Service reconciler has not created it)"
	w.missing(1, kind, w.c.Service.Name, why)
	if !svcReady {
		line := kind + " " + w.c.Service.Name + ": " + why
		w.line(1, line)
		w.blame(line, kind+" missing")
	}
	return svcReady
}

// serviceConfiguration walks the Service's Configuration, explaining it only if
// the Service waits on it; it reports whether that branch is fine.
func (w *walker) serviceConfiguration(svcReady bool) bool {
	svc, cfg := w.c.Service, w.c.Configuration
	if cfg == nil {
		return w.serviceChildMissing("Configuration", svcReady)
	}
	svcCond := svc.Status.GetCondition(v1.ServiceConditionConfigurationsReady)
	owned := !notOwned(svc, "Configuration", cfg, svcCond)
	if !owned {
		line := fmt.Sprintf("Configuration %s: not owned by ksvc %s (an object the Service does not control has its name)", cfg.Name, svc.Name)
		w.line(1, line)
		w.blame(line, "Configuration not owned")
	}
	w.configuration(1, owned && !(cfg.IsReady() && (svcCond.IsTrue() || svcReady)))
	return owned && cfg.IsReady()
}

// configuration walks the Configuration at depth, its latest Revision and its
// latest ready one. say gives the Configuration a line, Ready or not; below a Ready
// one there is nothing to explain.
func (w *walker) configuration(depth int, say bool) {
	c := w.c
	cfg := c.Configuration
	cfgReady := cfg.IsReady()
	summary := knativeSummary(cfg.Generation, &cfg.Status.Status)
	created, ready := cfg.Status.LatestCreatedRevisionName, cfg.Status.LatestReadyRevisionName
	switch {
	case created == "" && ready == "":
	case created == ready:
		summary += "; latest created and ready " + created
	default:
		summary += fmt.Sprintf("; latest created %s, latest ready %s", orNone(created), orNone(ready))
	}
	w.add(Step{Depth: depth, Kind: "Configuration", Name: cfg.Name, Done: cfgReady, Summary: summary,
		Events: w.events("Configuration", cfg.Name, cfg.UID)})
	switch {
	case say && cfgReady:
		w.line(depth, fmt.Sprintf("Configuration %s: Ready (latestReady %s)", cfg.Name, ready))
	case say:
		w.line(depth, fmt.Sprintf("Configuration %s: %s; latestCreated=%q latestReady=%q", cfg.Name,
			describeStatus(cfg.Generation, &cfg.Status.Status, true), created, ready))
	}
	say = say && !cfgReady

	latest := LatestRevision(cfg, c.Revisions)
	if latest == nil {
		w.missing(depth+1, "Revision", "", fmt.Sprintf("none created yet for generation %d", cfg.Generation))
		if say && cfg.Status.ObservedGeneration == cfg.Generation && cfg.Status.GetCondition(duck.ConditionReady).IsFalse() {
			// It could not make its Revision (the name is taken, or refused): it
			// says why.
			w.blame(fmt.Sprintf("Configuration %s: %s", cfg.Name, describeStatus(cfg.Generation, &cfg.Status.Status, true)),
				"Configuration "+conditionKind(cfg.Generation, &cfg.Status.Status))
		}
		if say {
			line := fmt.Sprintf("Revision: none created yet for Configuration %s (generation %d)", cfg.Name, cfg.Generation)
			w.line(depth+1, line)
			w.blame(line, "Revision missing")
		}
		return
	}
	if say && latest.IsReady() {
		w.line(depth+1, fmt.Sprintf("Revision %s: Ready, but the Configuration has not recorded it", latest.Name))
		w.blame(fmt.Sprintf("Configuration %s: %s", cfg.Name, describeStatus(cfg.Generation, &cfg.Status.Status, false)),
			"Configuration "+conditionKind(cfg.Generation, &cfg.Status.Status))
		say = false
	}
	role := "latest created"
	if latest.Name == ready {
		role = "latest created and ready"
	}
	w.revision(depth+1, latest, role, say)
	if ready != "" && ready != latest.Name {
		if rev := revisionNamed(c.Revisions, ready); rev != nil {
			w.add(Step{Depth: depth + 1, Kind: "Revision", Name: rev.Name, Role: "latest ready", Done: rev.IsReady(),
				Summary: knativeSummary(rev.Generation, &rev.Status.Status)})
		}
	}
}
