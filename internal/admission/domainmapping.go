package admission

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	"github.com/ferry-serving/ferry/internal/config"
)

// clusterDomain is the cluster's DNS domain: a DomainMapping may not map a name under
// it (Knative's network.GetClusterDomainName).
var clusterDomain = strings.TrimPrefix(config.ClusterLocalDomain, "svc.")

// DefaultDomainMapping defaults the reference's namespace to the DomainMapping's and
// sets the user annotations, as Knative's DomainMapping SetDefaults does.
func DefaultDomainMapping(dm, old *v1beta1.DomainMapping, username string) {
	dm.SetDefaults()
	setUserInfo(&dm.ObjectMeta, username, old != nil, old != nil && !equality.Semantic.DeepEqual(old.Spec, dm.Spec))
}

// ValidateDomainMapping checks a DomainMapping as Knative does (pkg/apis/serving/
// v1beta1 domainmapping_validation.go and knative.dev/pkg KReference.Validate); old is
// nil on create.
func ValidateDomainMapping(dm, old *v1beta1.DomainMapping) *FieldError {
	var meta *FieldError
	if dm.GenerateName != "" {
		meta = meta.Also(ErrDisallowedFields("generateName"))
	}
	if err := validation.IsFullyQualifiedDomainName(field.NewPath("name"), dm.Name); len(err) > 0 {
		meta = meta.Also(ErrGeneric(fmt.Sprintf("invalid name %q: %s", dm.Name, err.ToAggregate()), "name"))
	}
	if strings.HasSuffix(dm.Name, "."+clusterDomain) {
		meta = meta.Also(ErrGeneric(fmt.Sprintf("invalid name %q: must not be a subdomain of cluster local domain %q", dm.Name, clusterDomain), "name"))
	}
	if old != nil {
		meta = meta.Also(validateCreatorAndModifier(old.Spec, dm.Spec, old.Annotations, dm.Annotations).ViaField("annotations"))
	}
	errs := meta.ViaField("metadata").Also(validateKReference(&dm.Spec.Ref, dm.Namespace).ViaField("spec", "ref"))
	if dm.Spec.TLS != nil && dm.Spec.TLS.SecretName == "" {
		// Knative's schema requires it, but its webhook's round trip through the Go
		// type writes "" before the schema looks; a secret without a name cannot serve.
		errs = errs.Also(ErrMissingField("spec.tls.secretName"))
	}
	return errs
}

// validateKReference: name, apiVersion and kind are required, group is refused (Knative's
// kreference-group feature is off), and a namespace must be the parent's.
func validateKReference(ref *v1beta1.KReference, parentNS string) *FieldError {
	var errs *FieldError
	if ref.Name == "" {
		errs = errs.Also(ErrMissingField("name"))
	}
	if ref.Group != "" {
		errs = errs.Also(ErrDisallowedFields("group"))
	}
	if ref.APIVersion == "" {
		errs = errs.Also(ErrMissingField("apiVersion"))
	}
	if ref.Kind == "" {
		errs = errs.Also(ErrMissingField("kind"))
	}
	if ref.Namespace != "" && parentNS != "" && ref.Namespace != parentNS {
		errs = errs.Also(newErr("mismatched namespaces", fmt.Sprintf("parent namespace: %q does not match ref: %q", parentNS, ref.Namespace), "namespace"))
	}
	return errs
}
