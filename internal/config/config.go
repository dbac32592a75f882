package config

import (
	"k8s.io/apimachinery/pkg/api/resource"
)

// SystemNamespace is where Ferry reads its ConfigMaps (Knative: knative-serving).
const SystemNamespace = "ferry-system"

// The ConfigMaps' names, as in Knative.
const (
	DomainConfigName     = "config-domain"
	NetworkConfigName    = "config-network"
	DefaultsConfigName   = "config-defaults"
	GCConfigName         = "config-gc"
	DeploymentConfigName = "config-deployment"
	FeaturesConfigName   = "config-features"
)

// Config is one consistent snapshot of every ConfigMap. Never modify a Config that a
// Store handed out: take a copy.
type Config struct {
	Domain     *Domain
	Network    *Network
	Defaults   *Defaults
	GC         *GC
	Deployment *Deployment
	Features   *Features
	Autoscaler *Autoscaler
}

// Default is the configuration with no ConfigMap present.
func Default() *Config {
	return &Config{
		Domain:     DefaultDomain(),
		Network:    DefaultNetwork(),
		Defaults:   DefaultDefaults(),
		GC:         DefaultGC(),
		Deployment: DefaultDeployment(),
		Features:   DefaultFeatures(),
		Autoscaler: DefaultAutoscaler(),
	}
}

// Flag is a config-features value.
type Flag string

const (
	Enabled  Flag = "Enabled"
	Disabled Flag = "Disabled"
	Allowed  Flag = "Allowed"
)

// Features is config-features: which optional PodSpec fields and behaviours are on.
type Features struct {
	MultiContainer                   Flag
	MultiContainerProbing            Flag
	PodSpecAffinity                  Flag
	PodSpecTopologySpreadConstraints Flag
	PodSpecDryRun                    Flag
	PodSpecHostAliases               Flag
	PodSpecFieldRef                  Flag
	PodSpecNodeSelector              Flag
	PodSpecRuntimeClassName          Flag
	PodSpecSecurityContext           Flag
	PodSpecShareProcessNamespace     Flag
	PodSpecHostIPC                   Flag
	PodSpecHostPID                   Flag
	PodSpecHostNetwork               Flag
	PodSpecPriorityClassName         Flag
	PodSpecSchedulerName             Flag
	ContainerSpecAddCapabilities     Flag
	PodSpecTolerations               Flag
	PodSpecVolumesEmptyDir           Flag
	PodSpecVolumesHostPath           Flag
	PodSpecVolumesCSI                Flag
	PodSpecVolumesEphemeral          Flag
	PodSpecVolumesImage              Flag
	PodSpecVolumesMountPropagation   Flag
	PodSpecPersistentVolumeClaim     Flag
	PodSpecPersistentVolumeWrite     Flag
	PodSpecInitContainers            Flag
	PodSpecDNSPolicy                 Flag
	PodSpecDNSConfig                 Flag
	// SecurePodDefaults is Disabled, AllowRootBounded or Enabled.
	SecurePodDefaults     Flag
	TagHeaderBasedRouting Flag
	AutoDetectHTTP2       Flag
}

// AllowRootBounded is the middle value of secure-pod-defaults.
const AllowRootBounded Flag = "AllowRootBounded"

// DefaultFeatures are Knative's defaults: multi-container and emptyDir volumes on,
// everything else off.
func DefaultFeatures() *Features {
	return &Features{
		MultiContainer:                   Enabled,
		MultiContainerProbing:            Disabled,
		PodSpecAffinity:                  Disabled,
		PodSpecTopologySpreadConstraints: Disabled,
		PodSpecDryRun:                    Allowed,
		PodSpecHostAliases:               Disabled,
		PodSpecFieldRef:                  Disabled,
		PodSpecNodeSelector:              Disabled,
		PodSpecRuntimeClassName:          Disabled,
		PodSpecSecurityContext:           Disabled,
		PodSpecShareProcessNamespace:     Disabled,
		PodSpecHostIPC:                   Disabled,
		PodSpecHostPID:                   Disabled,
		PodSpecHostNetwork:               Disabled,
		PodSpecPriorityClassName:         Disabled,
		PodSpecSchedulerName:             Disabled,
		ContainerSpecAddCapabilities:     Disabled,
		PodSpecTolerations:               Disabled,
		PodSpecVolumesEmptyDir:           Enabled,
		PodSpecVolumesHostPath:           Disabled,
		PodSpecVolumesCSI:                Disabled,
		PodSpecVolumesEphemeral:          Disabled,
		PodSpecVolumesImage:              Disabled,
		PodSpecVolumesMountPropagation:   Disabled,
		PodSpecPersistentVolumeClaim:     Disabled,
		PodSpecPersistentVolumeWrite:     Disabled,
		PodSpecInitContainers:            Disabled,
		PodSpecDNSPolicy:                 Disabled,
		PodSpecDNSConfig:                 Disabled,
		SecurePodDefaults:                Disabled,
		TagHeaderBasedRouting:            Disabled,
		AutoDetectHTTP2:                  Disabled,
	}
}

// Defaults is config-defaults: what admission fills into a Revision template.
type Defaults struct {
	RevisionTimeoutSeconds    int64
	MaxRevisionTimeoutSeconds int64
	// RevisionResponseStartTimeoutSeconds defaults to RevisionTimeoutSeconds as
	// configured; as in Knative it is applied to a Revision only when it is positive and
	// below the Revision's timeoutSeconds.
	RevisionResponseStartTimeoutSeconds int64
	RevisionIdleTimeoutSeconds          int64
	ContainerConcurrency                int64
	ContainerConcurrencyMaxLimit        int64
	AllowContainerConcurrencyZero       bool
	// UserContainerNameTemplate is a Go template over the Revision template's ObjectMeta
	// ("user-container" by default); InitContainerNameTemplate likewise.
	UserContainerNameTemplate string
	InitContainerNameTemplate string
	// EnableServiceLinks is nil when unset (Knative's default is false).
	EnableServiceLinks *bool

	RevisionCPURequest              *resource.Quantity
	RevisionCPULimit                *resource.Quantity
	RevisionMemoryRequest           *resource.Quantity
	RevisionMemoryLimit             *resource.Quantity
	RevisionEphemeralStorageRequest *resource.Quantity
	RevisionEphemeralStorageLimit   *resource.Quantity
}

// DefaultDefaults are Knative's config-defaults defaults.
func DefaultDefaults() *Defaults {
	f := false
	return &Defaults{
		RevisionTimeoutSeconds:              300,
		MaxRevisionTimeoutSeconds:           600,
		RevisionResponseStartTimeoutSeconds: 300,
		ContainerConcurrencyMaxLimit:        1000,
		AllowContainerConcurrencyZero:       true,
		UserContainerNameTemplate:           "user-container",
		InitContainerNameTemplate:           "init-container",
		EnableServiceLinks:                  &f,
	}
}
