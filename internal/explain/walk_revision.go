package explain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	revisionresources "github.com/ferry-serving/ferry/internal/reconciler/revision/resources"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// revision walks a Revision at depth and below it its Deployment (named by
// revisionresources.DeploymentName), ReplicaSet and pods. say explains a Revision that
// is not Ready: down to its Deployment, and to its pods while the Deployment is short
// of them.
func (w *walker) revision(depth int, rev *v1.Revision, role string, say bool) {
	c := w.c
	summary := knativeSummary(rev.Generation, &rev.Status.Status)
	if len(rev.Spec.Containers) > 0 {
		summary += "; image " + rev.Spec.Containers[0].Image
	}
	w.add(Step{Depth: depth, Kind: "Revision", Name: rev.Name, Role: role, Done: rev.IsReady(), Summary: summary,
		Events: w.events("Revision", rev.Name, rev.UID)})
	revLine := fmt.Sprintf("Revision %s: %s", rev.Name, describeStatus(rev.Generation, &rev.Status.Status, false))
	revKind := "Revision " + conditionKind(rev.Generation, &rev.Status.Status)
	if say {
		w.line(depth, revLine)
		if refusedOrTaken(&rev.Status.Status) {
			// A Deployment or PodAutoscaler the API server refused, or whose name is
			// taken: the Revision's condition says why, not what is below it.
			w.blame(revLine, revKind)
		}
	}

	dep := c.Deployments[rev.Name]
	if dep == nil {
		name := revisionresources.DeploymentName(rev.Name)
		w.missing(depth+1, "Deployment", name, "missing")
		if !say {
			return
		}
		line := fmt.Sprintf("Deployment %s: missing", name)
		w.line(depth+1, line)
		if rev.Status.ObservedGeneration == rev.Generation {
			w.blame(revLine, revKind)
		} else {
			w.blame(line, "Deployment missing")
		}
		return
	}
	want := replicas(dep)
	depLine := describeDeployment(dep)
	w.add(Step{Depth: depth + 1, Kind: "Deployment", Name: dep.Name, Done: dep.Status.AvailableReplicas >= want,
		Summary: strings.TrimPrefix(depLine, "Deployment "+dep.Name+": "),
		Events:  w.events("Deployment", dep.Name, dep.UID)})
	if say {
		w.line(depth+1, depLine)
		if dep.Status.AvailableReplicas >= want {
			// The pods are there; the Revision has not caught up.
			w.blame(revLine, revKind+" (its Deployment is available)")
			say = false
		}
	}

	podDepth := depth + 2
	rs := NewestReplicaSet(c.ReplicaSets[rev.Name])
	if c.ReplicaSets != nil {
		if rs == nil {
			w.missing(depth+2, "ReplicaSet", "", "none yet (the controller manager has not created it)")
		} else {
			w.replicaSet(depth+2, rs)
		}
		podDepth++
	}
	pods := slices.Clone(c.Pods[rev.Name])
	if say && rev.IsFailed() && len(pods) > 0 && !slices.ContainsFunc(pods, podSaysWhy) {
		// Pods that are merely not ready say less than the Revision that gave up on
		// them (ProgressDeadlineExceeded).
		w.blame(revLine, revKind)
	}
	if len(pods) == 0 {
		if want > 0 {
			w.missing(podDepth, "Pod", "", "none")
		}
		if say {
			w.noPods(depth+2, rev, rs, depLine)
		}
		return
	}
	w.pods(depth+2, podDepth, pods, say, depLine)
}

// replicaSet is the step of the ReplicaSet of the Deployment's latest rollout.
func (w *walker) replicaSet(depth int, rs *appsv1.ReplicaSet) {
	want := int32(1)
	if rs.Spec.Replicas != nil {
		want = *rs.Spec.Replicas
	}
	summary := fmt.Sprintf("%d/%d pods created, %d ready", rs.Status.Replicas, want, rs.Status.ReadyReplicas)
	f := replicaFailure(rs)
	if f != nil {
		summary += "; " + formatCondition(string(f.Type), string(f.Status), f.Reason, f.Message)
	}
	w.add(Step{Depth: depth, Kind: "ReplicaSet", Name: rs.Name, Done: f == nil && rs.Status.Replicas >= want, Summary: summary,
		Events: w.events("ReplicaSet", rs.Name, rs.UID)})
}

// noPods explains a Deployment short of pods that has none: the ReplicaSet says why,
// or the ReplicaSet is not there or not scaled yet.
func (w *walker) noPods(depth int, rev *v1.Revision, rs *appsv1.ReplicaSet, depLine string) {
	if rs != nil {
		if f := replicaFailure(rs); f != nil {
			line := fmt.Sprintf("ReplicaSet %s: %s", rs.Name, formatCondition(string(f.Type), string(f.Status), f.Reason, f.Message))
			w.line(depth, line)
			w.blame(line, "ReplicaSet "+formatCondition(string(f.Type), string(f.Status), f.Reason, ""))
			return
		}
	}
	w.line(depth, fmt.Sprintf("Pods of %s: none (ReplicaSet not created or not scaled yet)", rev.Name))
	w.blame(depLine, "Deployment no pods")
}

// pods adds a step for at most three pods, the not-ready ones first. say gives the
// not-ready ones a line each (at lineDepth, as if under the Deployment) and blames
// the first.
func (w *walker) pods(lineDepth, depth int, pods []corev1.Pod, say bool, depLine string) {
	slices.SortStableFunc(pods, func(p, q corev1.Pod) int { return boolRank(podReady(&p)) - boolRank(podReady(&q)) })
	nReady := 0
	for i := range pods {
		if podReady(&pods[i]) {
			nReady++
		}
	}
	for i := range pods {
		if i == 3 {
			w.add(Step{Depth: depth, Kind: "Pod", Done: true, Skipped: true,
				Summary: fmt.Sprintf("… %d more (%d of %d pods ready)", len(pods)-3, nReady, len(pods))})
			break
		}
		p := &pods[i]
		line, kind, ready := describePod(p)
		w.add(Step{Depth: depth, Kind: "Pod", Name: p.Name, Done: ready, Summary: strings.TrimPrefix(line, "Pod "+p.Name+": "),
			Events: w.events("Pod", p.Name, p.UID)})
		if say && !ready {
			w.line(lineDepth, line)
			w.blame(line, kind)
		}
	}
	if !say {
		return
	}
	if notReady := len(pods) - nReady; notReady > 3 {
		w.line(lineDepth, fmt.Sprintf("… %d more pods not ready", notReady-3))
	} else if notReady == 0 {
		w.blame(depLine, "Deployment not available")
	}
}

// refusedOrTaken says a Knative status has a condition False because a child could not
// be written: refused by the API server, or its name taken by another owner's object.
func refusedOrTaken(s *duck.Status) bool {
	for _, c := range s.Conditions {
		if c.Status == corev1.ConditionFalse && (c.Reason == duck.ReasonNotOwned || c.Reason == duck.ReasonCreationFailed || c.Reason == duck.ReasonUpdateFailed) {
			return true
		}
	}
	return false
}

// taken says a Knative status has a condition False because a child's name is taken
// by an object of another owner.
func taken(s *duck.Status) bool {
	return slices.ContainsFunc(s.Conditions, func(c duck.Condition) bool {
		return c.Status == corev1.ConditionFalse && c.Reason == duck.ReasonNotOwned
	})
}

// podSaysWhy says a pod that is not ready gives a reason of its own: a container
// waiting or terminated with one, or not scheduled.
func podSaysWhy(p corev1.Pod) bool {
	if podReady(&p) {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return true
		}
	}
	for _, cs := range unfinished(&p) {
		if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
			return true
		}
		if cs.State.Terminated != nil || cs.LastTerminationState.Terminated != nil {
			return true
		}
	}
	return false
}
