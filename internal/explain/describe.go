package explain

// One line for an object's state: its conditions that are not True, its pods', its
// Deployment's, as `ferry explain` prints them.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/ferry-serving/ferry/api/duck"
)

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
	for _, cs := range unfinished(p) {
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

// unfinished are the statuses of the pod's containers that may say why it is not
// ready: its init containers' (but those that completed, as every one of a running
// pod has) and its containers'.
func unfinished(p *corev1.Pod) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, cs := range p.Status.InitContainerStatuses {
		if t := cs.State.Terminated; t == nil || t.ExitCode != 0 {
			out = append(out, cs)
		}
	}
	return append(out, p.Status.ContainerStatuses...)
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
