package v1beta1

// SetDefaults applies Knative's defaults to a DomainMapping (the creator and
// lastModifier annotations are the admission's, which knows the user): the reference
// is to an object in the DomainMapping's namespace unless it says otherwise.
func (dm *DomainMapping) SetDefaults() {
	if dm.Spec.Ref.Namespace == "" {
		dm.Spec.Ref.Namespace = dm.Namespace
	}
}
