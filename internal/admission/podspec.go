package admission

import (
	"fmt"
	"math"
	"path"
	"reflect"
	"strings"

	"github.com/ferry-serving/ferry/internal/config"
	"github.com/google/go-containerregistry/pkg/name"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Knative's reserved names, ports and paths (pkg/apis/serving/k8s_validation.go).
var (
	reservedPaths          = sets.New("/", "/dev", "/dev/log")
	reservedContainerNames = sets.New("queue-proxy")
	reservedEnvVars        = sets.New("PORT", "K_SERVICE", "K_CONFIGURATION", "K_REVISION")
	reservedSidecarEnvVars = sets.New("K_SERVICE", "K_CONFIGURATION", "K_REVISION")
	// queue-proxy's HTTP and HTTP/2 ports, its admin port, its two metrics ports and
	// the profiling port.
	reservedPorts  = sets.New[int32](8012, 8013, 8022, 9090, 9091, 8008)
	validPortNames = sets.New("h2c", "http1", "")
)

const maxID = math.MaxInt32

type containerKind int

const (
	servingContainer containerKind = iota
	sidecarContainer
	initContainer
)

// ValidatePodSpec checks a Revision's PodSpec as Knative does: the field allowlist under
// config-features, volumes, containers, ports, probes, env and image references. Paths
// are relative to the PodSpec.
func ValidatePodSpec(ps *corev1.PodSpec, cfg *config.Config) *FieldError {
	f := cfg.Features
	errs := podSpecMask(ps, f)
	if ps.SecurityContext != nil {
		errs = errs.Also(validatePodSecurityContext(ps.SecurityContext, f).ViaField("securityContext"))
	}
	if !securePodDefaults(f) {
		for i := range ps.Containers {
			errs = errs.Also(insecureDefaultWarnings(ps.SecurityContext, ps.Containers[i].SecurityContext).
				ViaField("securityContext").ViaFieldIndex("containers", i))
		}
		for i := range ps.InitContainers {
			errs = errs.Also(insecureDefaultWarnings(ps.SecurityContext, ps.InitContainers[i].SecurityContext).
				ViaField("securityContext").ViaFieldIndex("initContainers", i))
		}
	}

	mounted := sets.New[string]()
	for _, cs := range [][]corev1.Container{ps.InitContainers, ps.Containers} {
		for _, c := range cs {
			for _, vm := range c.VolumeMounts {
				mounted.Insert(vm.Name)
			}
		}
	}
	volumes, verrs := validateVolumes(ps.Volumes, mounted, f)
	errs = errs.Also(verrs.ViaField("volumes"))
	errs = errs.Also(validateInitContainers(ps.InitContainers, ps.Containers, volumes, f))

	port, perr := servingPort(ps.Containers)
	errs = errs.Also(perr.ViaField("containers[*]"))
	switch len(ps.Containers) {
	case 0:
		errs = errs.Also(ErrMissingField("containers"))
	case 1:
		errs = errs.Also(validateServingContainer(&ps.Containers[0], volumes, port, f).ViaFieldIndex("containers", 0))
	default:
		errs = errs.Also(validateContainers(ps.Containers, volumes, port, cfg))
	}
	if ps.ServiceAccountName != "" {
		for _, msg := range validation.IsDNS1123Subdomain(ps.ServiceAccountName) {
			errs = errs.Also(ErrInvalidValue(ps.ServiceAccountName, "serviceAccountName", msg))
		}
	}
	return errs
}

// servingPort finds the one port declared across all containers (Knative's default:
// "http", 8080) and checks that there is exactly one where it must be.
func servingPort(containers []corev1.Container) (corev1.ContainerPort, *FieldError) {
	count := 0
	var port corev1.ContainerPort
	for _, c := range containers {
		if len(c.Ports) > 0 {
			count += len(c.Ports)
			port = c.Ports[0]
		}
	}
	if port.Name == "" {
		port.Name = "http"
	}
	if port.ContainerPort == 0 {
		port.ContainerPort = 8080
	}
	if count == 0 && len(containers) > 1 {
		return port, ErrMissingField("ports")
	}
	if count > 1 {
		return port, ErrGeneric("more than one container port is set", "ports").
			WithDetails("Only a single port is allowed across all containers")
	}
	return port, nil
}

func validateContainers(containers []corev1.Container, volumes map[string]corev1.Volume, port corev1.ContainerPort, cfg *config.Config) *FieldError {
	if !enabled(cfg.Features.MultiContainer) {
		return ErrGeneric(fmt.Sprintf("multi-container is off, but found %d containers", len(containers)))
	}
	var errs *FieldError
	names := sets.New[string]()
	for i := range containers {
		c := &containers[i]
		if names.Has(c.Name) {
			errs = errs.Also(ErrGeneric(fmt.Sprintf("duplicate container name %q", c.Name), "name").ViaFieldIndex("containers", i))
		} else {
			names.Insert(c.Name)
		}
		if len(c.Ports) == 0 {
			errs = errs.Also(validateSidecar(c, volumes, cfg.Features).ViaFieldIndex("containers", i))
		} else {
			errs = errs.Also(validateServingContainer(c, volumes, port, cfg.Features).ViaFieldIndex("containers", i))
		}
	}
	return errs
}

func validateInitContainers(inits, containers []corev1.Container, volumes map[string]corev1.Volume, f *config.Features) *FieldError {
	if len(inits) == 0 {
		return nil
	}
	if !enabled(f.PodSpecInitContainers) {
		return ErrGeneric(fmt.Sprintf("pod spec support for init-containers is off, but found %d init containers", len(inits)))
	}
	var errs *FieldError
	names := sets.New[string]()
	for _, c := range containers {
		names.Insert(c.Name)
	}
	for i := range inits {
		c := &inits[i]
		if names.Has(c.Name) {
			errs = errs.Also(ErrGeneric(fmt.Sprintf("duplicate container name %q", c.Name), "name").ViaFieldIndex("containers", i))
		}
		var cerrs *FieldError
		for field, set := range map[string]bool{
			"livenessProbe": c.LivenessProbe != nil, "readinessProbe": c.ReadinessProbe != nil,
			"startupProbe": c.StartupProbe != nil, "lifecycle": c.Lifecycle != nil,
		} {
			if set {
				cerrs = cerrs.Also(ErrGeneric("field not allowed in an init container", field))
			}
		}
		cerrs = cerrs.Also(validateContainer(c, initContainer, volumes, f))
		errs = errs.Also(cerrs.ViaFieldIndex("containers", i))
	}
	return errs
}

func validateSidecar(c *corev1.Container, volumes map[string]corev1.Volume, f *config.Features) *FieldError {
	var errs *FieldError
	probes := []struct {
		p         *corev1.Probe
		field     string
		readiness bool
	}{{c.LivenessProbe, "livenessProbe", false}, {c.ReadinessProbe, "readinessProbe", true}, {c.StartupProbe, "startupProbe", false}}
	for _, pr := range probes {
		if pr.p == nil {
			continue
		}
		if !enabled(f.MultiContainerProbing) {
			errs = errs.Also(disallowed(pr.p).ViaField(pr.field))
		} else if pr.readiness {
			errs = errs.Also(validateReadinessProbe(pr.p, nil).ViaField(pr.field))
		} else {
			errs = errs.Also(validateProbe(pr.p, nil).ViaField(pr.field))
		}
	}
	return errs.Also(validateContainer(c, sidecarContainer, volumes, f))
}

func validateServingContainer(c *corev1.Container, volumes map[string]corev1.Volume, port corev1.ContainerPort, f *config.Features) *FieldError {
	errs := validateProbe(c.LivenessProbe, &port).ViaField("livenessProbe")
	errs = errs.Also(validateReadinessProbe(c.ReadinessProbe, &port).ViaField("readinessProbe"))
	errs = errs.Also(validateProbe(c.StartupProbe, &port).ViaField("startupProbe"))
	return errs.Also(validateContainer(c, servingContainer, volumes, f))
}

func validateContainer(c *corev1.Container, kind containerKind, volumes map[string]corev1.Volume, f *config.Features) *FieldError {
	if reflect.DeepEqual(*c, corev1.Container{}) {
		return ErrMissingField(CurrentField)
	}
	errs := containerMask(c)
	if reservedContainerNames.Has(c.Name) {
		errs = errs.Also(ErrGeneric(fmt.Sprintf("%q is a reserved container name", c.Name), "name"))
	}
	reserved := reservedEnvVars
	if kind != servingContainer {
		reserved = reservedSidecarEnvVars
	}
	for i, env := range c.Env {
		var eerrs *FieldError
		if env.Name == "" {
			eerrs = eerrs.Also(ErrMissingField("name"))
		} else if reserved.Has(env.Name) {
			eerrs = eerrs.Also(ErrGeneric(fmt.Sprintf("%q is a reserved environment variable", env.Name), "name"))
		}
		if env.ValueFrom != nil {
			eerrs = eerrs.Also(envVarSourceMask(env.ValueFrom, f).ViaField("valueFrom"))
		}
		errs = errs.Also(eerrs.ViaFieldIndex("env", i))
	}
	for i, ef := range c.EnvFrom {
		var eerrs *FieldError
		switch {
		case ef.ConfigMapRef != nil && ef.SecretRef != nil:
			eerrs = ErrMultipleOneOf("configMapRef", "secretRef")
		case ef.ConfigMapRef == nil && ef.SecretRef == nil:
			eerrs = ErrMissingOneOf("configMapRef", "secretRef")
		}
		errs = errs.Also(eerrs.ViaFieldIndex("envFrom", i))
	}
	if c.Image == "" {
		errs = errs.Also(ErrMissingField("image"))
	} else if _, err := name.ParseReference(c.Image, name.WeakValidation); err != nil {
		errs = errs.Also(ErrGeneric("Failed to parse image reference", "image").
			WithDetails(fmt.Sprintf("image: %q, error: %v", c.Image, err)))
	}
	if kind == initContainer {
		for _, p := range c.Ports {
			errs = errs.Also(validatePortBasic(&p).ViaField("ports"))
		}
	} else if len(c.Ports) > 0 {
		p := c.Ports[0]
		perrs := validatePortBasic(&p)
		if p.Protocol != "" && p.Protocol != corev1.ProtocolTCP {
			perrs = perrs.Also(ErrInvalidValue(p.Protocol, "protocol"))
		}
		if !validPortNames.Has(p.Name) {
			perrs = perrs.Also(ErrGeneric(fmt.Sprintf("Port name %v is not allowed", p.Name), CurrentField).
				WithDetails("Name must be empty, or one of: 'h2c', 'http1'"))
		}
		errs = errs.Also(perrs.ViaField("ports"))
	}
	errs = errs.Also(disallowed(&c.Resources, "limits", "requests").ViaField("resources"))
	if sc := c.SecurityContext; sc != nil {
		serrs := securityContextMask(sc)
		if sc.Capabilities != nil {
			serrs = serrs.Also(capabilitiesMask(sc.Capabilities, f).ViaField("capabilities"))
		}
		serrs = serrs.Also(idBounds(sc.RunAsUser, "runAsUser"), idBounds(sc.RunAsGroup, "runAsGroup"))
		errs = errs.Also(serrs.ViaField("securityContext"))
	}
	switch c.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError, "":
	default:
		errs = errs.Also(ErrInvalidValue(c.TerminationMessagePolicy, "terminationMessagePolicy"))
	}
	return errs.Also(validateVolumeMounts(c.VolumeMounts, volumes, f).ViaField("volumeMounts"))
}

func idBounds(id *int64, field string) *FieldError {
	if id != nil && (*id < 0 || *id > maxID) {
		return ErrOutOfBoundsValue(*id, 0, maxID, field)
	}
	return nil
}

func validatePortBasic(p *corev1.ContainerPort) *FieldError {
	errs := disallowed(p, "containerPort", "name", "protocol")
	if reservedPorts.Has(p.ContainerPort) {
		errs = errs.Also(ErrInvalidValue(fmt.Sprintf("%d is a reserved port", p.ContainerPort), "containerPort",
			fmt.Sprintf("%d is a reserved port, please use a different value", p.ContainerPort)))
	}
	if p.ContainerPort < 0 || p.ContainerPort > 65535 {
		errs = errs.Also(ErrOutOfBoundsValue(p.ContainerPort, 0, 65535, "containerPort"))
	}
	return errs
}

func validatePodSecurityContext(sc *corev1.PodSecurityContext, f *config.Features) *FieldError {
	errs := podSecurityContextMask(sc, f)
	errs = errs.Also(idBounds(sc.RunAsUser, "runAsUser"), idBounds(sc.RunAsGroup, "runAsGroup"), idBounds(sc.FSGroup, "fsGroup"))
	for i, g := range sc.SupplementalGroups {
		if g < 0 || g > maxID {
			errs = errs.Also(ErrOutOfBoundsValue(g, 0, maxID, CurrentField).ViaFieldIndex("supplementalGroups", i))
		}
	}
	return errs
}

// insecureDefaultWarnings are Knative's warnings for security settings left at
// Kubernetes' insecure defaults (only warnings: they never deny).
func insecureDefaultWarnings(psc *corev1.PodSecurityContext, sc *corev1.SecurityContext) *FieldError {
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	const msg = "Kubernetes default value is insecure, Knative may default this to secure in a future release"
	var errs *FieldError
	if psc.RunAsNonRoot == nil && sc.RunAsNonRoot == nil {
		errs = errs.Also(ErrGeneric(msg, "runAsNonRoot"))
	}
	if sc.AllowPrivilegeEscalation == nil {
		errs = errs.Also(ErrGeneric(msg, "allowPrivilegeEscalation"))
	}
	if sc.SeccompProfile == nil && psc.SeccompProfile == nil {
		errs = errs.Also(ErrGeneric(msg, "seccompProfile"))
	} else if (psc.SeccompProfile == nil || psc.SeccompProfile.Type == "") && (sc.SeccompProfile == nil || sc.SeccompProfile.Type == "") {
		errs = errs.Also(ErrGeneric(msg, "seccompProfile.type"))
	}
	if sc.Capabilities == nil {
		errs = errs.Also(ErrGeneric(msg, "capabilities"))
	} else if sc.Capabilities.Drop == nil {
		errs = errs.Also(ErrGeneric(msg, "capabilities.drop"))
	} else if len(sc.Capabilities.Drop) > 0 && sc.Capabilities.Drop[0] == "all" {
		errs = errs.Also(ErrInvalidValue("all", "capabilities.drop", "Must be spelled as 'ALL'"))
	}
	return errs.AsWarning()
}

func validateReadinessProbe(p *corev1.Probe, port *corev1.ContainerPort) *FieldError {
	if p == nil {
		return nil
	}
	errs := validateProbe(p, port)
	if p.PeriodSeconds < 0 {
		errs = errs.Also(ErrOutOfBoundsValue(p.PeriodSeconds, 0, maxID, "periodSeconds"))
	}
	if p.InitialDelaySeconds < 0 {
		errs = errs.Also(ErrOutOfBoundsValue(p.InitialDelaySeconds, 0, maxID, "initialDelaySeconds"))
	}
	if p.SuccessThreshold < 1 {
		errs = errs.Also(ErrOutOfBoundsValue(p.SuccessThreshold, 1, maxID, "successThreshold"))
	}
	// periodSeconds 0 is Knative's aggressive probing by the queue-proxy.
	if p.PeriodSeconds == 0 {
		if p.FailureThreshold != 0 {
			errs = errs.Also(ErrGeneric("failureThreshold is disallowed when periodSeconds is zero", "failureThreshold"))
		}
		if p.TimeoutSeconds != 0 {
			errs = errs.Also(ErrGeneric("timeoutSeconds is disallowed when periodSeconds is zero", "timeoutSeconds"))
		}
	} else {
		if p.TimeoutSeconds < 1 {
			errs = errs.Also(ErrOutOfBoundsValue(p.TimeoutSeconds, 1, maxID, "timeoutSeconds"))
		}
		if p.FailureThreshold < 1 {
			errs = errs.Also(ErrOutOfBoundsValue(p.FailureThreshold, 1, maxID, "failureThreshold"))
		}
	}
	return errs
}

// validateProbe checks one probe; port is the serving port for the serving container
// and nil for a sidecar (whose probes must name their port).
func validateProbe(p *corev1.Probe, port *corev1.ContainerPort) *FieldError {
	if p == nil {
		return nil
	}
	errs := probeMask(p)
	var handlers []string
	checkPort := func(field string, str string, num int32) {
		if port != nil {
			if str != "" && str != port.Name {
				errs = errs.Also(ErrInvalidValue(portString(str, num), field, "Probe port must match container port"))
			}
		} else if str == "" && num == 0 {
			errs = errs.Also(ErrInvalidValue(portString(str, num), field, "Probe port must be specified"))
		}
	}
	if h := p.HTTPGet; h != nil {
		handlers = append(handlers, "httpGet")
		errs = errs.Also(disallowed(h, "host", "path", "scheme", "httpHeaders", "port").ViaField("httpGet"))
		checkPort("httpGet.port", h.Port.StrVal, h.Port.IntVal)
		errs = errs.Also(validateHTTPGet(h).ViaField("httpGet"))
	}
	if t := p.TCPSocket; t != nil {
		handlers = append(handlers, "tcpSocket")
		errs = errs.Also(disallowed(t, "host", "port").ViaField("tcpSocket"))
		checkPort("tcpSocket.port", t.Port.StrVal, t.Port.IntVal)
	}
	if e := p.Exec; e != nil {
		handlers = append(handlers, "exec")
		errs = errs.Also(disallowed(e, "command").ViaField("exec"))
		// Knative takes an empty command, and the API server refuses the Deployment.
		if len(e.Command) == 0 {
			errs = errs.Also(ErrMissingField("exec.command"))
		}
	}
	if g := p.GRPC; g != nil {
		handlers = append(handlers, "gRPC")
		errs = errs.Also(disallowed(g, "port", "service").ViaField("grpc"))
	}
	switch {
	case len(handlers) == 0:
		errs = errs.Also(ErrMissingOneOf("httpGet", "tcpSocket", "exec", "grpc"))
	case len(handlers) > 1:
		errs = errs.Also(ErrMultipleOneOf(handlers...))
	}
	return errs
}

// validateHTTPGet refuses what Knative takes but no prober can use, and the API
// server would refuse in the Deployment (the kubelet probes in Ferry): a scheme other
// than HTTP or HTTPS (in any case: the Deployment gets it in upper case) and a header
// name that is not one.
func validateHTTPGet(h *corev1.HTTPGetAction) *FieldError {
	var errs *FieldError
	if s := strings.ToUpper(string(h.Scheme)); s != "" && s != string(corev1.URISchemeHTTP) && s != string(corev1.URISchemeHTTPS) {
		errs = errs.Also(ErrInvalidValue(h.Scheme, "scheme", "Probe scheme must be HTTP or HTTPS"))
	}
	for i, hdr := range h.HTTPHeaders {
		if msgs := validation.IsHTTPHeaderName(hdr.Name); len(msgs) != 0 {
			errs = errs.Also(ErrInvalidValue(hdr.Name, "name", msgs...).ViaFieldIndex("httpHeaders", i))
		}
	}
	return errs
}

func portString(str string, num int32) string {
	if str != "" {
		return str
	}
	return fmt.Sprint(num)
}

func validateVolumes(vs []corev1.Volume, mounted sets.Set[string], f *config.Features) (map[string]corev1.Volume, *FieldError) {
	volumes := make(map[string]corev1.Volume, len(vs))
	var errs *FieldError
	for i, v := range vs {
		if _, ok := volumes[v.Name]; ok {
			errs = errs.Also(ErrGeneric(fmt.Sprintf("duplicate volume name %q", v.Name), "name").ViaIndex(i))
		}
		if !mounted.Has(v.Name) {
			errs = errs.Also(ErrGeneric(fmt.Sprintf("volume with name %q not mounted", v.Name), "name").ViaIndex(i))
		}
		errs = errs.Also(validateVolume(&v, f).ViaIndex(i))
		volumes[v.Name] = v
	}
	return volumes, errs
}

func validateVolume(v *corev1.Volume, f *config.Features) *FieldError {
	var errs *FieldError
	vs := &v.VolumeSource
	if pvc := vs.PersistentVolumeClaim; pvc != nil {
		if !enabled(f.PodSpecPersistentVolumeClaim) {
			errs = errs.Also(ErrGeneric(fmt.Sprintf("Persistent volume claim support is disabled, but found persistent volume claim %s", pvc.ClaimName)))
		}
		if !pvc.ReadOnly && !enabled(f.PodSpecPersistentVolumeWrite) {
			errs = errs.Also(ErrGeneric(fmt.Sprintf("Persistent volume write support is disabled, but found persistent volume claim %s that is not read-only", pvc.ClaimName)))
		}
	}
	for _, g := range []struct {
		set  bool
		flag config.Flag
		what string
	}{
		{vs.Image != nil, f.PodSpecVolumesImage, "Image"},
		{vs.EmptyDir != nil, f.PodSpecVolumesEmptyDir, "EmptyDir"},
		{vs.HostPath != nil, f.PodSpecVolumesHostPath, "HostPath"},
		{vs.CSI != nil, f.PodSpecVolumesCSI, "CSI"},
		{vs.Ephemeral != nil, f.PodSpecVolumesEphemeral, "Ephemeral"},
	} {
		if g.set && !enabled(g.flag) {
			errs = errs.Also(ErrGeneric(fmt.Sprintf("%s volume support is disabled, but found %s volume %s", g.what, g.what, v.Name)))
		}
	}
	// As in Knative, a missing or invalid name replaces the errors found so far.
	if v.Name == "" {
		errs = ErrMissingField("name")
	} else if len(validation.IsDNS1123Label(v.Name)) != 0 {
		errs = ErrInvalidValue(v.Name, "name")
	}
	errs = errs.Also(volumeSourceMask(vs, f))

	var specified []string
	if vs.Secret != nil {
		specified = append(specified, "secret")
		for i, item := range vs.Secret.Items {
			errs = errs.Also(validateKeyToPath(item).ViaFieldIndex("items", i))
		}
	}
	if vs.ConfigMap != nil {
		specified = append(specified, "configMap")
		for i, item := range vs.ConfigMap.Items {
			errs = errs.Also(validateKeyToPath(item).ViaFieldIndex("items", i))
		}
	}
	if vs.Projected != nil {
		specified = append(specified, "projected")
		for i, p := range vs.Projected.Sources {
			errs = errs.Also(validateProjection(&p).ViaFieldIndex("projected", i))
		}
	}
	if vs.EmptyDir != nil {
		specified = append(specified, "emptyDir")
		if m := vs.EmptyDir.Medium; m != "" && m != corev1.StorageMediumMemory {
			errs = errs.Also(ErrInvalidValue(m, "emptyDir.medium"))
		}
		if s := vs.EmptyDir.SizeLimit; s != nil && s.Value() < 0 {
			errs = errs.Also(ErrInvalidValue(s, "emptyDir.sizeLimit"))
		}
	}
	if vs.PersistentVolumeClaim != nil {
		specified = append(specified, "persistentVolumeClaim")
	}
	if vs.HostPath != nil {
		specified = append(specified, "hostPath")
	}
	if vs.CSI != nil {
		specified = append(specified, "csi")
	}
	if vs.Ephemeral != nil {
		specified = append(specified, "ephemeral")
	}
	if iv := vs.Image; iv != nil {
		specified = append(specified, "image")
		ierrs := disallowed(iv, "reference", "pullPolicy")
		if iv.Reference == "" {
			ierrs = ierrs.Also(ErrMissingField("reference"))
		}
		switch iv.PullPolicy {
		case corev1.PullIfNotPresent, corev1.PullAlways, corev1.PullNever, "":
		default:
			ierrs = ierrs.Also(ErrInvalidValue(iv.PullPolicy, "pullPolicy"))
		}
		errs = errs.Also(ierrs.ViaField("image"))
	}
	switch {
	case len(specified) == 0:
		one := []string{"secret", "configMap", "projected"}
		for _, g := range []struct {
			flag  config.Flag
			field string
		}{
			{f.PodSpecVolumesEmptyDir, "emptyDir"}, {f.PodSpecPersistentVolumeClaim, "persistentVolumeClaim"},
			{f.PodSpecVolumesHostPath, "hostPath"}, {f.PodSpecVolumesCSI, "csi"},
			{f.PodSpecVolumesEphemeral, "ephemeral"}, {f.PodSpecVolumesImage, "image"},
		} {
			if enabled(g.flag) {
				one = append(one, g.field)
			}
		}
		errs = errs.Also(ErrMissingOneOf(one...))
	case len(specified) > 1:
		errs = errs.Also(ErrMultipleOneOf(specified...))
	}
	return errs
}

func validateKeyToPath(k corev1.KeyToPath) *FieldError {
	errs := disallowed(&k, "key", "path", "mode")
	if k.Key == "" {
		errs = errs.Also(ErrMissingField("key"))
	}
	if k.Path == "" {
		errs = errs.Also(ErrMissingField("path"))
	}
	return errs
}

// validateProjected checks a projected Secret or ConfigMap (v), whose name and items
// are given: the two have the same fields.
func validateProjected(v any, name string, items []corev1.KeyToPath) *FieldError {
	errs := disallowed(v, "LocalObjectReference", "items", "optional")
	if name == "" {
		errs = errs.Also(ErrMissingField("name"))
	}
	for i, item := range items {
		errs = errs.Also(validateKeyToPath(item).ViaFieldIndex("items", i))
	}
	return errs
}

func validateProjection(p *corev1.VolumeProjection) *FieldError {
	errs := disallowed(p, "secret", "configMap", "serviceAccountToken", "downwardAPI")
	var specified []string
	if s := p.Secret; s != nil {
		specified = append(specified, "secret")
		errs = errs.Also(validateProjected(s, s.Name, s.Items).ViaField("secret"))
	}
	if c := p.ConfigMap; c != nil {
		specified = append(specified, "configMap")
		errs = errs.Also(validateProjected(c, c.Name, c.Items).ViaField("configMap"))
	}
	if t := p.ServiceAccountToken; t != nil {
		specified = append(specified, "serviceAccountToken")
		if t.Path == "" {
			errs = errs.Also(ErrMissingField("path").ViaField("serviceAccountToken"))
		}
	}
	if d := p.DownwardAPI; d != nil {
		specified = append(specified, "downwardAPI")
		for i := range d.Items {
			vf := &d.Items[i]
			ferrs := disallowed(vf, "fieldRef", "resourceFieldRef", "path", "mode")
			if vf.FieldRef == nil && vf.ResourceFieldRef == nil {
				ferrs = ferrs.Also(ErrMissingOneOf("fieldRef", "resourceFieldRef"))
			}
			if vf.FieldRef != nil && vf.ResourceFieldRef != nil {
				ferrs = ferrs.Also(ErrGeneric("Within a single item, cannot set both", "resourceFieldRef", "fieldRef"))
			}
			if vf.Path == "" {
				ferrs = ferrs.Also(ErrMissingField("path"))
			}
			errs = errs.Also(ferrs.ViaFieldIndex("items", i).ViaField("downwardAPI"))
		}
	}
	switch {
	case len(specified) == 0:
		errs = errs.Also(ErrMissingOneOf("secret", "configMap", "serviceAccountToken", "downwardAPI"))
	case len(specified) > 1:
		errs = errs.Also(ErrMultipleOneOf(specified...))
	}
	return errs
}

func validateVolumeMounts(mounts []corev1.VolumeMount, volumes map[string]corev1.Volume, f *config.Features) *FieldError {
	var errs *FieldError
	seenPaths := sets.New[string]()
	for i := range mounts {
		vm := &mounts[i]
		merrs := volumeMountMask(vm, f)
		v, ok := volumes[vm.Name]
		if !ok {
			merrs = merrs.Also(ErrGeneric("volumeMount has no matching volume", "name"))
		}
		clean := path.Clean(vm.MountPath)
		switch {
		case vm.MountPath == "":
			merrs = merrs.Also(ErrMissingField("mountPath"))
		case reservedPaths.Has(clean):
			merrs = merrs.Also(ErrGeneric(fmt.Sprintf("mountPath %q is a reserved path", clean), "mountPath"))
		case !path.IsAbs(vm.MountPath):
			merrs = merrs.Also(ErrInvalidValue(vm.MountPath, "mountPath"))
		case seenPaths.Has(clean):
			merrs = merrs.Also(ErrInvalidValue(fmt.Sprintf("%q must be unique", vm.MountPath), "mountPath"))
		}
		seenPaths.Insert(clean)
		if v.EmptyDir == nil && v.PersistentVolumeClaim == nil && v.Ephemeral == nil && !vm.ReadOnly {
			merrs = merrs.Also(ErrGeneric("volume mount should be readOnly for this type of volume", "readOnly"))
		}
		if mp := vm.MountPropagation; mp != nil {
			if !enabled(f.PodSpecVolumesMountPropagation) {
				merrs = merrs.Also(ErrGeneric(fmt.Sprintf("Volume Mount Propagation support is disabled, but found volume mount %s with mount propagation", vm.Name)))
			}
			if *mp != corev1.MountPropagationNone && *mp != corev1.MountPropagationHostToContainer {
				merrs = merrs.Also(ErrGeneric("mount propagation should be set to None or HostToContainer", "mountPropagation"))
			}
		}
		if pvc := v.PersistentVolumeClaim; pvc != nil && pvc.ReadOnly && !vm.ReadOnly {
			merrs = merrs.Also(ErrGeneric("volume is readOnly but volume mount is not", "readOnly"))
		}
		errs = errs.Also(merrs.ViaIndex(i))
	}
	return errs
}
