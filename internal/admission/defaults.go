package admission

import (
	"context"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The defaulting itself is the API types' SetDefaults, which the reconcilers run too;
// admission adds the creator/lastModifier annotations of the requesting user.

// DefaultService fills in what Knative's defaulting webhook does for a Service: the
// template's defaults, the traffic default, and the creator/lastModifier annotations
// from the requesting user. old is nil on create; username "" sets no annotations.
func DefaultService(cfg *config.Config, s, old *servingv1.Service, username string) {
	ctx := config.ToContext(context.Background(), cfg)
	var oldSpec any
	if old != nil {
		ctx, oldSpec = servingv1.WithinUpdate(ctx, old), old.Spec
	}
	s.SetDefaults(ctx)
	setUserInfo(&s.ObjectMeta, oldSpec, s.Spec, old != nil, username)
}

// DefaultConfiguration fills in a Configuration's defaults; the user annotations only
// when no one owns it (a Service's Configuration carries the Service's).
func DefaultConfiguration(cfg *config.Config, c, old *servingv1.Configuration, username string) {
	ctx := config.ToContext(context.Background(), cfg)
	var oldSpec any
	if old != nil {
		ctx, oldSpec = servingv1.WithinUpdate(ctx, old), old.Spec
	}
	c.SetDefaults(ctx)
	if c.OwnerReferences == nil {
		setUserInfo(&c.ObjectMeta, oldSpec, c.Spec, old != nil, username)
	}
}

// DefaultRevision fills in a Revision's defaults on create; an update is never
// defaulted (the spec is immutable, and new defaults would change it).
func DefaultRevision(cfg *config.Config, r, old *servingv1.Revision) {
	ctx := config.ToContext(context.Background(), cfg)
	if old != nil {
		ctx = servingv1.WithinUpdate(ctx, old)
	}
	r.SetDefaults(ctx)
}

// DefaultRoute fills in each traffic target's latestRevision and percent, and the user
// annotations of a Route no one owns.
func DefaultRoute(cfg *config.Config, r, old *servingv1.Route, username string) {
	r.SetDefaults(config.ToContext(context.Background(), cfg))
	if r.OwnerReferences == nil {
		var oldSpec any
		if old != nil {
			oldSpec = old.Spec
		}
		setUserInfo(&r.ObjectMeta, oldSpec, r.Spec, old != nil, username)
	}
}

func setUserInfo(om *metav1.ObjectMeta, oldSpec, newSpec any, update bool, username string) {
	if username == "" {
		return
	}
	if update && equality.Semantic.DeepEqual(oldSpec, newSpec) {
		return
	}
	if om.Annotations == nil {
		om.Annotations = map[string]string{}
	}
	if !update {
		om.Annotations[creatorAnnotation] = username
	}
	om.Annotations[modifierAnnotation] = username
}
