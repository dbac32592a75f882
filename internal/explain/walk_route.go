package explain

import (
	"fmt"
	"strings"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	routeresources "github.com/ferry-serving/ferry/internal/reconciler/route/resources"
)

// routeRoot walks a Route root: the Route, the Configuration it sends traffic to,
// its KIngress and the gateway. A Route that waits for traffic is explained by its
// Configuration first.
func (w *walker) routeRoot() {
	c := w.c
	rt := c.Route
	stuck := rt.IsReady() && c.Probed && c.LastAnswer != ""
	waits := !rt.Status.GetCondition(v1.RouteConditionAllTrafficAssigned).IsTrue() && c.Configuration != nil
	w.routeStep(0)
	sayIngress := !rt.IsReady()
	if waits {
		w.line(0, w.routeLine())
	} else {
		sayIngress = w.sayRoute(0, stuck)
	}
	if c.Configuration != nil {
		w.configuration(1, waits && !c.Configuration.IsReady())
	}
	w.ingress(0, sayIngress)
	if stuck {
		w.line(1, "gateway: did not route a request to it; last answer: "+truncate(c.LastAnswer, 200))
		w.blame(fmt.Sprintf("gateway: no routed answer for Route %s: %s", rt.Name, truncate(c.LastAnswer, 120)), "gateway not routing")
	}
}

// serviceRoute walks the Service's Route, explaining it only if the Service (or the
// gateway probe) waits on it; it reports whether the Route is fine.
func (w *walker) serviceRoute(svcReady bool) bool {
	c := w.c
	svc, rt := c.Service, c.Route
	if rt == nil {
		return w.serviceChildMissing("Route", svcReady)
	}
	w.routeStep(1)
	owned := !notOwned(svc, "Route", rt, svc.Status.GetCondition(v1.ServiceConditionRoutesReady))
	sayIngress := false
	if owned {
		sayIngress = w.sayRoute(1, svcReady && c.Probed && c.LastAnswer != "")
	} else {
		line := fmt.Sprintf("Route %s: not owned by ksvc %s (an object the Service does not control has its name)", rt.Name, svc.Name)
		w.line(1, line)
		w.blame(line, "Route not owned")
	}
	w.ingress(1, sayIngress)
	return owned && rt.IsReady()
}

func (w *walker) routeStep(depth int) {
	rt := w.c.Route
	summary := knativeSummary(rt.Generation, &rt.Status.Status)
	if is := routeTrafficIssue(w.c); is != nil {
		if what, _ := is.says(); what != "" {
			summary = what + "; " + summary
		}
	}
	if cert := rt.Status.GetCondition(v1.RouteConditionCertificateProvisioned); cert.IsTrue() && cert.Reason == v1.ReasonHTTPDowngrade {
		// Ready, but not as asked: plain HTTP until the Certificate is.
		summary += "; HTTP only (" + v1.ReasonHTTPDowngrade + "): " + cert.Message
	}
	if t := describeTraffic(rt.Status.Traffic); t != "" {
		summary += "; traffic " + t
	}
	if rt.Status.URL != "" {
		summary += "; " + rt.Status.URL
	}
	w.add(Step{Depth: depth, Kind: "Route", Name: rt.Name, Done: rt.IsReady(), Summary: summary, Events: w.events("Route", rt.Name, rt.UID)})
}

// sayRoute gives the Route a line unless it is Ready and the gateway routes it
// (stuck says it does not); it reports whether the KIngress gets one too.
func (w *walker) sayRoute(depth int, stuck bool) bool {
	rt := w.c.Route
	switch {
	case rt.IsReady() && !stuck:
		return false
	case rt.IsReady():
		w.line(depth, fmt.Sprintf("Route %s: Ready", rt.Name))
	default:
		w.line(depth, w.routeLine())
	}
	return true
}

// routeLine is the line of a Route that is not Ready: what its traffic waits for, if
// that is why, then what is not True on it.
func (w *walker) routeLine() string {
	rt := w.c.Route
	status := describeStatus(rt.Generation, &rt.Status.Status, false)
	if is := routeTrafficIssue(w.c); is != nil {
		if what, _ := is.says(); what != "" {
			status = what + "; " + status
		}
	}
	return fmt.Sprintf("Route %s: %s", rt.Name, status)
}

// ingress walks the KIngress and the gateway below the Route at depth; say
// explains the KIngress, and blames the Route when its traffic cannot be assigned or
// only the Route is behind.
func (w *walker) ingress(depth int, say bool) {
	c := w.c
	rt, ing := c.Route, c.Ingress
	if is := routeTrafficIssue(c); say && is != nil && rt.Status.ObservedGeneration == rt.Generation {
		// The Route leaves its KIngress as it was (or does not make one) until its
		// traffic can be assigned: its own condition says why, not the KIngress.
		w.blame(is.culprit(rt))
	}
	if say && rt.Status.ObservedGeneration == rt.Generation && (taken(&rt.Status.Status) || refusedOrTaken(&rt.Status.Status) && ing != nil) {
		// A KIngress or placeholder Service of the Route's name that is another's, or
		// a write refused: the Route says so, whatever the KIngress there says.
		w.blame(fmt.Sprintf("Route %s: %s", rt.Name, describeStatus(rt.Generation, &rt.Status.Status, false)),
			"Route "+conditionKind(rt.Generation, &rt.Status.Status))
	}
	if ing == nil {
		name := routeresources.IngressName(rt)
		w.missing(depth+1, "KIngress", name, "missing")
		if say {
			line := fmt.Sprintf("KIngress %s: missing", name)
			if cond := rt.Status.GetCondition(v1.RouteConditionIngressReady); cond.IsFalse() {
				// The Route says why: the API server refused it.
				line += " (the Route's " + formatCondition(string(cond.Type), string(cond.Status), cond.Reason, cond.Message) + ")"
			}
			w.line(depth+1, line)
			w.blame(line, "KIngress missing")
		}
		return
	}
	w.add(Step{Depth: depth + 1, Kind: "KIngress", Name: ing.Name, Done: ing.IsReady(),
		Summary: knativeSummary(ing.Generation, &ing.Status.Status), Events: w.events("Ingress", ing.Name, ing.UID)})
	if say {
		switch {
		case !ing.IsReady():
			line := fmt.Sprintf("KIngress %s: %s", ing.Name, describeStatus(ing.Generation, &ing.Status.Status, true))
			w.line(depth+1, line)
			w.blame(line, "KIngress "+conditionKind(ing.Generation, &ing.Status.Status))
		case !rt.IsReady():
			switch c := rt.Status.GetCondition(v1.RouteConditionIngressReady); {
			case c != nil && c.IsUnknown() && c.Reason == v1.ReasonRolloutInProgress:
				// Not stuck: the Route moves traffic step by step on purpose.
				w.line(depth+1, fmt.Sprintf("KIngress %s: Ready, serving a step of a gradual rollout: %s", ing.Name, describeTraffic(rt.Status.Traffic)))
			case !c.IsTrue():
				w.line(depth+1, fmt.Sprintf("KIngress %s: Ready (generation %d), the Route has not seen it yet", ing.Name, ing.Generation))
			}
			w.blame(fmt.Sprintf("Route %s: %s", rt.Name, describeStatus(rt.Generation, &rt.Status.Status, false)),
				"Route "+conditionKind(rt.Generation, &rt.Status.Status))
		default:
			w.line(depth+1, fmt.Sprintf("KIngress %s: Ready", ing.Name))
		}
	}
	w.gateway(depth + 2)
}

// gateway is the step of the request sent to the gateway with the Route's host, or
// of the one not sent.
func (w *walker) gateway(depth int) {
	c := w.c
	rt := c.Route
	host := HostOf(rt.Status.URL)
	gw := Step{Depth: depth, Kind: "gateway"}
	switch {
	case c.Probed && c.LastAnswer == "":
		gw.Done, gw.Summary = true, fmt.Sprintf("routed GET / with Host %s: %s", host, orNone(truncate(c.RoutedAnswer, 160)))
	case c.Probed:
		gw.Summary = fmt.Sprintf("did not route GET / with Host %s: %s", host, truncate(c.LastAnswer, 160))
	default:
		gw.Done, gw.Skipped = c.Ingress.IsReady(), true
		gw.Summary = "not asked (--gateway URL sends one request with Host " + orNone(host) + ")"
	}
	if strings.HasSuffix(host, ".svc.cluster.local") || rt.Labels[v1.VisibilityLabelKey] == v1.VisibilityClusterLocal {
		gw.Summary += "; the Route is cluster-local: only the gateway's local listener serves it"
	}
	w.add(gw)
}
