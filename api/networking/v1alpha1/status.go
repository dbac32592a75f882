package v1alpha1

import "github.com/ferry-serving/ferry/api/duck"

// DuckStatus returns the KIngress's Knative status, for code that handles every
// Knative kind alike.
func (i *Ingress) DuckStatus() *duck.Status { return &i.Status.Status }
