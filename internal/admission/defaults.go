package admission

import (
	"bytes"
	"crypto/md5" //nolint:gosec // a name hash, not security
	"encoding/hex"
	"strconv"
	"sync"
	"text/template"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// DefaultService fills in what Knative's defaulting webhook does for a Service: the
// template's defaults, the traffic default, and the creator/lastModifier annotations
// from the requesting user. old is nil on create; username "" sets no annotations.
func DefaultService(cfg *config.Config, s, old *servingv1.Service, username string) {
	var oldTemplate *servingv1.RevisionTemplateSpec
	if old != nil {
		oldTemplate = &old.Spec.Template
	}
	defaultConfigurationSpec(cfg, &s.Spec.ConfigurationSpec, oldTemplate, &s.ObjectMeta, old == nil)
	if len(s.Spec.Traffic) == 0 {
		s.Spec.Traffic = []servingv1.TrafficTarget{{Percent: ptr(int64(100)), LatestRevision: ptr(true)}}
	}
	defaultTraffic(s.Spec.Traffic)
	var oldSpec any
	if old != nil {
		oldSpec = old.Spec
	}
	setUserInfo(&s.ObjectMeta, oldSpec, s.Spec, old != nil, username)
}

// DefaultConfiguration fills in a Configuration's defaults; the user annotations only
// when no one owns it (a Service's Configuration carries the Service's).
func DefaultConfiguration(cfg *config.Config, c, old *servingv1.Configuration, username string) {
	var oldTemplate *servingv1.RevisionTemplateSpec
	var oldSpec any
	if old != nil {
		oldTemplate, oldSpec = &old.Spec.Template, old.Spec
	}
	defaultConfigurationSpec(cfg, &c.Spec, oldTemplate, &c.ObjectMeta, old == nil)
	if c.OwnerReferences == nil {
		setUserInfo(&c.ObjectMeta, oldSpec, c.Spec, old != nil, username)
	}
}

// DefaultRevision fills in a Revision's defaults on create; an update is never
// defaulted (the spec is immutable, and new defaults would change it).
func DefaultRevision(cfg *config.Config, r, old *servingv1.Revision) {
	if old != nil {
		return
	}
	defaultRevisionSpec(cfg, &r.Spec, &metav1.ObjectMeta{}, true)
}

// DefaultRoute fills in each traffic target's latestRevision and percent, and the user
// annotations of a Route no one owns.
func DefaultRoute(_ *config.Config, r, old *servingv1.Route, username string) {
	defaultTraffic(r.Spec.Traffic)
	if r.OwnerReferences == nil {
		var oldSpec any
		if old != nil {
			oldSpec = old.Spec
		}
		setUserInfo(&r.ObjectMeta, oldSpec, r.Spec, old != nil, username)
	}
}

func defaultConfigurationSpec(cfg *config.Config, cs *servingv1.ConfigurationSpec, oldTemplate *servingv1.RevisionTemplateSpec, parent *metav1.ObjectMeta, create bool) {
	// A template that keeps its user-chosen name is left alone: defaulting it would be a
	// change without a name change.
	if oldTemplate != nil && cs.Template.ObjectMeta.Name != "" && cs.Template.ObjectMeta.Name == oldTemplate.ObjectMeta.Name {
		return
	}
	defaultRevisionSpec(cfg, &cs.Template.Spec, parent, create)
}

func defaultTraffic(tt []servingv1.TrafficTarget) {
	for i := range tt {
		if tt[i].LatestRevision == nil {
			tt[i].LatestRevision = ptr(tt[i].RevisionName == "")
		}
		if tt[i].Percent == nil {
			tt[i].Percent = ptr(int64(0))
		}
	}
}

func setUserInfo(om *metav1.ObjectMeta, oldSpec, newSpec any, update bool, username string) {
	if username == "" {
		return
	}
	if update && equality.Semantic.DeepEqual(oldSpec, newSpec) {
		return
	}
	if om.Annotations == nil {
		om.Annotations = map[string]string{}
	}
	if !update {
		om.Annotations[creatorAnnotation] = username
	}
	om.Annotations[modifierAnnotation] = username
}

// defaultRevisionSpec applies config-defaults to a RevisionSpec as Knative does.
// parent is the Service's or Configuration's metadata (the container name template
// reads it); create says whether this is a create (enableServiceLinks is defaulted
// only then).
func defaultRevisionSpec(cfg *config.Config, rs *servingv1.RevisionSpec, parent *metav1.ObjectMeta, create bool) {
	d := cfg.Defaults
	if rs.TimeoutSeconds == nil || *rs.TimeoutSeconds == 0 {
		rs.TimeoutSeconds = ptr(d.RevisionTimeoutSeconds)
	}
	if rs.IdleTimeoutSeconds == nil && d.RevisionIdleTimeoutSeconds != 0 && d.RevisionIdleTimeoutSeconds < *rs.TimeoutSeconds {
		rs.IdleTimeoutSeconds = ptr(d.RevisionIdleTimeoutSeconds)
	}
	if rs.ResponseStartTimeoutSeconds == nil && d.RevisionResponseStartTimeoutSeconds != 0 && d.RevisionResponseStartTimeoutSeconds < *rs.TimeoutSeconds {
		rs.ResponseStartTimeoutSeconds = ptr(d.RevisionResponseStartTimeoutSeconds)
	}
	if rs.ContainerConcurrency == nil {
		rs.ContainerConcurrency = ptr(d.ContainerConcurrency)
	}

	taken := sets.New[string]()
	for _, c := range rs.Containers {
		taken.Insert(c.Name)
	}
	for _, c := range rs.InitContainers {
		taken.Insert(c.Name)
	}
	nameContainers(rs.Containers, taken, containerName(d.UserContainerNameTemplate, parent))
	nameContainers(rs.InitContainers, taken, containerName(d.InitContainerNameTemplate, parent))

	if rs.EnableServiceLinks == nil && create && d.EnableServiceLinks != nil {
		rs.EnableServiceLinks = ptr(*d.EnableServiceLinks)
	}
	for i := range rs.Containers {
		c := &rs.Containers[i]
		defaultResources(c, d)
		// The serving container (the only one, or the one with the port) gets a TCP
		// readiness probe on the serving port (port 0) when it has none.
		if len(rs.Containers) == 1 || len(c.Ports) != 0 {
			if c.ReadinessProbe == nil {
				c.ReadinessProbe = &corev1.Probe{}
			}
			h := &c.ReadinessProbe.ProbeHandler
			if h.TCPSocket == nil && h.HTTPGet == nil && h.Exec == nil && h.GRPC == nil {
				h.TCPSocket = &corev1.TCPSocketAction{}
			}
		}
		if p := c.ReadinessProbe; p != nil {
			if p.SuccessThreshold == 0 {
				p.SuccessThreshold = 1
			}
			if p.PeriodSeconds != 0 {
				if p.FailureThreshold == 0 {
					p.FailureThreshold = 3
				}
				if p.TimeoutSeconds == 0 {
					p.TimeoutSeconds = 1
				}
			}
		}
		for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe, c.StartupProbe} {
			if p != nil && p.GRPC != nil && p.GRPC.Service == nil {
				p.GRPC.Service = ptr("")
			}
		}
		defaultReadOnlyMounts(c, rs.Volumes)
		defaultSecurityContext(rs.SecurityContext, c, cfg.Features)
	}
	for i := range rs.InitContainers {
		defaultSecurityContext(rs.SecurityContext, &rs.InitContainers[i], cfg.Features)
	}
}

func defaultResources(c *corev1.Container, d *config.Defaults) {
	for _, r := range []struct {
		name       corev1.ResourceName
		req, limit *resource.Quantity
	}{
		{corev1.ResourceCPU, d.RevisionCPURequest, d.RevisionCPULimit},
		{corev1.ResourceMemory, d.RevisionMemoryRequest, d.RevisionMemoryLimit},
		{corev1.ResourceEphemeralStorage, d.RevisionEphemeralStorageRequest, d.RevisionEphemeralStorageLimit},
	} {
		if r.req != nil {
			if c.Resources.Requests == nil {
				c.Resources.Requests = corev1.ResourceList{}
			}
			if _, ok := c.Resources.Requests[r.name]; !ok {
				c.Resources.Requests[r.name] = r.req.DeepCopy()
			}
		}
		if r.limit != nil {
			if c.Resources.Limits == nil {
				c.Resources.Limits = corev1.ResourceList{}
			}
			if _, ok := c.Resources.Limits[r.name]; !ok {
				c.Resources.Limits[r.name] = r.limit.DeepCopy()
			}
		}
	}
}

// defaultReadOnlyMounts marks mounts readOnly unless their volume is writable
// (emptyDir, persistentVolumeClaim, ephemeral).
func defaultReadOnlyMounts(c *corev1.Container, volumes []corev1.Volume) {
	writable := sets.New[string]()
	for _, v := range volumes {
		if v.EmptyDir != nil || v.PersistentVolumeClaim != nil || v.Ephemeral != nil {
			writable.Insert(v.Name)
		}
	}
	for i := range c.VolumeMounts {
		if !writable.Has(c.VolumeMounts[i].Name) {
			c.VolumeMounts[i].ReadOnly = true
		}
	}
}

// defaultSecurityContext applies secure-pod-defaults (AllowRootBounded or Enabled).
func defaultSecurityContext(psc *corev1.PodSecurityContext, c *corev1.Container, f *config.Features) {
	if !securePodDefaults(f) {
		return
	}
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	sc := c.SecurityContext
	if sc == nil {
		sc = &corev1.SecurityContext{}
	}
	if sc.AllowPrivilegeEscalation == nil {
		sc.AllowPrivilegeEscalation = ptr(false)
	}
	if psc.SeccompProfile == nil || psc.SeccompProfile.Type == "" {
		if sc.SeccompProfile == nil {
			sc.SeccompProfile = &corev1.SeccompProfile{}
		}
		if sc.SeccompProfile.Type == "" {
			sc.SeccompProfile.Type = corev1.SeccompProfileTypeRuntimeDefault
		}
	}
	if sc.Capabilities == nil {
		sc.Capabilities = &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}
		for _, p := range c.Ports {
			if p.ContainerPort < 1024 {
				sc.Capabilities.Add = []corev1.Capability{"NET_BIND_SERVICE"}
				break
			}
		}
	}
	if f.SecurePodDefaults == config.Enabled && psc.RunAsNonRoot == nil && sc.RunAsNonRoot == nil {
		sc.RunAsNonRoot = ptr(true)
	}
	if !equality.Semantic.DeepEqual(*sc, corev1.SecurityContext{}) {
		c.SecurityContext = sc
	}
}

// nameContainers names unnamed containers: base alone for a single container, else
// base-0, base-1, ... skipping names the user took.
func nameContainers(cs []corev1.Container, taken sets.Set[string], base string) {
	next := 0
	for i := range cs {
		if cs[i].Name != "" {
			continue
		}
		name := base
		if len(cs) > 1 || taken.Has(name) {
			for {
				name = childName(base, "-"+strconv.Itoa(next))
				next++
				if !taken.Has(name) {
					break
				}
			}
		}
		cs[i].Name = name
	}
}

// childName is base+suffix, hashed down to 63 characters when longer (as Knative's
// kmeta.ChildName, for the common case).
func childName(base, suffix string) string {
	const longest, hashLen = 63, 32
	if len(base)+len(suffix) <= longest {
		return base + suffix
	}
	sum := md5.Sum([]byte(base)) //nolint:gosec
	keep := longest - hashLen - len(suffix)
	if keep < 0 {
		keep = 0
	}
	if keep > len(base) {
		keep = len(base)
	}
	return base[:keep] + hex.EncodeToString(sum[:]) + suffix
}

var templates sync.Map // string → *template.Template (nil when it does not parse)

// containerName runs a container-name-template over the parent's metadata; a template
// that fails gives "" as in Knative (validation then reports the unnamed container).
func containerName(tmpl string, parent *metav1.ObjectMeta) string {
	if tmpl == "" {
		return ""
	}
	v, ok := templates.Load(tmpl)
	if !ok {
		t, err := template.New("container-name").Parse(tmpl)
		if err != nil {
			t = nil
		}
		v, _ = templates.LoadOrStore(tmpl, t)
	}
	t, _ := v.(*template.Template)
	if t == nil {
		return ""
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, parent); err != nil {
		return ""
	}
	return buf.String()
}

func ptr[T any](v T) *T { return &v }
