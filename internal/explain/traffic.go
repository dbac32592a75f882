package explain

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	configurationresources "github.com/ferry-serving/ferry/internal/reconciler/configuration/resources"
)

// trafficState is what a Route's AllTrafficAssigned says of the target it names.
type trafficState int

const (
	// targetMissing: the target does not exist.
	targetMissing trafficState = iota + 1
	// targetCreating: the Revision does not exist yet but its Configuration is making
	// it (or has, and the Route has not seen it yet).
	targetCreating
	// targetNotReady: the target exists and is not Ready yet.
	targetNotReady
	// targetFailed: the target exists and failed.
	targetFailed
)

// trafficIssue is why a Route cannot assign its traffic, read from its
// AllTrafficAssigned condition: which target, and in what state.
type trafficIssue struct {
	Kind  string // "Revision" or "Configuration"
	Name  string
	State trafficState
	// Cond is the Route's AllTrafficAssigned condition.
	Cond *duck.Condition
}

// Knative's messages for AllTrafficAssigned (Route's MarkMissingTrafficTarget,
// MarkConfigurationNotReady, MarkConfigurationFailed, MarkRevisionNotReady,
// MarkRevisionFailed), which Ferry repeats word for word: they are where the target's
// name is.
var trafficMessages = []struct {
	re    *regexp.Regexp
	state trafficState
}{
	{regexp.MustCompile(`^(Revision|Configuration) "(.*)" referenced in traffic not found\.$`), targetMissing},
	{regexp.MustCompile(`^(Configuration) "(.*)" is waiting for a Revision to become ready\.$`), targetNotReady},
	{regexp.MustCompile(`^(Configuration) "(.*)" does not have any ready Revision\.$`), targetFailed},
	{regexp.MustCompile(`^(Revision) "(.*)" is not yet ready\.$`), targetNotReady},
	{regexp.MustCompile(`^(Revision) "(.*)" failed to become ready\.$`), targetFailed},
}

// routeTrafficIssue reads the Route's AllTrafficAssigned: nil when it is True,
// absent or has no reason; an issue with no Name when it is not about one target (ErrorConfig,
// InvalidTraffic). A Revision that is not there but is the one the chain's
// Configuration makes for its current generation is being created, not missing.
func routeTrafficIssue(c *Chain) *trafficIssue {
	if c.Route == nil {
		return nil
	}
	cond := c.Route.Status.GetCondition(v1.RouteConditionAllTrafficAssigned)
	if cond == nil || cond.IsTrue() || cond.Reason == "" {
		// Not assigned yet, for no reason given: nothing to say of the traffic.
		return nil
	}
	is := &trafficIssue{Cond: cond}
	for _, m := range trafficMessages {
		if sub := m.re.FindStringSubmatch(cond.Message); sub != nil {
			is.Kind, is.Name, is.State = sub[1], sub[2], m.state
			break
		}
	}
	if is.State == targetMissing && is.Kind == "Revision" && c.Configuration != nil &&
		(configurationresources.RevisionName(c.Configuration) == is.Name || revisionNamed(c.Revisions, is.Name) != nil) {
		is.State = targetCreating
	}
	return is
}

// says is what the issue means in words ("its traffic names Revision "x", which
// does not exist"), and a note to tell the states apart in a culprit's kind; "" for
// an issue not about one target.
func (is *trafficIssue) says() (what, note string) {
	switch {
	case is.Name == "":
		return "", ""
	case is.State == targetMissing:
		return fmt.Sprintf("its traffic names %s %q, which does not exist", is.Kind, is.Name), "not found"
	case is.State == targetCreating:
		return fmt.Sprintf("waiting for its Configuration to create Revision %q, which its traffic names", is.Name), "being created"
	case is.State == targetNotReady && is.Kind == "Configuration":
		return fmt.Sprintf("waiting for Configuration %q to have a Ready Revision", is.Name), "not Ready yet"
	case is.State == targetNotReady:
		return fmt.Sprintf("waiting for Revision %q to become Ready", is.Name), "not Ready yet"
	case is.Kind == "Configuration":
		return fmt.Sprintf("Configuration %q, which its traffic names, has no Ready Revision", is.Name), "failed"
	}
	return fmt.Sprintf("Revision %q, which its traffic names, failed", is.Name), "failed"
}

// culprit is the Route's culprit line and kind for the issue.
func (is *trafficIssue) culprit(rt *v1.Route) (line, kind string) {
	cond := formatCondition(string(is.Cond.Type), string(is.Cond.Status), is.Cond.Reason, "")
	what, note := is.says()
	if what == "" {
		return fmt.Sprintf("Route %s: %s", rt.Name, formatCondition(string(is.Cond.Type), string(is.Cond.Status), is.Cond.Reason, is.Cond.Message)), "Route " + cond
	}
	return fmt.Sprintf("Route %s: %s (%s)", rt.Name, what, cond), fmt.Sprintf("Route %s (%s)", cond, note)
}

// trafficField is where the traffic names the target, in the object the user
// writes: "ksvc pin's spec.traffic[0].revisionName (tag old)", or the Route's.
func trafficField(c *Chain, is *trafficIssue) string {
	owner, traffic := "route "+c.Route.Name, c.Route.Spec.Traffic
	if svc := c.Service; svc != nil && c.root() == KindService {
		owner, traffic = "ksvc "+svc.Name, svc.Spec.Traffic
	}
	for i, t := range traffic {
		field, name := "revisionName", t.RevisionName
		if is.Kind == "Configuration" {
			field, name = "configurationName", t.ConfigurationName
		}
		if name != is.Name {
			continue
		}
		s := fmt.Sprintf("%s's spec.traffic[%d].%s", owner, i, field)
		if t.Tag != "" {
			s += " (tag " + t.Tag + ")"
		}
		return s
	}
	return owner + "'s spec.traffic"
}

// revisionsInstead lists the Revisions of the Configuration a missing Revision's name
// belongs to (Knative's Revision names start with "<configuration>-"), by name from
// the highest (the newest, for generated names), with the latest ready one marked:
// what the traffic could name instead. It also returns that Configuration's name
// ("" when none matches).
func revisionsInstead(c *Chain, missing string) (cfg string, names []string) {
	revs := slices.Clone(c.Revisions)
	for _, m := range c.Neighbours {
		if revisionNamed(revs, m.Name) == nil {
			revs = append(revs, v1.Revision{ObjectMeta: m})
		}
	}
	for _, r := range revs {
		if l := r.Labels[v1.ConfigurationLabelKey]; strings.HasPrefix(missing, l+"-") && len(l) > len(cfg) {
			cfg = l
		}
	}
	if cfg == "" && c.Configuration != nil {
		cfg = c.Configuration.Name
	}
	var ready string
	if c.Configuration != nil && c.Configuration.Name == cfg {
		ready = c.Configuration.Status.LatestReadyRevisionName
	}
	for _, r := range revs {
		if r.Labels[v1.ConfigurationLabelKey] == cfg {
			names = append(names, r.Name)
		}
	}
	slices.Sort(names)
	slices.Reverse(names)
	names = slices.Compact(names)
	for i, n := range names {
		if n == ready {
			names[i] += " (latest ready)"
		}
	}
	return cfg, names
}

// similarNames are the names that look like name (one typo or a few characters
// apart, or one holding the other), closest first, at most three.
func similarNames(name string, names []string) []string {
	type scored struct {
		name string
		d    int
	}
	var out []scored
	limit := max(2, len(name)/3)
	for _, n := range names {
		d := editDistance(name, n)
		if n != name && (d <= limit || strings.Contains(n, name) || strings.Contains(name, n)) {
			out = append(out, scored{n, d})
		}
	}
	slices.SortStableFunc(out, func(a, b scored) int {
		if a.d != b.d {
			return a.d - b.d
		}
		return strings.Compare(a.name, b.name)
	})
	var res []string
	for i := 0; i < len(out) && i < 3; i++ {
		res = append(res, out[i].name)
	}
	return res
}

// editDistance is Levenshtein's distance between a and b, in bytes (names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// trafficAdvice says what to do about a Route that cannot assign its traffic: the
// target it names, and what exists instead.
func trafficAdvice(c Chain, is *trafficIssue, ns string) []string {
	switch {
	case is.State == targetMissing && is.Kind == "Revision":
		cfg, names := revisionsInstead(&c, is.Name)
		instead := "no Revision exists to name instead"
		if len(names) > 0 {
			instead = fmt.Sprintf("Configuration %s has %s", cfg, strings.Join(firstN(names, 5), ", "))
		}
		return []string{
			fmt.Sprintf("Revision %q does not exist (%s): name an existing one in %s, or remove that entry.", is.Name, instead, trafficField(&c, is)),
			fmt.Sprintf("`kubectl get revisions -n %s` lists them; a Revision is named when the template changes (spec.template.metadata.name, or <configuration>-<generation>).", ns),
		}
	case is.State == targetMissing:
		var all []string
		for _, m := range c.Neighbours {
			all = append(all, m.Name)
		}
		instead := "none has a similar name"
		if sim := similarNames(is.Name, all); len(sim) > 0 {
			instead = "similar: " + strings.Join(sim, ", ")
		} else if len(all) > 0 {
			slices.Sort(all)
			instead += "; it has " + strings.Join(firstN(all, 5), ", ")
		}
		return []string{
			fmt.Sprintf("Configuration %q does not exist in namespace %s (%s): name an existing one in %s, or create it.", is.Name, ns, instead, trafficField(&c, is)),
			fmt.Sprintf("`kubectl get configurations -n %s` lists them.", ns),
		}
	case is.State == targetCreating:
		return []string{fmt.Sprintf("The Configuration is creating Revision %q, which %s names: run this again in a few seconds; if it stays so, the Configuration's conditions above say why.", is.Name, trafficField(&c, is))}
	case is.State == targetNotReady || is.State == targetFailed:
		kind := strings.ToLower(is.Kind)
		return []string{
			fmt.Sprintf("The Route waits for %s %q, which %s names: `ferry explain %s %s -n %s` says why it is not Ready.", is.Kind, is.Name, trafficField(&c, is), kind, is.Name, ns),
			"Name a Ready Revision there meanwhile, if it should serve now.",
		}
	case is.Cond.Reason == v1.ReasonErrorConfig:
		return []string{
			"Ferry's configuration gives the Route a host that is not a valid domain name (message above): fix config-domain, or config-network's domain-template, in ferry-system.",
			"`kubectl -n ferry-system get cm config-domain config-network -o yaml`; every Route is reconciled again when they change.",
		}
	}
	return []string{"The Route's traffic cannot be assigned (message above): fix spec.traffic as it says."}
}

func firstN(s []string, n int) []string {
	if len(s) > n {
		return append(slices.Clone(s[:n]), "…")
	}
	return s
}
