// Package scheme is the one runtime.Scheme of Ferry's clients: Kubernetes' kinds and
// every kind of Ferry's API. The manager, the commands that talk to a cluster (scale,
// explain), the convergence simulation and the table tests all build theirs here, so
// that a kind added to api/ is known everywhere at once.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	autoscalingv1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	networkingv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	servingv1beta1 "github.com/ferry-serving/ferry/api/serving/v1beta1"
)

// New returns a scheme with Kubernetes' kinds and Ferry's.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, servingv1.AddToScheme, servingv1beta1.AddToScheme, networkingv1alpha1.AddToScheme, autoscalingv1alpha1.AddToScheme} {
		if err := add(s); err != nil {
			panic(err) // only a programming error: the kinds are fixed at build time
		}
	}
	return s
}
