// Package v1alpha1 holds Knative's PodAutoscaler (autoscaling.internal.knative.dev/v1alpha1):
// one per Revision, named after it and owned by it, saying what to scale
// (scaleTargetRef) and reporting the autoscaler's decision (desiredScale) and what
// runs (actualScale). Ferry keeps Knative's JSON shape, conditions and printer
// columns, so `kubectl get kpa` reads the same.
//
// +kubebuilder:object:generate=true
// +groupName=autoscaling.internal.knative.dev
package v1alpha1
