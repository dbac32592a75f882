package v1

import (
	"context"
	"crypto/md5" //nolint:gosec // a name hash, not security
	"encoding/hex"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/ferry-serving/ferry/api/defaulting"
)

// Defaulting is Knative's (pkg/apis/serving/v1/*_defaults.go), and is as on a create
// unless the context says it is an update (WithinUpdate): what the reconcilers default
// is a new object, or stands for what the webhook wrote when it was created.

type baselineKey struct{}

// WithinUpdate returns ctx for the defaulting of an update of base, the object as it
// was. A Revision, whose spec is immutable, is then not defaulted at all; a Service's
// or Configuration's template that keeps its user-chosen name is left alone; and
// enableServiceLinks is not defaulted (Knative defaults it only on create).
func WithinUpdate(ctx context.Context, base any) context.Context {
	return context.WithValue(ctx, baselineKey{}, base)
}

func baseline(ctx context.Context) any { return ctx.Value(baselineKey{}) }

// SetDefaults fills in the template's defaults (with the Service's metadata for the
// container name template) and the traffic: all of it to the latest Revision when
// none is given.
func (s *Service) SetDefaults(ctx context.Context) {
	var prev *ConfigurationSpec
	if old, ok := baseline(ctx).(*Service); ok && old != nil {
		prev = &old.Spec.ConfigurationSpec
	}
	s.Spec.ConfigurationSpec.setDefaults(ctx, s.ObjectMeta, prev)
	if len(s.Spec.Traffic) == 0 {
		s.Spec.Traffic = []TrafficTarget{{Percent: ptr(int64(100)), LatestRevision: ptr(true)}}
	}
	defaultTraffic(s.Spec.Traffic)
}

// SetDefaults fills in the template's defaults, with the Configuration's metadata for
// the container name template.
func (c *Configuration) SetDefaults(ctx context.Context) {
	var prev *ConfigurationSpec
	if old, ok := baseline(ctx).(*Configuration); ok && old != nil {
		prev = &old.Spec
	}
	c.Spec.setDefaults(ctx, c.ObjectMeta, prev)
}

// SetDefaults fills in each traffic target's latestRevision and percent. A Route's
// empty traffic stays empty: only a Service's defaults to its latest Revision.
func (r *Route) SetDefaults(context.Context) { defaultTraffic(r.Spec.Traffic) }

// SetDefaults fills in a Revision's spec, except in an update: the spec is immutable,
// and new defaults would change it.
func (r *Revision) SetDefaults(ctx context.Context) {
	if baseline(ctx) != nil {
		return
	}
	r.Spec.SetDefaults(ctx)
}

// SetDefaults fills in a Revision spec's defaults, as a Revision's own (its container
// name template runs on empty metadata).
func (rs *RevisionSpec) SetDefaults(ctx context.Context) {
	rs.setDefaults(ctx, metav1.ObjectMeta{})
}

// setDefaults defaults the template unless it keeps, in an update, the name the user
// chose: defaulting it would be a change without a name change.
func (cs *ConfigurationSpec) setDefaults(ctx context.Context, parent metav1.ObjectMeta, prev *ConfigurationSpec) {
	if prev != nil && cs.Template.ObjectMeta.Name != "" && cs.Template.ObjectMeta.Name == prev.Template.ObjectMeta.Name {
		return
	}
	cs.Template.Spec.setDefaults(ctx, parent)
}

// defaultTraffic sets latestRevision to true where no revision is named, and percent to
// 0 where it is missing, as Knative does so that nothing downstream checks for nil.
func defaultTraffic(tt []TrafficTarget) {
	for i := range tt {
		if tt[i].LatestRevision == nil {
			tt[i].LatestRevision = ptr(tt[i].RevisionName == "")
		}
		if tt[i].Percent == nil {
			tt[i].Percent = ptr(int64(0))
		}
	}
}

// setDefaults applies config-defaults and config-features to a RevisionSpec as Knative
// does. parent is the Service's or Configuration's metadata, which the container name
// templates read.
func (rs *RevisionSpec) setDefaults(ctx context.Context, parent metav1.ObjectMeta) {
	cfg := defaulting.FromContextOrDefaults(ctx)
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
	nameContainers(rs.Containers, taken, d.UserContainerName(parent))
	nameContainers(rs.InitContainers, taken, d.InitContainerName(parent))

	if rs.EnableServiceLinks == nil && baseline(ctx) == nil && d.EnableServiceLinks != nil {
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

func defaultResources(c *corev1.Container, d *defaulting.Defaults) {
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
func defaultSecurityContext(psc *corev1.PodSecurityContext, c *corev1.Container, f *defaulting.Features) {
	if f.SecurePodDefaults != defaulting.Enabled && f.SecurePodDefaults != defaulting.AllowRootBounded {
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
	if f.SecurePodDefaults == defaulting.Enabled && psc.RunAsNonRoot == nil && sc.RunAsNonRoot == nil {
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
	sum := md5.Sum([]byte(base)) //nolint:gosec // a name hash, not security
	keep := longest - hashLen - len(suffix)
	if keep < 0 {
		keep = 0
	}
	if keep > len(base) {
		keep = len(base)
	}
	return base[:keep] + hex.EncodeToString(sum[:]) + suffix
}

func ptr[T any](v T) *T { return &v }
