package defaulting

// Flag is a config-features value.
type Flag string

const (
	Enabled  Flag = "Enabled"
	Disabled Flag = "Disabled"
	Allowed  Flag = "Allowed"
	// AllowRootBounded is the middle value of secure-pod-defaults.
	AllowRootBounded Flag = "AllowRootBounded"
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
