package explain

import (
	"fmt"

	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	dmresources "github.com/ferry-serving/ferry/internal/reconciler/domainmapping/resources"
)

// domainMapping walks a DomainMapping root and its KIngress. The DomainMapping is the
// culprit when its own conditions say why (the domain is another namespace's, the
// reference does not resolve, a child's name is taken or refused); else the KIngress
// is, as for a Route.
func (w *walker) domainMapping() {
	c := w.c
	dm := c.DomainMapping
	ready := isReady(dm.Generation, &dm.Status.Status)
	summary := knativeSummary(dm.Generation, &dm.Status.Status)
	if ref := dm.Spec.Ref; ref.Name != "" {
		summary += fmt.Sprintf("; maps to %s %s", ref.Kind, ref.Name)
	}
	w.add(Step{Kind: "DomainMapping", Name: dm.Name, Done: ready, Summary: summary, Events: w.events("DomainMapping", dm.Name, dm.UID)})
	line := fmt.Sprintf("DomainMapping %s: %s", dm.Name, describeStatus(dm.Generation, &dm.Status.Status, false))
	if ready {
		line = fmt.Sprintf("DomainMapping %s: Ready", dm.Name)
	}
	w.line(0, line)
	kind := "DomainMapping " + conditionKind(dm.Generation, &dm.Status.Status)
	if !ready && (dm.Status.ObservedGeneration != dm.Generation || refusedOrTaken(&dm.Status.Status) ||
		!dm.Status.GetCondition(v1beta1.DomainMappingConditionDomainClaimed).IsTrue() ||
		!dm.Status.GetCondition(v1beta1.DomainMappingConditionReferenceResolved).IsTrue()) {
		w.blame(line, kind)
	}

	ing := c.Ingress
	if ing == nil {
		name := dmresources.IngressName(dm)
		w.missing(1, "KIngress", name, "missing")
		if !ready {
			w.line(1, fmt.Sprintf("KIngress %s: missing", name))
			w.blame(fmt.Sprintf("KIngress %s: missing", name), "KIngress missing")
		}
		return
	}
	ingLine := fmt.Sprintf("KIngress %s: %s", ing.Name, describeStatus(ing.Generation, &ing.Status.Status, true))
	w.add(Step{Depth: 1, Kind: "KIngress", Name: ing.Name, Done: ing.IsReady(),
		Summary: knativeSummary(ing.Generation, &ing.Status.Status), Events: w.events("Ingress", ing.Name, ing.UID)})
	switch {
	case ready:
	case !ing.IsReady():
		w.line(1, ingLine)
		w.blame(ingLine, "KIngress "+conditionKind(ing.Generation, &ing.Status.Status))
	default:
		w.blame(line, kind)
	}
}
