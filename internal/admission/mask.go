package admission

import (
	"reflect"
	"slices"
	"strings"

	"github.com/ferry-serving/ferry/internal/config"
	corev1 "k8s.io/api/core/v1"
)

// disallowed reports every field of the struct v that is set (non-zero) and not named
// in allowed, by its JSON name, as Knative's field masks do ("must not set the
// field(s)"). Inlined embedded structs are named by their Go name, as Knative's
// reporter names them.
func disallowed(v any, allowed ...string) *FieldError {
	rv := reflect.Indirect(reflect.ValueOf(v))
	if !rv.IsValid() {
		return nil
	}
	rt := rv.Type()
	var names []string
	for i := 0; i < rt.NumField(); i++ {
		f := rt.Field(i)
		if !f.IsExported() || rv.Field(i).IsZero() {
			continue
		}
		name := f.Name
		if tag, _, _ := strings.Cut(f.Tag.Get("json"), ","); tag != "" && tag != "-" {
			name = tag
		}
		if !slices.Contains(allowed, name) {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	slices.Sort(names)
	return ErrDisallowedFields(names...)
}

func on(f config.Flag) bool      { return f != config.Disabled && f != "" }
func enabled(f config.Flag) bool { return f == config.Enabled }

func securePodDefaults(f *config.Features) bool {
	return f.SecurePodDefaults == config.Enabled || f.SecurePodDefaults == config.AllowRootBounded
}

// podSpecMask is Knative's PodSpec allowlist under the config-features flags.
func podSpecMask(ps *corev1.PodSpec, f *config.Features) *FieldError {
	allowed := []string{"serviceAccountName", "containers", "volumes", "imagePullSecrets", "enableServiceLinks"}
	if ps.AutomountServiceAccountToken != nil && !*ps.AutomountServiceAccountToken {
		allowed = append(allowed, "automountServiceAccountToken")
	}
	for _, g := range []struct {
		flag  config.Flag
		field string
	}{
		{f.PodSpecAffinity, "affinity"},
		{f.PodSpecTopologySpreadConstraints, "topologySpreadConstraints"},
		{f.PodSpecHostAliases, "hostAliases"},
		{f.PodSpecNodeSelector, "nodeSelector"},
		{f.PodSpecRuntimeClassName, "runtimeClassName"},
		{f.PodSpecTolerations, "tolerations"},
		{f.PodSpecShareProcessNamespace, "shareProcessNamespace"},
		{f.PodSpecPriorityClassName, "priorityClassName"},
		{f.PodSpecSchedulerName, "schedulerName"},
		{f.PodSpecInitContainers, "initContainers"},
		{f.PodSpecDNSPolicy, "dnsPolicy"},
		{f.PodSpecDNSConfig, "dnsConfig"},
		{f.PodSpecHostIPC, "hostIPC"},
		{f.PodSpecHostPID, "hostPID"},
		{f.PodSpecHostNetwork, "hostNetwork"},
	} {
		if on(g.flag) {
			allowed = append(allowed, g.field)
		}
	}
	if on(f.PodSpecSecurityContext) || on(f.SecurePodDefaults) {
		allowed = append(allowed, "securityContext") // its fields are masked separately
	}
	return disallowed(ps, allowed...)
}

// podSecurityContextMask: only runAsUser, runAsGroup, runAsNonRoot, fsGroup,
// supplementalGroups and seccompProfile, and only with kubernetes.podspec-securitycontext;
// secure-pod-defaults alone lets a seccompProfile of RuntimeDefault or Unconfined through.
func podSecurityContextMask(sc *corev1.PodSecurityContext, f *config.Features) *FieldError {
	if on(f.PodSpecSecurityContext) {
		return disallowed(sc, "runAsUser", "runAsGroup", "runAsNonRoot", "fsGroup", "supplementalGroups", "seccompProfile")
	}
	var allowed []string
	if securePodDefaults(f) && sc.SeccompProfile != nil &&
		(sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault || sc.SeccompProfile.Type == corev1.SeccompProfileTypeUnconfined) &&
		sc.SeccompProfile.LocalhostProfile == nil {
		allowed = append(allowed, "seccompProfile")
	}
	return disallowed(sc, allowed...)
}

func containerMask(c *corev1.Container) *FieldError {
	return disallowed(c, "name", "args", "command", "env", "workingDir", "envFrom", "image", "imagePullPolicy",
		"livenessProbe", "ports", "readinessProbe", "resources", "securityContext", "startupProbe",
		"terminationMessagePath", "terminationMessagePolicy", "volumeMounts")
}

func securityContextMask(sc *corev1.SecurityContext) *FieldError {
	allowed := []string{"capabilities", "readOnlyRootFilesystem", "runAsUser", "runAsGroup", "runAsNonRoot",
		"allowPrivilegeEscalation", "seccompProfile"}
	if sc.Privileged != nil && !*sc.Privileged {
		allowed = append(allowed, "privileged")
	}
	return disallowed(sc, allowed...)
}

func capabilitiesMask(c *corev1.Capabilities, f *config.Features) *FieldError {
	allowed := []string{"drop"}
	if enabled(f.ContainerSpecAddCapabilities) ||
		(securePodDefaults(f) && slices.Equal(c.Add, []corev1.Capability{"NET_BIND_SERVICE"})) {
		allowed = append(allowed, "add")
	}
	return disallowed(c, allowed...)
}

func volumeSourceMask(vs *corev1.VolumeSource, f *config.Features) *FieldError {
	allowed := []string{"secret", "configMap", "projected"}
	for _, g := range []struct {
		flag  config.Flag
		field string
	}{
		{f.PodSpecVolumesEmptyDir, "emptyDir"},
		{f.PodSpecPersistentVolumeClaim, "persistentVolumeClaim"},
		{f.PodSpecVolumesHostPath, "hostPath"},
		{f.PodSpecVolumesCSI, "csi"},
		{f.PodSpecVolumesEphemeral, "ephemeral"},
		{f.PodSpecVolumesImage, "image"},
	} {
		if on(g.flag) {
			allowed = append(allowed, g.field)
		}
	}
	return disallowed(vs, allowed...)
}

func volumeMountMask(vm *corev1.VolumeMount, f *config.Features) *FieldError {
	allowed := []string{"name", "readOnly", "mountPath", "subPath"}
	if on(f.PodSpecVolumesMountPropagation) {
		allowed = append(allowed, "mountPropagation")
	}
	return disallowed(vm, allowed...)
}

func probeMask(p *corev1.Probe) *FieldError {
	return disallowed(p, "ProbeHandler", "initialDelaySeconds", "timeoutSeconds", "periodSeconds",
		"successThreshold", "failureThreshold", "terminationGracePeriodSeconds")
}

func envVarSourceMask(s *corev1.EnvVarSource, f *config.Features) *FieldError {
	allowed := []string{"configMapKeyRef", "secretKeyRef"}
	if on(f.PodSpecFieldRef) {
		allowed = append(allowed, "fieldRef", "resourceFieldRef")
	}
	return disallowed(s, allowed...)
}
