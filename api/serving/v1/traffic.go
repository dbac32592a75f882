package v1

// TrafficTarget names a Revision (directly, or as the latest ready Revision of a
// Configuration) and the share of traffic it gets.
//
// Rules that hold wherever a target appears are on this type; rules that depend on
// where it appears (Route or Service, spec or status) are on the fields that hold it:
// status.traffic names a revision and says latestRevision: true for the same target.
type TrafficTarget struct {
	// Tag is optionally used to expose a dedicated url for referencing this target exclusively.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Tag string `json:"tag,omitempty"`
	// RevisionName of a specific revision to which to send this portion of traffic.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	RevisionName string `json:"revisionName,omitempty"`
	// ConfigurationName of a configuration to whose latest ready revision we send this
	// portion of traffic. Not allowed inside a Service.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	ConfigurationName string `json:"configurationName,omitempty"`
	// LatestRevision may be provided to indicate that the latest ready Revision of the
	// Configuration should be used for this traffic target.
	// +optional
	LatestRevision *bool `json:"latestRevision,omitempty"`
	// Percent indicates that percentage based routing should be used and the value
	// indicates the percent of traffic that is routed to this Revision or Configuration.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	Percent *int64 `json:"percent,omitempty"`
	// URL displays the URL for accessing named traffic targets (status only).
	// +optional
	URL string `json:"url,omitempty"`
}

// RouteSpec holds the desired state of the Route (from the client).
type RouteSpec struct {
	// Traffic specifies how to distribute traffic over a collection of revisions and
	// configurations.
	// The per-target rules (latestRevision against revisionName, no url in spec, unique
	// tags, exactly one of revisionName/configurationName) are Ferry's admission
	// webhook's, which names the target's index as Knative does; CEL, which runs first,
	// could only name spec.traffic.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=100
	// +kubebuilder:validation:XValidation:rule="self.size() == 0 || self.map(t, has(t.percent) ? t.percent : 0).sum() == 100",message="traffic percents must sum to 100"
	Traffic []TrafficTarget `json:"traffic,omitempty"`
}
