package explain

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Kind names the object an explanation starts from.
type Kind string

// The kinds `ferry explain` takes.
const (
	KindService       Kind = "ksvc"
	KindConfiguration Kind = "configuration"
	KindRevision      Kind = "revision"
	KindRoute         Kind = "route"
	KindDomainMapping Kind = "domainmapping"
)

// ParseKind accepts the names kubectl accepts for Knative's kinds (singular, plural,
// short names), and "service" for a Knative Service.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSuffix(s, ".serving.knative.dev")) {
	case "ksvc", "kservice", "service", "services", "ksvcs":
		return KindService, nil
	case "configuration", "configurations", "config", "cfg":
		return KindConfiguration, nil
	case "revision", "revisions", "rev":
		return KindRevision, nil
	case "route", "routes", "rt":
		return KindRoute, nil
	case "domainmapping", "domainmappings", "dm":
		return KindDomainMapping, nil
	}
	return "", fmt.Errorf("cannot explain %q: want ksvc (service), configuration, revision, route or domainmapping", s)
}

// Chain is what is known of one object and the objects its readiness depends on: a
// Service's Configuration and that one's Revisions with their Deployments,
// ReplicaSets and pods, its Route and that one's KIngress, and the Events about
// them. Missing objects are nil (or absent from the maps).
type Chain struct {
	// Name is the root object's name; Root its kind ("" is a Service).
	Name      string
	Namespace string
	Root      Kind

	Service       *v1.Service
	Configuration *v1.Configuration
	Revisions     []v1.Revision
	Deployments   map[string]*appsv1.Deployment  // by Revision name
	ReplicaSets   map[string][]appsv1.ReplicaSet // by Revision name
	Pods          map[string][]corev1.Pod        // by Revision name
	Route         *v1.Route
	// Ingress is the Route's KIngress, or the DomainMapping's.
	Ingress       *netv1alpha1.Ingress
	DomainMapping *v1beta1.DomainMapping
	// Claim is the ClusterDomainClaim of the DomainMapping's domain.
	Claim *netv1alpha1.ClusterDomainClaim
	// Neighbours are the namespace's Revisions, or Configurations, when the Route's
	// traffic names one that does not exist: to say what exists instead.
	Neighbours []metav1.ObjectMeta
	// Events are the Events about any of the objects above.
	Events []corev1.Event
	// ReadErrors say which objects could not be read, and why.
	ReadErrors []string
	// Now is when the snapshot was taken, to say how old Events are (zero: not said).
	Now time.Time

	// CreateError is why the Service could not be created.
	CreateError string
	// Deadline is the time the Service had; ReadyAfter, when not 0, is when it
	// became Ready all the same.
	Deadline   time.Duration
	ReadyAfter time.Duration
	// Probed says a gateway was sent requests with the Route's host; LastAnswer is
	// what it last said when it did not route them ("" when it did).
	Probed     bool
	LastAnswer string
	// GatewayURL is where the requests went, and RoutedAnswer what the gateway said
	// when it routed one.
	GatewayURL   string
	RoutedAnswer string
}

func (c *Chain) root() Kind {
	if c.Root == "" {
		return KindService
	}
	return c.Root
}

// Explanation says why an object is not Ready, along its dependency chain.
type Explanation struct {
	// Culprit is the deepest object that is not ready, and why, in one line.
	Culprit string `json:"culprit"`
	// Kind is the culprit without names and messages, to group Services stuck for
	// the same reason: "Revision ResourcesAvailable=Unknown Deploying".
	Kind string `json:"kind"`
	// Lines walk the chain from the root down, indented by depth.
	Lines []string `json:"lines"`
	// Advice says what to do about the culprit (Advise), so that `ferry scale` and
	// `ferry explain` say the same.
	Advice []string `json:"advice,omitempty"`
}

func (e Explanation) String() string { return strings.Join(e.Lines, "\n") }

// Explain names the deepest object that holds the rest up, lists what is not True on
// each object from the root down (see walk for the order), and says what to do. A Service always
// gets a culprit; for the other roots the culprit is empty when the root is Ready.
func Explain(c Chain) Explanation {
	e := walk(&c).e
	if e.Culprit != "" {
		e.Advice = Advise(c, e)
	}
	return e
}

// notOwned says obj, the Service's kind child, is not the Service's: controlled by
// something else, or the Service's condition says so. The condition copies the
// child's reason, so NotOwned there may be about the child's own child (the Route's
// placeholder Service): only Knative's message naming obj counts.
func notOwned(svc *v1.Service, kind string, obj metav1.Object, cond *duck.Condition) bool {
	if cond != nil && cond.Reason == duck.ReasonNotOwned && cond.Status != corev1.ConditionTrue &&
		cond.Message == duck.NotOwnedMessage(kind, obj.GetName()) {
		return true
	}
	ref := metav1.GetControllerOf(obj)
	return ref != nil && (ref.Kind != "Service" || ref.Name != svc.Name || (svc.UID != "" && ref.UID != svc.UID))
}

// LatestRevision is the Configuration's latest created Revision: the one its status
// names, else the one with the highest generation label.
func LatestRevision(cfg *v1.Configuration, revs []v1.Revision) *v1.Revision {
	if name := cfg.Status.LatestCreatedRevisionName; name != "" {
		if r := revisionNamed(revs, name); r != nil {
			return r
		}
	}
	var best *v1.Revision
	bestGen := int64(-1)
	for i := range revs {
		g, _ := strconv.ParseInt(revs[i].Labels[v1.ConfigurationGenerationLabelKey], 10, 64)
		if g > bestGen || (g == bestGen && best != nil && revs[i].Name > best.Name) {
			best, bestGen = &revs[i], g
		}
	}
	return best
}

func revisionNamed(revs []v1.Revision, name string) *v1.Revision {
	for i := range revs {
		if revs[i].Name == name {
			return &revs[i]
		}
	}
	return nil
}

// NewestReplicaSet is the ReplicaSet of the Deployment's latest rollout: the highest
// deployment.kubernetes.io/revision annotation, else the newest.
func NewestReplicaSet(rss []appsv1.ReplicaSet) *appsv1.ReplicaSet {
	var best *appsv1.ReplicaSet
	bestRev := int64(-1)
	for i := range rss {
		r, _ := strconv.ParseInt(rss[i].Annotations["deployment.kubernetes.io/revision"], 10, 64)
		if best == nil || r > bestRev || (r == bestRev && rss[i].CreationTimestamp.After(best.CreationTimestamp.Time)) {
			best, bestRev = &rss[i], r
		}
	}
	return best
}

func replicaFailure(rs *appsv1.ReplicaSet) *appsv1.ReplicaSetCondition {
	for i, c := range rs.Status.Conditions {
		if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
			return &rs.Status.Conditions[i]
		}
	}
	return nil
}

func replicas(dep *appsv1.Deployment) int32 {
	if dep.Spec.Replicas != nil {
		return *dep.Spec.Replicas
	}
	return 1
}

// describeDeployment says how many replicas are available and which conditions are
// not True.
func describeDeployment(dep *appsv1.Deployment) string {
	line := fmt.Sprintf("Deployment %s: %d/%d available", dep.Name, dep.Status.AvailableReplicas, replicas(dep))
	var conds []string
	for _, dc := range dep.Status.Conditions {
		if dc.Status != corev1.ConditionTrue {
			conds = append(conds, formatCondition(string(dc.Type), string(dc.Status), dc.Reason, dc.Message))
		}
	}
	if len(conds) > 0 {
		line += "; " + strings.Join(conds, "; ")
	}
	return line
}

// describeStatus lists what is wrong with a Knative status: a lagging
// observedGeneration, then Ready (when withReady) and every other condition that is
// not True, with reason and message.
func describeStatus(generation int64, s *duck.Status, withReady bool) string {
	var parts []string
	if s.ObservedGeneration != generation {
		parts = append(parts, fmt.Sprintf("not reconciled (observedGeneration %d, generation %d)", s.ObservedGeneration, generation))
	}
	// A message the line already holds (Ready usually repeats a dependent's) is
	// said once.
	said := map[string]bool{}
	format := func(c *duck.Condition) string {
		msg := c.Message
		if said[msg] {
			msg = ""
		}
		said[msg] = true
		return formatCondition(string(c.Type), string(c.Status), c.Reason, msg)
	}
	ready := s.GetCondition(duck.ConditionReady)
	if ready == nil {
		parts = append(parts, "no Ready condition")
	} else if withReady || len(s.Conditions) == 1 {
		parts = append(parts, format(ready))
	}
	for _, cond := range sortedConditions(s) {
		if cond.Type == duck.ConditionReady || cond.Status == corev1.ConditionTrue {
			continue
		}
		parts = append(parts, format(&cond))
	}
	if len(parts) == 0 {
		return "Ready"
	}
	return strings.Join(parts, "; ")
}

// conditionKind is the first thing describeStatus would name, without the message.
func conditionKind(generation int64, s *duck.Status) string {
	if s.ObservedGeneration != generation {
		return "not reconciled"
	}
	for _, cond := range sortedConditions(s) {
		if cond.Type != duck.ConditionReady && cond.Status != corev1.ConditionTrue && cond.Severity == duck.ConditionSeverityError {
			return formatCondition(string(cond.Type), string(cond.Status), cond.Reason, "")
		}
	}
	if ready := s.GetCondition(duck.ConditionReady); ready != nil {
		return formatCondition(string(ready.Type), string(ready.Status), ready.Reason, "")
	}
	return "no Ready condition"
}

// sortedConditions puts the conditions Ready depends on (severity Error) before the
// informational ones (Info, Warning: a Revision's Active), False before Unknown, then
// by type, so the worst comes first.
func sortedConditions(s *duck.Status) []duck.Condition {
	cs := slices.Clone(s.Conditions)
	rank := func(c duck.Condition) int {
		r := 2
		switch c.Status {
		case corev1.ConditionFalse:
			r = 0
		case corev1.ConditionUnknown:
			r = 1
		}
		if c.Severity != duck.ConditionSeverityError {
			r += 3
		}
		return r
	}
	slices.SortStableFunc(cs, func(a, b duck.Condition) int {
		if r := rank(a) - rank(b); r != 0 {
			return r
		}
		return strings.Compare(string(a.Type), string(b.Type))
	})
	return cs
}

func formatCondition(typ, status, reason, message string) string {
	s := typ + "=" + status
	if reason != "" {
		s += " " + reason
	}
	if message != "" {
		s += fmt.Sprintf(" %q", truncate(message, 160))
	}
	return s
}

// describePod says what keeps a pod from being ready; kind drops its name.
func describePod(p *corev1.Pod) (line, kind string, ready bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return fmt.Sprintf("Pod %s: Ready", p.Name), "Pod Ready", true
		}
	}
	var why []string
	kind = "Pod " + string(p.Status.Phase)
	for _, c := range p.Status.Conditions {
		if c.Status != corev1.ConditionTrue && (c.Reason != "" || c.Message != "") {
			if len(why) == 0 {
				kind += " " + formatCondition(string(c.Type), string(c.Status), c.Reason, "")
			}
			why = append(why, formatCondition(string(c.Type), string(c.Status), c.Reason, c.Message))
		}
	}
	for _, cs := range append(slices.Clone(p.Status.InitContainerStatuses), p.Status.ContainerStatuses...) {
		switch {
		case cs.State.Waiting != nil:
			w := fmt.Sprintf("container %s waiting: %s %s", cs.Name, cs.State.Waiting.Reason, truncate(cs.State.Waiting.Message, 120))
			if t := cs.LastTerminationState.Terminated; t != nil {
				w += fmt.Sprintf(" (last exit %d %s", t.ExitCode, t.Reason)
				if t.Message != "" {
					w += ": " + truncate(t.Message, 80)
				}
				w += fmt.Sprintf(", %d restarts)", cs.RestartCount)
			}
			why = append(why, strings.TrimSpace(w))
			kind += " " + cs.State.Waiting.Reason
		case cs.State.Terminated != nil:
			why = append(why, fmt.Sprintf("container %s terminated: %s exit %d", cs.Name, cs.State.Terminated.Reason, cs.State.Terminated.ExitCode))
			kind += " " + cs.State.Terminated.Reason
		}
	}
	if p.Spec.NodeName == "" && len(why) == 0 {
		why = append(why, "not scheduled")
	}
	line = fmt.Sprintf("Pod %s: %s", p.Name, p.Status.Phase)
	if p.Status.Phase == "" {
		line = fmt.Sprintf("Pod %s: no phase", p.Name)
	}
	if len(why) > 0 {
		line += "; " + strings.Join(why, "; ")
	}
	return strings.TrimSpace(line), strings.TrimSpace(kind), false
}

func truncate(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// FormatDuration prints a duration with a precision that suits it: 850ms, 12.3s,
// 4m05.0s.
func FormatDuration(d time.Duration) string {
	switch {
	case d <= 0:
		return "0s"
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	default:
		m := int(d / time.Minute)
		return fmt.Sprintf("%dm%04.1fs", m, (d - time.Duration(m)*time.Minute).Seconds())
	}
}
