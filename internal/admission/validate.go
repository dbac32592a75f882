package admission

import (
	"fmt"
	"strings"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8svalidation "k8s.io/apimachinery/pkg/util/validation"
)

// The creator and lastModifier annotations Knative keeps on user-made objects.
const (
	creatorAnnotation  = servingv1.CreatorAnnotation
	modifierAnnotation = servingv1.LastModifierAnnotation
)

// ValidateService checks a Service as Knative's webhook does; old is nil on create.
func ValidateService(cfg *config.Config, s, old *servingv1.Service) *FieldError {
	errs := validateObjectMeta(&s.ObjectMeta).
		Also(validateNoAutoscalingAnnotations(s.Annotations).ViaField("annotations")).
		Also(validateRolloutDuration(s.Annotations).ViaField("annotations")).
		ViaField("metadata")
	errs = errs.Also(validateTemplate(cfg, &s.Spec.Template, &s.ObjectMeta).ViaField("spec", "template"))
	errs = errs.Also(validateTraffic(s.Spec.Traffic, true).ViaField("spec", "traffic"))
	if old != nil {
		errs = errs.Also(validateCreatorAndModifier(old.Spec, s.Spec, old.Annotations, s.Annotations).ViaField("metadata.annotations"))
		errs = errs.Also(verifyNameChange(&s.Spec.Template, &old.Spec.Template).ViaField("spec.template"))
	}
	return errs
}

// ValidateConfiguration checks a Configuration; old is nil on create.
func ValidateConfiguration(cfg *config.Config, c, old *servingv1.Configuration) *FieldError {
	errs := validateObjectMeta(&c.ObjectMeta).
		Also(validateNoAutoscalingAnnotations(c.Annotations).ViaField("annotations")).
		Also(labelOwnedBy(c.Labels, servingv1.ServiceLabelKey, "Service", c.OwnerReferences).ViaField("labels")).
		ViaField("metadata")
	errs = errs.Also(validateTemplate(cfg, &c.Spec.Template, &c.ObjectMeta).ViaField("spec", "template"))
	if old != nil {
		if c.OwnerReferences == nil {
			errs = errs.Also(validateCreatorAndModifier(old.Spec, c.Spec, old.Annotations, c.Annotations).ViaField("metadata.annotations"))
		}
		errs = errs.Also(verifyNameChange(&c.Spec.Template, &old.Spec.Template).ViaField("spec.template"))
	}
	return errs
}

// ValidateRevision checks a Revision; old is nil on create. A Revision's spec never
// changes once created.
func ValidateRevision(cfg *config.Config, r, old *servingv1.Revision) *FieldError {
	errs := validateObjectMeta(&r.ObjectMeta).
		Also(validateAutoscalingAnnotations(cfg.Autoscaler, r.Annotations).ViaField("annotations")).
		Also(validateFerryAnnotations(r.Annotations).ViaField("annotations")).
		Also(labelOwnedBy(r.Labels, servingv1.ConfigurationLabelKey, "Configuration", r.OwnerReferences).ViaField("labels")).
		ViaField("metadata")
	if old != nil {
		if diff := cmp.Diff(old.Spec, r.Spec, cmpopts.EquateEmpty()); diff != "" {
			return errs.Also(ErrGeneric("Immutable fields changed (-old +new)", "spec").WithDetails(diff))
		}
		return errs
	}
	return errs.Also(validateRevisionSpec(cfg, &r.Spec).ViaField("spec"))
}

// ValidateRoute checks a Route; old is nil on create.
func ValidateRoute(_ *config.Config, r, old *servingv1.Route) *FieldError {
	errs := validateObjectMeta(&r.ObjectMeta).
		Also(validateNoAutoscalingAnnotations(r.Annotations).ViaField("annotations")).
		Also(labelOwnedBy(r.Labels, servingv1.ServiceLabelKey, "Service", r.OwnerReferences).ViaField("labels")).
		Also(validateRolloutDuration(r.Annotations).ViaField("annotations")).
		ViaField("metadata")
	errs = errs.Also(validateTraffic(r.Spec.Traffic, false).ViaField("spec", "traffic"))
	if old != nil && r.OwnerReferences == nil {
		errs = errs.Also(validateCreatorAndModifier(old.Spec, r.Spec, old.Annotations, r.Annotations).ViaField("metadata.annotations"))
	}
	return errs
}

// validateObjectMeta: names are DNS-1035 labels (Knative's rule for all four kinds).
func validateObjectMeta(om *metav1.ObjectMeta) *FieldError {
	if om.GenerateName != "" {
		if msgs := validation.NameIsDNS1035Label(om.GenerateName, true); len(msgs) > 0 {
			return ErrGeneric(fmt.Sprintf("not a DNS 1035 label prefix: %v", msgs), "generateName")
		}
	}
	if om.Name != "" {
		if msgs := validation.NameIsDNS1035Label(om.Name, false); len(msgs) > 0 {
			return ErrGeneric(fmt.Sprintf("not a DNS 1035 label: %v", msgs), "name")
		}
	}
	if om.GenerateName == "" && om.Name == "" {
		return ErrGeneric("name or generateName is required", "name")
	}
	return nil
}

// labelOwnedBy: an object labelled with its owner's name must have that owner.
func labelOwnedBy(labels map[string]string, label, kind string, refs []metav1.OwnerReference) *FieldError {
	val, ok := labels[label]
	if !ok {
		return nil
	}
	for _, ref := range refs {
		if ref.Kind == kind && ref.Name == val {
			return nil
		}
	}
	return ErrMissingField(label)
}

func validateCreatorAndModifier(oldSpec, newSpec any, oldAnns, newAnns map[string]string) *FieldError {
	var errs *FieldError
	if oldAnns[creatorAnnotation] != newAnns[creatorAnnotation] {
		errs = errs.Also(ErrGeneric("annotation value is immutable", creatorAnnotation))
	}
	if equality.Semantic.DeepEqual(oldSpec, newSpec) && oldAnns[modifierAnnotation] != newAnns[modifierAnnotation] {
		errs = errs.Also(ErrInvalidValue(newAnns[modifierAnnotation], modifierAnnotation))
	}
	return errs
}

// verifyNameChange: a user-chosen revision name must change with the template.
func verifyNameChange(t, old *servingv1.RevisionTemplateSpec) *FieldError {
	if t.ObjectMeta.Name == "" || t.ObjectMeta.Name != old.ObjectMeta.Name {
		return nil
	}
	if diff := cmp.Diff(old, t, cmpopts.EquateEmpty()); diff != "" {
		return ErrGeneric("Saw the following changes without a name change (-old +new)", "metadata.name").WithDetails(diff)
	}
	return nil
}

// validateTemplate checks a RevisionTemplateSpec inside parent (a Service or a
// Configuration).
func validateTemplate(cfg *config.Config, t *servingv1.RevisionTemplateSpec, parent *metav1.ObjectMeta) *FieldError {
	errs := validateRevisionSpec(cfg, &t.Spec).ViaField("spec")
	errs = errs.Also(validateAutoscalingAnnotations(cfg.Autoscaler, t.ObjectMeta.Annotations).ViaField("metadata.annotations"))
	errs = errs.Also(validateNetworkingAnnotations(t.ObjectMeta.Annotations).ViaField("metadata.annotations"))
	errs = errs.Also(validateFerryAnnotations(t.ObjectMeta.Annotations).ViaField("metadata.annotations"))
	errs = errs.Also(validateRevisionName(t.ObjectMeta.Name, t.ObjectMeta.GenerateName, parent))
	errs = errs.Also(validateQueueSidecarAnnotations(t.ObjectMeta.Annotations).ViaField("metadata.annotations"))
	errs = errs.Also(validateDurationAnnotation(t.ObjectMeta.Annotations, progressDeadlineAnn, "progress-deadline").ViaField("metadata.annotations"))
	return errs
}

// validateRevisionName: Knative's "bring your own revision name" rules.
func validateRevisionName(name, generateName string, parent *metav1.ObjectMeta) *FieldError {
	if generateName != "" {
		if msgs := validation.NameIsDNS1035Label(generateName, true); len(msgs) > 0 {
			return ErrInvalidValue(fmt.Sprint("not a DNS 1035 label prefix: ", msgs), "metadata.generateName")
		}
	}
	if name == "" {
		return nil
	}
	if msgs := validation.NameIsDNS1035Label(name, false); len(msgs) > 0 {
		return ErrInvalidValue(fmt.Sprint("not a DNS 1035 label: ", msgs), "metadata.name")
	}
	if parent.Name == "" && parent.GenerateName != "" {
		// A parent named by the API server cannot predict its revisions' prefix.
		return ErrDisallowedFields("metadata.name")
	}
	prefix := parent.Name + "-"
	if !strings.HasPrefix(name, prefix) {
		return ErrInvalidValue(fmt.Sprintf("%q must have prefix %q", name, prefix), "metadata.name")
	}
	return nil
}

func validateRevisionSpec(cfg *config.Config, rs *servingv1.RevisionSpec) *FieldError {
	errs := ValidatePodSpec(&rs.PodSpec, cfg)
	d := cfg.Defaults
	if t := rs.TimeoutSeconds; t != nil && *t != 0 && (*t < 0 || *t > d.MaxRevisionTimeoutSeconds) {
		errs = errs.Also(ErrOutOfBoundsValue(*t, 0, d.MaxRevisionTimeoutSeconds, "timeoutSeconds"))
	}
	if cc := rs.ContainerConcurrency; cc != nil {
		var lo int64
		if !d.AllowContainerConcurrencyZero {
			lo = 1
		}
		if *cc < lo || *cc > d.ContainerConcurrencyMaxLimit {
			errs = errs.Also(ErrOutOfBoundsValue(*cc, lo, d.ContainerConcurrencyMaxLimit, "containerConcurrency"))
		}
	}
	return errs
}

// validateTraffic is Knative's traffic check for a spec (inService: the Service's own
// Configuration is implied, so configurationName is not allowed).
func validateTraffic(tt []servingv1.TrafficTarget, inService bool) *FieldError {
	var errs *FieldError
	tags := map[string]int{}
	var sum int64
	for i, t := range tt {
		var terrs *FieldError
		if t.LatestRevision != nil && *t.LatestRevision == (t.RevisionName != "") {
			terrs = terrs.Also(ErrGeneric(fmt.Sprintf("may not set revisionName %q when latestRevision is %t", t.RevisionName, *t.LatestRevision), "latestRevision"))
		}
		switch {
		case inService && t.ConfigurationName != "":
			terrs = terrs.Also(ErrDisallowedFields("configurationName"))
		case t.RevisionName != "" && t.ConfigurationName != "":
			terrs = terrs.Also(ErrMultipleOneOf("revisionName", "configurationName"))
		case t.RevisionName != "":
			if msgs := k8svalidation.IsQualifiedName(t.RevisionName); len(msgs) > 0 {
				terrs = terrs.Also(ErrInvalidKeyName(t.RevisionName, "revisionName", msgs...))
			}
		case t.ConfigurationName != "":
			if msgs := k8svalidation.IsQualifiedName(t.ConfigurationName); len(msgs) > 0 {
				terrs = terrs.Also(ErrInvalidKeyName(t.ConfigurationName, "configurationName", msgs...))
			}
		case inService:
		default:
			terrs = terrs.Also(ErrMissingOneOf("revisionName", "configurationName"))
		}
		if p := t.Percent; p != nil {
			if *p < 0 || *p > 100 {
				terrs = terrs.Also(ErrOutOfBoundsValue(*p, 0, 100, "percent"))
			}
			sum += *p
		}
		if t.URL != "" {
			terrs = terrs.Also(ErrDisallowedFields("url"))
		}
		errs = errs.Also(terrs.ViaIndex(i))
		if t.Tag == "" {
			continue
		}
		if msgs := k8svalidation.IsDNS1035Label(t.Tag); len(msgs) > 0 {
			errs = errs.Also(ErrInvalidValue(fmt.Sprint("not a DNS 1035 label: ", msgs), CurrentField).ViaFieldIndex("tag", i))
		}
		if j, ok := tags[t.Tag]; ok {
			errs = errs.Also(ErrGeneric(fmt.Sprintf("Multiple definitions for %q", t.Tag), fmt.Sprintf("[%d].tag", i), fmt.Sprintf("[%d].tag", j)))
		} else {
			tags[t.Tag] = i
		}
	}
	if sum != 100 {
		errs = errs.Also(ErrGeneric(fmt.Sprintf("Traffic targets sum to %d, want 100", sum), CurrentField))
	}
	return errs
}
