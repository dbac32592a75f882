// Package duck holds the status shapes shared by every Knative kind: conditions with
// severity, the Status block (observedGeneration + conditions) and a ConditionSet that
// derives a "happy" condition (Ready) from its dependents.
//
// +kubebuilder:object:generate=true
package duck
