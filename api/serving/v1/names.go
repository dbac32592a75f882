package v1

// Labels and annotations that Knative users and tools rely on.
const (
	ServiceLabelKey                 = "serving.knative.dev/service"
	ServiceUIDLabelKey              = "serving.knative.dev/serviceUID"
	ConfigurationLabelKey           = "serving.knative.dev/configuration"
	ConfigurationUIDLabelKey        = "serving.knative.dev/configurationUID"
	ConfigurationGenerationLabelKey = "serving.knative.dev/configurationGeneration"
	RevisionLabelKey                = "serving.knative.dev/revision"
	RevisionUIDLabelKey             = "serving.knative.dev/revisionUID"
	RouteLabelKey                   = "serving.knative.dev/route"
	RoutingStateLabelKey            = "serving.knative.dev/routingState"
	RoutesAnnotationKey             = "serving.knative.dev/routes"
	NoGCAnnotationKey               = "serving.knative.dev/no-gc"
	CreatorAnnotation               = "serving.knative.dev/creator"
	LastModifierAnnotation          = "serving.knative.dev/lastModifier"
	RoutingStateModifiedAnnotation  = "serving.knative.dev/routingStateModified"
	ProgressDeadlineAnnotationKey   = "serving.knative.dev/progress-deadline"
	VisibilityLabelKey              = "networking.knative.dev/visibility"
	VisibilityClusterLocal          = "cluster-local"
	MinScaleAnnotationKey           = "autoscaling.knative.dev/min-scale"
	InitialScaleAnnotationKey       = "autoscaling.knative.dev/initial-scale"
	MaxScaleAnnotationKey           = "autoscaling.knative.dev/max-scale"

	// DefaultUserContainerName is the name given to an unnamed user container.
	DefaultUserContainerName = "user-container"
)

// RoutingState says whether a Revision receives traffic (Knative's routingState label).
type RoutingState string

const (
	RoutingStateUnset   RoutingState = ""
	RoutingStatePending RoutingState = "pending"
	RoutingStateActive  RoutingState = "active"
	RoutingStateReserve RoutingState = "reserve"
)
