package explain

// Which of the objects read an explanation speaks of: the latest Revision, the
// newest ReplicaSet, a child that is not the Service's.

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

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
