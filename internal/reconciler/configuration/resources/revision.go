// Package resources builds the Revisions a Configuration stamps out.
package resources

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/kmeta"
)

// RevisionName is the name of the Revision for the Configuration's current generation:
// the template's own name when the user chose one, else <config>-<generation, five
// digits>, hashed by kmeta.ChildName to fit 63 characters when the Configuration's name
// is over 57 (as Knative does; shorter names are unchanged, so existing Revisions keep
// theirs). Deterministic names are what make a second create of the same generation
// fail with AlreadyExists instead of making a twin.
func RevisionName(cfg *v1.Configuration) string {
	if n := cfg.Spec.Template.ObjectMeta.Name; n != "" {
		return n
	}
	return kmeta.ChildName(cfg.Name, fmt.Sprintf("-%05d", cfg.Generation))
}

// CheckRevisionName reports a user-chosen name Knative's webhook would reject.
func CheckRevisionName(cfg *v1.Configuration) error {
	n := cfg.Spec.Template.ObjectMeta.Name
	if n != "" && !strings.HasPrefix(n, cfg.Name+"-") {
		return fmt.Errorf("revision name %q must have the prefix %q", n, cfg.Name+"-")
	}
	return nil
}

// Generation reads the configurationGeneration label of a Revision (0 when absent).
func Generation(rev *v1.Revision) int64 {
	g, _ := strconv.ParseInt(rev.Labels[v1.ConfigurationGenerationLabelKey], 10, 64)
	return g
}

// IsLatestCreated says whether rev, the Revision of the Configuration's current name,
// is the one its current generation stands for, as Knative's CheckNameAvailability
// (pkg/reconciler/configuration) decides: the Configuration must control it, and it
// must be of the current generation or, when the template names its Revision, have the
// spec the template makes (desired: MakeRevision's). Labels and annotations are not
// compared, nor rewritten: a user may have added some, and the generation label keeps
// saying which generation made it. So a template applied again under the same name
// (a rollback) takes back its Revision instead of reporting the name taken.
func IsLatestCreated(rev, desired *v1.Revision, cfg *v1.Configuration) bool {
	switch {
	case !metav1.IsControlledBy(rev, cfg):
		return false
	case Generation(rev) == cfg.Generation:
		return true
	default:
		return cfg.Spec.Template.ObjectMeta.Name != "" && equality.Semantic.DeepEqual(rev.Spec, desired.Spec)
	}
}

// MakeRevision builds the Revision of the Configuration's current generation from its
// template, defaulted as Knative's webhook would have written it into the
// Configuration (with ctx's configuration, see v1.Configuration.SetDefaults). The
// Revision carries the defaults itself, so that it says exactly what runs.
func MakeRevision(ctx context.Context, cfg *v1.Configuration) *v1.Revision {
	defaulted := cfg.DeepCopy()
	defaulted.SetDefaults(ctx)
	tmpl := &defaulted.Spec.Template

	labels := make(map[string]string, len(tmpl.ObjectMeta.Labels)+6)
	for k, v := range tmpl.ObjectMeta.Labels {
		labels[k] = v
	}
	labels[v1.ConfigurationLabelKey] = cfg.Name
	labels[v1.ConfigurationGenerationLabelKey] = strconv.FormatInt(cfg.Generation, 10)
	labels[v1.ConfigurationUIDLabelKey] = string(cfg.UID)
	// Not yet seen by a Route (package routingstate labels it active or reserve),
	// unless a Route follows the Configuration's latest Revision: then active at once,
	// as Knative does. Knative also stamps routingStateModified here; unset, config-gc
	// counts from the creation, the same instant.
	annotations := kmeta.WithoutLastApplied(tmpl.ObjectMeta.Annotations)
	labels[v1.RoutingStateLabelKey] = string(v1.RoutingStatePending)
	if routes, ok := cfg.Annotations[v1.RoutesAnnotationKey]; ok {
		labels[v1.RoutingStateLabelKey] = string(v1.RoutingStateActive)
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[v1.RoutesAnnotationKey] = routes
	}
	for _, k := range []string{v1.ServiceLabelKey, v1.ServiceUIDLabelKey} {
		if v, ok := cfg.Labels[k]; ok {
			labels[k] = v
		}
	}

	return &v1.Revision{
		ObjectMeta: metav1.ObjectMeta{
			Name:            RevisionName(cfg),
			Namespace:       cfg.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cfg, v1.SchemeGroupVersion.WithKind("Configuration"))},
		},
		Spec: tmpl.Spec,
	}
}
