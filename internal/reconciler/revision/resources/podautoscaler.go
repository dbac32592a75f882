package resources

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
)

// The PodAutoscaler's protocol types (Knative's networking ProtocolType).
const (
	ProtocolHTTP1 = "http1"
	ProtocolH2C   = "h2c"
)

// MakePodAutoscaler builds the PodAutoscaler of a defaulted Revision, as Knative's
// Revision reconciler does (pkg/reconciler/revision/resources/pa.go):
//
//   - named after the Revision, in its namespace, with the Revision as controller owner;
//   - labelled as everything the Revision owns (Labels: not the route and
//     routingState labels, which Knative leaves off so that routing does not rewrite it);
//   - annotated as everything the Revision owns (Annotations), and with
//     autoscaling.knative.dev/class set to cfg's pod-autoscaler-class when the
//     Revision names none (Knative's PodAutoscaler defaulting);
//   - scaling the Revision's Deployment, with its containerConcurrency (0: none);
//   - Reachable while the Revision is routed (routingState active), Unreachable once it
//     is in reserve, else unknown;
//   - speaking h2c when the serving container's port is named h2c, else http1.
func MakePodAutoscaler(rev *v1.Revision, cfg *config.Autoscaler) *av1alpha1.PodAutoscaler {
	if cfg == nil {
		cfg = config.DefaultAutoscaler()
	}
	labels := Labels(rev)

	anns := Annotations(rev)
	if _, ok := anns[av1alpha1.ClassAnnotationKey]; !ok && cfg.PodAutoscalerClass != "" {
		if anns == nil {
			anns = map[string]string{}
		}
		anns[av1alpha1.ClassAnnotationKey] = cfg.PodAutoscalerClass
	}

	var cc int64
	if rev.Spec.ContainerConcurrency != nil {
		cc = *rev.Spec.ContainerConcurrency
	}
	return &av1alpha1.PodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{
			Name:            rev.Name,
			Namespace:       rev.Namespace,
			Labels:          labels,
			Annotations:     anns,
			OwnerReferences: []metav1.OwnerReference{ownerRef(rev)},
		},
		Spec: av1alpha1.PodAutoscalerSpec{
			ScaleTargetRef: corev1.ObjectReference{
				APIVersion: "apps/v1",
				Kind:       "Deployment",
				Name:       DeploymentName(rev.Name),
			},
			ContainerConcurrency: cc,
			Reachability:         reachability(rev),
			ProtocolType:         protocol(rev),
		},
	}
}

func reachability(rev *v1.Revision) av1alpha1.ReachabilityType {
	switch v1.RoutingState(rev.Labels[v1.RoutingStateLabelKey]) {
	case v1.RoutingStateActive:
		return av1alpha1.ReachabilityReachable
	case v1.RoutingStateReserve:
		return av1alpha1.ReachabilityUnreachable
	}
	return av1alpha1.ReachabilityUnknown
}

func protocol(rev *v1.Revision) string {
	if len(rev.Spec.Containers) == 0 {
		return ProtocolHTTP1
	}
	if ports := rev.Spec.Containers[rev.Spec.ServingContainer()].Ports; len(ports) > 0 && ports[0].Name == ProtocolH2C {
		return ProtocolH2C
	}
	return ProtocolHTTP1
}

// InitialReplicas is the replica count of a Revision's Deployment at creation: the
// initial scale (the autoscaling.knative.dev/initial-scale annotation, else cfg's
// initial-scale; an annotated 0 counts only where cfg allows zero initial scale, as in
// Knative's KPA), raised to min-scale (the annotation, else cfg's) and capped by a
// positive max-scale (the annotation, else cfg's). The camelCase legacy keys count
// too; a value that does not parse or is negative counts as absent (admission refuses
// them).
func InitialReplicas(rev *v1.Revision, cfg *config.Autoscaler) int32 {
	if cfg == nil {
		cfg = config.DefaultAutoscaler()
	}
	n := cfg.InitialScale
	if v, ok := scaleAnnotation(rev.Annotations, av1alpha1.InitialScaleAnnotation); ok && (v > 0 || cfg.AllowZeroInitialScale) {
		n = v
	}
	lo := cfg.MinScale
	if v, ok := scaleAnnotation(rev.Annotations, av1alpha1.MinScaleAnnotation); ok {
		lo = v
	}
	hi := cfg.MaxScale
	if v, ok := scaleAnnotation(rev.Annotations, av1alpha1.MaxScaleAnnotation); ok {
		hi = v
	}
	n = max(n, lo)
	if hi > 0 {
		n = min(n, hi)
	}
	return n
}

// scaleAnnotation reads the annotation as a scale (an int32 ≥ 0).
func scaleAnnotation(anns map[string]string, a av1alpha1.Annotation) (int32, bool) {
	_, s, ok := a.Get(anns)
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 32)
	if err != nil || v < 0 {
		return 0, false
	}
	return int32(v), true
}
