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
	s.SetDefaults(defaultingContext(cfg, old))
	setUserInfo(&s.ObjectMeta, username, old != nil, old != nil && !equality.Semantic.DeepEqual(old.Spec, s.Spec))
}

// DefaultConfiguration fills in a Configuration's defaults; the user annotations only
// when no one owns it (a Service's Configuration carries the Service's).
func DefaultConfiguration(cfg *config.Config, c, old *servingv1.Configuration, username string) {
	c.SetDefaults(defaultingContext(cfg, old))
	if c.OwnerReferences == nil {
		setUserInfo(&c.ObjectMeta, username, old != nil, old != nil && !equality.Semantic.DeepEqual(old.Spec, c.Spec))
	}
}

// DefaultRevision fills in a Revision's defaults on create; an update is never
// defaulted (the spec is immutable, and new defaults would change it).
func DefaultRevision(cfg *config.Config, r, old *servingv1.Revision) {
	r.SetDefaults(defaultingContext(cfg, old))
}

// defaultingContext is what SetDefaults reads: the configuration and, on an update
// (old not nil), the object as it was.
func defaultingContext[T any](cfg *config.Config, old *T) context.Context {
	ctx := config.ToContext(context.Background(), cfg)
	if old != nil {
		ctx = servingv1.WithinUpdate(ctx, old)
	}
	return ctx
}

// DefaultRoute fills in each traffic target's latestRevision and percent, and the user
// annotations of a Route no one owns.
func DefaultRoute(cfg *config.Config, r, old *servingv1.Route, username string) {
	r.SetDefaults(config.ToContext(context.Background(), cfg))
	if r.OwnerReferences == nil {
		setUserInfo(&r.ObjectMeta, username, old != nil, old != nil && !equality.Semantic.DeepEqual(old.Spec, r.Spec))
	}
}

// setUserInfo records the requesting user as creator on create, and as lastModifier on
// create and on an update that changes the spec; username "" records no one.
func setUserInfo(om *metav1.ObjectMeta, username string, update, specChanged bool) {
	if username == "" || update && !specChanged {
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
