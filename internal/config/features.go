package config

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// featureKeys are config-features' keys and the Features field each sets.
func featureKeys(f *Features) map[string]*Flag {
	return map[string]*Flag{
		"multi-container":                              &f.MultiContainer,
		"multi-container-probing":                      &f.MultiContainerProbing,
		"kubernetes.podspec-affinity":                  &f.PodSpecAffinity,
		"kubernetes.podspec-topologyspreadconstraints": &f.PodSpecTopologySpreadConstraints,
		"kubernetes.podspec-dryrun":                    &f.PodSpecDryRun,
		"kubernetes.podspec-hostaliases":               &f.PodSpecHostAliases,
		"kubernetes.podspec-fieldref":                  &f.PodSpecFieldRef,
		"kubernetes.podspec-nodeselector":              &f.PodSpecNodeSelector,
		"kubernetes.podspec-runtimeclassname":          &f.PodSpecRuntimeClassName,
		"kubernetes.podspec-securitycontext":           &f.PodSpecSecurityContext,
		"kubernetes.podspec-shareprocessnamespace":     &f.PodSpecShareProcessNamespace,
		"kubernetes.podspec-hostipc":                   &f.PodSpecHostIPC,
		"kubernetes.podspec-hostpid":                   &f.PodSpecHostPID,
		"kubernetes.podspec-hostnetwork":               &f.PodSpecHostNetwork,
		"kubernetes.podspec-priorityclassname":         &f.PodSpecPriorityClassName,
		"kubernetes.podspec-schedulername":             &f.PodSpecSchedulerName,
		"kubernetes.containerspec-addcapabilities":     &f.ContainerSpecAddCapabilities,
		"kubernetes.podspec-tolerations":               &f.PodSpecTolerations,
		"kubernetes.podspec-volumes-emptydir":          &f.PodSpecVolumesEmptyDir,
		"kubernetes.podspec-volumes-hostpath":          &f.PodSpecVolumesHostPath,
		"kubernetes.podspec-volumes-csi":               &f.PodSpecVolumesCSI,
		"kubernetes.podspec-volumes-ephemeral":         &f.PodSpecVolumesEphemeral,
		"kubernetes.podspec-volumes-image":             &f.PodSpecVolumesImage,
		"kubernetes.podspec-volumes-mount-propagation": &f.PodSpecVolumesMountPropagation,
		"kubernetes.podspec-persistent-volume-claim":   &f.PodSpecPersistentVolumeClaim,
		"kubernetes.podspec-persistent-volume-write":   &f.PodSpecPersistentVolumeWrite,
		"kubernetes.podspec-init-containers":           &f.PodSpecInitContainers,
		"kubernetes.podspec-dnspolicy":                 &f.PodSpecDNSPolicy,
		"kubernetes.podspec-dnsconfig":                 &f.PodSpecDNSConfig,
		"tag-header-based-routing":                     &f.TagHeaderBasedRouting,
		"autodetect-http2":                             &f.AutoDetectHTTP2,
	}
}

// NewFeaturesFromConfigMap parses config-features as Knative does, which never fails:
// a flag is Enabled, Allowed or Disabled (any case, stored canonically); any other
// value is ignored and the flag keeps its default. secure-pod-defaults takes Disabled,
// AllowRootBounded or Enabled (Allowed is ignored). Keys of the queue-proxy
// (queueproxy.*) are ignored: Ferry has no queue-proxy. The error is always nil; it is
// there so that every parser has the same shape.
func NewFeaturesFromConfigMap(cm *corev1.ConfigMap) (*Features, error) {
	f := DefaultFeatures()
	for key, target := range featureKeys(f) {
		if v, ok := lookup(cm.Data, key); ok {
			setFlag(v, target, Enabled, Allowed, Disabled)
		}
	}
	if v, ok := lookup(cm.Data, "secure-pod-defaults"); ok {
		setFlag(v, &f.SecurePodDefaults, Enabled, AllowRootBounded, Disabled)
	}
	return f, nil
}

func setFlag(v string, target *Flag, allowed ...Flag) {
	for _, a := range allowed {
		if strings.EqualFold(v, string(a)) {
			*target = a
			return
		}
	}
}
