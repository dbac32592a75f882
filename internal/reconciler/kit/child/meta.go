package child

import (
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-serving/ferry/internal/kmeta"
)

// The helpers below are the building blocks of Ensure's update functions: each puts one
// part of desired back on have and reports whether it changed anything.

// Set sets *have to want unless they are semantically equal.
func Set[S any](have *S, want S) bool {
	if equality.Semantic.DeepEqual(*have, want) {
		return false
	}
	*have = want
	return true
}

// SetDerivative sets *have to want unless have already holds every field want sets:
// for specs whose unset fields the API server or others fill in (a Deployment's,
// a Service's).
func SetDerivative[S any](have *S, want S) bool {
	if equality.Semantic.DeepDerivative(want, *have) {
		return false
	}
	*have = want
	return true
}

// ReplaceMeta makes have's labels and annotations exactly desired's: for children whose
// metadata is all their owner's.
func ReplaceMeta(desired, have metav1.Object) bool {
	if equality.Semantic.DeepEqual(desired.GetLabels(), have.GetLabels()) &&
		equality.Semantic.DeepEqual(desired.GetAnnotations(), have.GetAnnotations()) {
		return false
	}
	have.SetLabels(desired.GetLabels())
	have.SetAnnotations(desired.GetAnnotations())
	return true
}

// MergeLabels puts desired's labels on have, keeping the keys others added.
func MergeLabels(desired, have metav1.Object) bool {
	if kmeta.Contains(have.GetLabels(), desired.GetLabels()) {
		return false
	}
	have.SetLabels(kmeta.Union(have.GetLabels(), desired.GetLabels()))
	return true
}

// MergeAnnotations puts desired's annotations on have, keeping the keys others added.
func MergeAnnotations(desired, have metav1.Object) bool {
	if kmeta.Contains(have.GetAnnotations(), desired.GetAnnotations()) {
		return false
	}
	have.SetAnnotations(kmeta.Union(have.GetAnnotations(), desired.GetAnnotations()))
	return true
}

// Replace makes a child that is all its owner's equal to desired: its spec (haveSpec
// points into have) and its labels and annotations.
func Replace[S any](desired, have metav1.Object, haveSpec *S, wantSpec S) bool {
	spec := Set(haveSpec, wantSpec)
	return ReplaceMeta(desired, have) || spec
}

// Merge makes a child whose spec is all its owner's but whose metadata others may add
// to match desired: its spec (haveSpec points into have), and desired's labels and
// annotations on top of have's.
func Merge[S any](desired, have metav1.Object, haveSpec *S, wantSpec S) bool {
	spec := Set(haveSpec, wantSpec)
	labels := MergeLabels(desired, have)
	return MergeAnnotations(desired, have) || labels || spec
}
