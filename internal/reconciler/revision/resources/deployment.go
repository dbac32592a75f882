// Package resources builds what runs a Revision: its Deployment and PodAutoscaler.
// There is no Kubernetes Service per Revision: the gateway follows the Revision's pods
// itself.
package resources

import (
	"slices"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-serving/ferry/api/defaulting"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/kmeta"
)

// userPortName is the name Knative gives the serving container's port.
const userPortName = "user-port"

// ProgressDeadline is the Revision's progress deadline in whole seconds: its
// serving.knative.dev/progress-deadline annotation (admission checked it is a
// non-negative whole-second duration), else def (config-deployment's).
func ProgressDeadline(rev *v1.Revision, def time.Duration) int32 {
	if d, err := time.ParseDuration(rev.Annotations[v1.ProgressDeadlineAnnotationKey]); err == nil && d > 0 {
		def = d
	}
	return int32(def / time.Second)
}

// Selector is the label that ties a Revision to its pods; the gateway and the Revision
// reconciler's pod lookup use it too.
func Selector(rev *v1.Revision) map[string]string {
	return map[string]string{v1.RevisionLabelKey: rev.Name}
}

// Labels are the labels of everything a Revision owns: the Revision's own plus the
// revision name and UID, less those that say which Routes reach it (route,
// routingState), as in Knative: they change with traffic, and on a pod template a
// change would roll the pods.
func Labels(rev *v1.Revision) map[string]string {
	l := make(map[string]string, len(rev.Labels)+2)
	for k, v := range rev.Labels {
		if k != v1.RouteLabelKey && k != v1.RoutingStateLabelKey {
			l[k] = v
		}
	}
	l[v1.RevisionLabelKey] = rev.Name
	l[v1.RevisionUIDLabelKey] = string(rev.UID)
	return l
}

// Annotations are the annotations of everything a Revision owns: the Revision's own
// less kubectl's last-applied copy and, for the same reason as in Labels, the routing
// bookkeeping (routes, routingStateModified).
func Annotations(rev *v1.Revision) map[string]string {
	a := kmeta.WithoutLastApplied(rev.Annotations)
	delete(a, v1.RoutesAnnotationKey)
	delete(a, v1.RoutingStateModifiedAnnotation)
	return a
}

// DeploymentName is the name of the Deployment that runs a Revision's pods, as Knative
// names it: <revision>-deployment, hashed by kmeta.ChildName to fit 63 characters when
// the Revision's name is over 52 (shorter names are unchanged, so existing Deployments
// are adopted). It lives here rather than in api/ because the rule is internal/kmeta's.
func DeploymentName(revision string) string { return kmeta.ChildName(revision, "-deployment") }

// MakeDeployment builds the Deployment of a defaulted Revision, with replicas pods.
// After its creation the autoscaler owns the replica count.
func MakeDeployment(rev *v1.Revision, progressDeadline, replicas int32) *appsv1.Deployment {
	labels := Labels(rev)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{
			Name:            DeploymentName(rev.Name),
			Namespace:       rev.Namespace,
			Labels:          labels,
			Annotations:     Annotations(rev),
			OwnerReferences: []metav1.OwnerReference{ownerRef(rev)},
		},
		Spec: appsv1.DeploymentSpec{
			Replicas:                ptr(replicas),
			Selector:                &metav1.LabelSelector{MatchLabels: Selector(rev)},
			ProgressDeadlineSeconds: ptr(progressDeadline),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: Annotations(rev)},
				Spec:       makePodSpec(rev),
			},
		},
	}
}

// DrainSeconds is how long a leaving pod keeps serving before anything else happens:
// enough for every gateway replica's pod watch to see its deletionTimestamp and stop
// sending it new requests. The watch takes milliseconds; the rest is margin for an API
// server under load.
const DrainSeconds = 10

// ShutdownSeconds is what a container gets after SIGTERM, with no request left in
// flight, to exit before SIGKILL: Kubernetes' default grace period.
const ShutdownSeconds = 30

// PreStopSleepSeconds is how long a leaving pod's containers wait before SIGTERM: the
// drain, then the Revision's timeoutSeconds, the longest a request sent just before the
// drain may still take. Knative's user containers wait the same way, in a preStop
// hook that returns once queue-proxy has drained; Ferry has no queue-proxy, so the
// kubelet's own sleep action waits instead.
func PreStopSleepSeconds(rev *v1.Revision) int64 {
	return DrainSeconds + timeoutSeconds(rev)
}

// TerminationGracePeriodSeconds bounds a leaving pod's whole termination: the preStop
// sleep, then ShutdownSeconds. Knative sets it to timeoutSeconds, which its preStop
// hook shares with queue-proxy's drain.
func TerminationGracePeriodSeconds(rev *v1.Revision) int64 {
	return PreStopSleepSeconds(rev) + ShutdownSeconds
}

// Drains says whether pods of spec drain before SIGTERM: a Deployment that an older
// Ferry made has no preStop hook (admission refuses the user's).
func Drains(spec *corev1.PodSpec) bool {
	for _, c := range spec.Containers {
		if c.Lifecycle != nil && c.Lifecycle.PreStop != nil {
			return true
		}
	}
	return false
}

// WithoutDrain leaves spec's preStop hooks and grace period unset, for a comparison
// with a Deployment that has none.
func WithoutDrain(spec *corev1.PodSpec) {
	spec.TerminationGracePeriodSeconds = nil
	for i := range spec.Containers {
		spec.Containers[i].Lifecycle = nil
	}
}

// timeoutSeconds is the Revision's timeoutSeconds; unset or 0 (a Revision that
// admission did not default) means config-defaults' default, as defaulting would.
func timeoutSeconds(rev *v1.Revision) int64 {
	if t := rev.Spec.TimeoutSeconds; t != nil && *t > 0 {
		return *t
	}
	return defaulting.DefaultDefaults().RevisionTimeoutSeconds
}

// makePodSpec is the Revision's PodSpec with what Knative adds around the serving
// container: its port (8080 unless named), PORT in its environment (and K_REVISION,
// K_CONFIGURATION, K_SERVICE in every container's), a TCP readiness
// probe on it unless the user gave one, the probes in the kubelet's terms
// (kubeletProbe), and logs as the
// termination message fallback so that a crash explains itself in the Revision's status.
// Every container drains before SIGTERM (PreStopSleepSeconds) within the pod's
// TerminationGracePeriodSeconds. As in Knative, these replace what the PodSpec says:
// admission refuses lifecycle and terminationGracePeriodSeconds (Knative's field mask),
// so only a Revision written around admission has them, and a hook or grace period of
// the user's could cut the drain short.
func makePodSpec(rev *v1.Revision) corev1.PodSpec {
	spec := *rev.Spec.PodSpec.DeepCopy()
	if len(spec.Containers) == 0 {
		return spec
	}
	spec.TerminationGracePeriodSeconds = ptr(TerminationGracePeriodSeconds(rev))
	preStop := &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{
		Sleep: &corev1.SleepAction{Seconds: PreStopSleepSeconds(rev)}}}
	port := rev.Spec.UserPort()
	c := &spec.Containers[rev.Spec.ServingContainer()]
	switch {
	case len(c.Ports) == 0:
		c.Ports = []corev1.ContainerPort{{Name: userPortName, ContainerPort: port, Protocol: corev1.ProtocolTCP}}
	case c.Ports[0].ContainerPort == 0:
		c.Ports[0].ContainerPort = port
	}
	if !hasEnv(c.Env, "PORT") {
		c.Env = append(c.Env, corev1.EnvVar{Name: "PORT", Value: strconv.Itoa(int(port))})
	}
	if c.ReadinessProbe == nil {
		c.ReadinessProbe = &corev1.Probe{}
	}
	for i := range spec.Containers {
		c := &spec.Containers[i]
		c.Env = append(c.Env, knativeEnv(rev)...)
		c.Lifecycle = preStop.DeepCopy()
		if c.TerminationMessagePolicy == "" {
			c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
		}
		kubeletProbe(c.ReadinessProbe, port, true)
		kubeletProbe(c.LivenessProbe, port, false)
		kubeletProbe(c.StartupProbe, port, false)
	}
	return spec
}

// HasKnativeEnv says whether the containers of spec get knativeEnv: a Deployment that
// an older Ferry made has none.
func HasKnativeEnv(spec *corev1.PodSpec) bool {
	return len(spec.Containers) == 0 || hasEnv(spec.Containers[0].Env, "K_REVISION")
}

// WithoutKnativeEnv leaves knativeEnv out of spec's containers, for a comparison with
// a Deployment that has none.
func WithoutKnativeEnv(spec *corev1.PodSpec) {
	for i := range spec.Containers {
		c := &spec.Containers[i]
		c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool {
			return e.Name == "K_REVISION" || e.Name == "K_CONFIGURATION" || e.Name == "K_SERVICE"
		})
	}
}

// knativeEnv is what Knative's runtime contract gives every container of a Revision:
// K_REVISION, and K_CONFIGURATION and K_SERVICE from the Revision's labels (empty for
// a Revision that no Service made, as in Knative).
func knativeEnv(rev *v1.Revision) []corev1.EnvVar {
	return []corev1.EnvVar{
		{Name: "K_REVISION", Value: rev.Name},
		{Name: "K_CONFIGURATION", Value: rev.Labels[v1.ConfigurationLabelKey]},
		{Name: "K_SERVICE", Value: rev.Labels[v1.ServiceLabelKey]},
	}
}

func hasEnv(env []corev1.EnvVar, name string) bool {
	for _, e := range env {
		if e.Name == name {
			return true
		}
	}
	return false
}

func ownerRef(rev *v1.Revision) metav1.OwnerReference {
	return *metav1.NewControllerRef(rev, v1.SchemeGroupVersion.WithKind("Revision"))
}

func ptr[T any](v T) *T { return &v }
