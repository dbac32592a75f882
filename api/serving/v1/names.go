package v1

import (
	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
)

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
	RolloutDurationAnnotationKey    = "serving.knative.dev/rollout-duration"
	VisibilityLabelKey              = netv1alpha1.VisibilityLabelKey
	// PodSpecDryRunAnnotationKey, on a Service or a Configuration, asks admission to
	// check the Pod its Revision would run by a dry-run create: "enabled" or "strict"
	// (Knative's features.knative.dev/podspec-dryrun, up to v1.19).
	PodSpecDryRunAnnotationKey = "features.knative.dev/podspec-dryrun"
	VisibilityClusterLocal     = netv1alpha1.VisibilityClusterLocal

	// DefaultUserContainerName is the name given to an unnamed user container.
	DefaultUserContainerName = "user-container"
)

// RolloutDurationAnnotation is how long a gradual rollout takes, on a Service or a
// Route; Knative still reads the older camelCase key.
var RolloutDurationAnnotation = av1alpha1.Annotation{RolloutDurationAnnotationKey, "serving.knative.dev/rolloutDuration"}

// The queue-proxy's resources, which Knative's admission validates on a template.
// Ferry has no queue-proxy: admission checks them as Knative does, and nothing reads
// them further.
var (
	QueueSidecarResourcePercentageAnnotation = av1alpha1.Annotation{"queue.sidecar.serving.knative.dev/resource-percentage", "queue.sidecar.serving.knative.dev/resourcePercentage"}
	QueueSidecarResourceAnnotations          = []av1alpha1.Annotation{
		{"queue.sidecar.serving.knative.dev/cpu-resource-request"},
		{"queue.sidecar.serving.knative.dev/cpu-resource-limit"},
		{"queue.sidecar.serving.knative.dev/memory-resource-request"},
		{"queue.sidecar.serving.knative.dev/memory-resource-limit"},
		{"queue.sidecar.serving.knative.dev/ephemeral-storage-resource-request"},
		{"queue.sidecar.serving.knative.dev/ephemeral-storage-resource-limit"},
	}
)

// RoutingState says whether a Revision receives traffic (Knative's routingState label).
type RoutingState string

const (
	RoutingStateUnset   RoutingState = ""
	RoutingStatePending RoutingState = "pending"
	RoutingStateActive  RoutingState = "active"
	RoutingStateReserve RoutingState = "reserve"
)

// Ferry's own annotations on a Service that a KIngress routes to and that is not a
// Revision's: the settings the gateway otherwise reads from a Revision's spec. Ferry
// writes them nowhere itself (a Revision has no Service); they are the gateway's
// knobs for other backends.
const (
	// ContainerConcurrencyAnnotationKey is the Revision's containerConcurrency: the
	// gateway sends a pod no more requests at once and queues the rest.
	ContainerConcurrencyAnnotationKey = "serving.ferry.dev/container-concurrency"
	// TimeoutSecondsAnnotationKey is the Revision's timeoutSeconds: how long the
	// gateway holds a request while no pod can take it, and how long a pod may take
	// to begin its answer.
	TimeoutSecondsAnnotationKey = "serving.ferry.dev/timeout-seconds"
)

// ServingPortAnnotationKey, on a pod, is the port its serving container listens on
// when that is not the Revision's containerPort: `ferry up`'s program node, where it
// cannot give each pod a network namespace of its own, runs the pods as processes of
// the host (all at 127.0.0.1) and gives each a free port in PORT. The node writes it
// before the pod is Ready; the gateway dials podIP:this port instead of the
// Revision's.
const ServingPortAnnotationKey = "serving.ferry.dev/serving-port"

// Ferry's own annotations on a Revision (or a template) that shape how `ferry up`'s
// kwok-simulated pods, which have no process, answer: the gateway answers for them.
// They have no effect on real pods.
const (
	// SimulatedServiceTimeAnnotationKey is a Go duration (at least 0): how long a
	// simulated pod takes to answer a request without ?sleep=.
	SimulatedServiceTimeAnnotationKey = "serving.ferry.dev/simulated-service-time"
	// SimulatedCapacityAnnotationKey is a whole number (at least 1): how many
	// requests one simulated pod serves at once; the rest wait for it. Unset: no
	// limit.
	SimulatedCapacityAnnotationKey = "serving.ferry.dev/simulated-capacity"
)
