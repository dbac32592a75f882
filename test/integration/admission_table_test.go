package integration

// The admission table: what Ferry's admission must reject, and what it must keep
// accepting, written as Ferry's own cases after the rules in Knative Serving's
// validation tests (pkg/apis/serving/v1/*_validation_test.go,
// pkg/apis/serving/k8s_validation_test.go, pkg/apis/autoscaling/
// annotation_validation_test.go, pkg/apis/serving/metadata_validation_test.go).
//
// How a case is judged:
//   - A case is one object as a user would apply it (YAML, mostly flow style).
//   - It goes to the embedded API server as a server-side dry run, so the whole
//     admission chain runs (schema, CEL, mutating and validating webhooks) and
//     nothing is stored. Cases that need an existing object (update rules) create it
//     for real first and dry-run the update.
//   - A rejected case must be refused as a denial (422 Invalid, 400 BadRequest or 403
//     Forbidden) and the message must contain every wanted string; "a|b" accepts
//     either spelling. The wanted strings are Knative's field paths; where Knative's
//     path has a quirk (containers[*].ports, ports.containerPort without an index,
//     init-container errors reported under containers[i]) the Kubernetes-style path
//     is accepted too. Where Knative reports no path at all, its message's key
//     phrase or the field path will do.
//   - Rejected cases are sent without fieldValidation (the server's default, Warn),
//     so a rule must hold for every client, not only kubectl. Accepted cases are
//     sent with fieldValidation=Strict, as kubectl does, so a valid field missing
//     from the schema shows up as a wrong rejection.
//   - Knative defaults before it validates, so the table judges objects as Knative's
//     webhook would after defaulting: a secret mount without readOnly is accepted
//     (defaulting makes it readOnly), a readinessProbe without a handler is accepted
//     (it gets tcpSocket), successThreshold 0 is accepted (it becomes 1).
//
// Cases that need config-features (or config-defaults) values run in serial groups
// after the default-config cases: each group writes the ConfigMaps in ferry-system,
// waits until a case whose outcome must change (the probe) flips, runs its cases
// in parallel, and restores the ConfigMaps. The ConfigMaps are the only way in, as
// for a user of ferry up or of a real cluster: if admission does not read them, the
// group fails once and its cases are reported as not judged.

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// admissionCase is one row of the table.
type admissionCase struct {
	name string
	// obj is the object to submit (without namespace). For an update case it is the
	// object created for real first.
	obj string
	// update, when set, makes this an update case: obj is created, read back, passed
	// to update, and the result is submitted as a dry-run update.
	update func(*unstructured.Unstructured)
	// owner, for an update case, is an object created for real before obj; obj's
	// ownerReferences naming it get its UID (so the garbage collector keeps obj).
	owner  string
	reject bool
	// want: strings that must all appear in the API server's message; "a|b" means
	// either a or b.
	want []string
}

func rej(name, obj string, want ...string) admissionCase {
	return admissionCase{name: name, obj: obj, reject: true, want: want}
}

func acc(name, obj string) admissionCase {
	return admissionCase{name: name, obj: obj}
}

// Builders of flow-style YAML in Ferry's (Knative's) types.

const (
	ferryImage = "example.com/app"
	// Knative's field path prefixes for a Service.
	pod  = "spec.template.spec."
	c0   = pod + "containers[0]."
	c1   = pod + "containers[1]."
	tann = "spec.template.metadata.annotations."
)

func object(kind, meta, spec string) string {
	return "apiVersion: serving.knative.dev/v1\nkind: " + kind + "\nmetadata: " + meta + "\nspec: " + spec + "\n"
}

// svcPod is a Service named svc whose template's pod spec is podSpec.
func svcPod(podSpec string) string {
	return object("Service", "{name: svc}", "{template: {spec: "+podSpec+"}}")
}

// ctr is a container with the test image and the extra fields given (flow YAML
// mapping entries, without braces).
func ctr(fields string) string {
	if fields == "" {
		return "{image: " + ferryImage + "}"
	}
	return "{image: " + ferryImage + ", " + fields + "}"
}

// svcCtr is a Service with one container carrying the extra fields.
func svcCtr(fields string) string {
	return svcPod("{containers: [" + ctr(fields) + "]}")
}

// svcPodField is a Service whose pod spec has one plain container and the extra
// pod spec fields.
func svcPodField(fields string) string {
	return svcPod("{containers: [" + ctr("") + "], " + fields + "}")
}

// svcSidecar is a Service with a serving container (port 8080) and a sidecar
// carrying the extra fields.
func svcSidecar(fields string) string {
	return svcPod("{containers: [" + ctr("name: app, ports: [{containerPort: 8080}]") + ", {name: side, image: example.com/side, " + fields + "}]}")
}

// svcVolume is a Service with one volume (the source given as flow YAML) mounted
// by its container with the mount fields given.
func svcVolume(source, mount string) string {
	if mount != "" {
		mount = ", " + mount
	}
	if source != "" {
		source = ", " + source
	}
	return svcPod("{containers: [" + ctr("volumeMounts: [{name: v, mountPath: /v"+mount+"}]") + "], volumes: [{name: v" + source + "}]}")
}

// annotations renders alternating keys and values as a flow mapping.
func annotations(kv ...string) string {
	var parts []string
	for i := 0; i+1 < len(kv); i += 2 {
		parts = append(parts, strconv.Quote(kv[i])+": "+strconv.Quote(kv[i+1]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// svcTmplAnn is a Service whose revision template carries the annotations.
func svcTmplAnn(kv ...string) string {
	return object("Service", "{name: svc}", "{template: {metadata: {annotations: "+annotations(kv...)+"}, spec: {containers: ["+ctr("")+"]}}}")
}

// svcMeta is a Service with the given metadata.
func svcMeta(meta string) string {
	return object("Service", meta, "{template: {spec: {containers: ["+ctr("")+"]}}}")
}

// svcTmplMeta is a Service named svc whose template has the given metadata.
func svcTmplMeta(meta string) string {
	return object("Service", "{name: svc}", "{template: {metadata: "+meta+", spec: {containers: ["+ctr("")+"]}}}")
}

// svcTraffic is a Service named svc with the traffic block given.
func svcTraffic(traffic string) string {
	return object("Service", "{name: svc}", "{template: {spec: {containers: ["+ctr("")+"]}}, traffic: "+traffic+"}")
}

// svcRevSpec is a Service with extra revision spec fields (timeoutSeconds etc.).
func svcRevSpec(fields string) string {
	return object("Service", "{name: svc}", "{template: {spec: {containers: ["+ctr("")+"], "+fields+"}}}")
}

func cfgMeta(meta string) string {
	return object("Configuration", meta, "{template: {spec: {containers: ["+ctr("")+"]}}}")
}

func cfgTmplMeta(meta string) string {
	return object("Configuration", "{name: cfg}", "{template: {metadata: "+meta+", spec: {containers: ["+ctr("")+"]}}}")
}

func revMeta(meta string) string {
	return object("Revision", meta, "{containers: ["+ctr("")+"]}")
}

func revSpec(fields string) string {
	return object("Revision", "{name: rev}", "{containers: ["+ctr("")+"], "+fields+"}")
}

func routeMeta(meta string) string {
	return object("Route", meta, "{traffic: [{configurationName: cfg, percent: 100}]}")
}

func routeTraffic(traffic string) string {
	return object("Route", "{name: rt}", "{traffic: "+traffic+"}")
}

// owner renders one ownerReference.
func owner(kind, name string) string {
	return fmt.Sprintf("{apiVersion: serving.knative.dev/v1, kind: %s, name: %s, uid: 6a3f5c1e-3c1b-4c4e-9d51-0e0c7f0a%04d, controller: true}", kind, name, len(kind)+len(name))
}

// The update helpers edit a stored object.

func setField(value any, fields ...string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		if err := unstructured.SetNestedField(u.Object, value, fields...); err != nil {
			panic(err)
		}
	}
}

func setAnnotation(key, value string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		a := u.GetAnnotations()
		if a == nil {
			a = map[string]string{}
		}
		if a[key] == value {
			value += "-changed"
		}
		a[key] = value
		u.SetAnnotations(a)
	}
}

func setLabel(key, value string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		l := u.GetLabels()
		if l == nil {
			l = map[string]string{}
		}
		l[key] = value
		u.SetLabels(l)
	}
}

// setImage sets the first container's image in the containers list at fields.
func setImage(image string, fields ...string) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		cs, _, _ := unstructured.NestedSlice(u.Object, fields...)
		if len(cs) == 0 {
			panic("no containers at " + strings.Join(fields, "."))
		}
		cs[0].(map[string]any)["image"] = image
		if err := unstructured.SetNestedSlice(u.Object, cs, fields...); err != nil {
			panic(err)
		}
	}
}

func both(fs ...func(*unstructured.Unstructured)) func(*unstructured.Unstructured) {
	return func(u *unstructured.Unstructured) {
		for _, f := range fs {
			f(u)
		}
	}
}

var templateContainers = []string{"spec", "template", "spec", "containers"}

// defaultConfigCases run with Knative's default configuration, in parallel.
func defaultConfigCases() []admissionCase {
	cases := []admissionCase{
		// ---- Names (DNS-1035 labels), generateName.
		rej("service name with dots", svcMeta("{name: a.b}"), "metadata.name"),
		rej("service name starting with a digit", svcMeta("{name: 1svc}"), "metadata.name"),
		rej("service name of 64 characters", svcMeta("{name: "+strings.Repeat("a", 64)+"}"), "metadata.name"),
		rej("service generateName with dots", svcMeta("{generateName: a.b-}"), "metadata.generateName"),
		rej("service generateName starting with a digit", svcMeta("{generateName: 1svc-}"), "metadata.generateName"),
		rej("configuration name with dots", cfgMeta("{name: a.b}"), "metadata.name"),
		rej("configuration name starting with a digit", cfgMeta("{name: 9cfg}"), "metadata.name"),
		rej("configuration generateName starting with a digit", cfgMeta("{generateName: 9cfg-}"), "metadata.generateName"),
		rej("route name with dots", routeMeta("{name: a.b}"), "metadata.name"),
		rej("route name of 64 characters", routeMeta("{name: "+strings.Repeat("r", 64)+"}"), "metadata.name"),
		rej("route generateName with dots", routeMeta("{generateName: a.b-}"), "metadata.generateName"),
		rej("revision name with dots", revMeta("{name: a.b}"), "metadata.name"),
		rej("revision name starting with a digit", revMeta("{name: 0rev}"), "metadata.name"),
		rej("revision generateName with dots", revMeta("{generateName: a.b-}"), "metadata.generateName"),

		// ---- BYO revision names.
		rej("template name without the service's prefix", svcTmplMeta("{name: foo}"), "spec.template.metadata.name"),
		rej("template name equal to the service name", svcTmplMeta("{name: svc}"), "spec.template.metadata.name"),
		rej("template name with another service's prefix", svcTmplMeta("{name: other-v1}"), "spec.template.metadata.name"),
		rej("template name with dots", svcTmplMeta("{name: svc-a.b}"), "spec.template.metadata.name"),
		rej("template name with capitals", svcTmplMeta("{name: svc-V1}"), "spec.template.metadata.name"),
		rej("template name of 64 characters", svcTmplMeta("{name: svc-"+strings.Repeat("x", 60)+"}"), "spec.template.metadata.name"),
		rej("template generateName with dots", svcTmplMeta("{generateName: svc.a-}"), "spec.template.metadata.generateName"),
		rej("template generateName starting with a digit", svcTmplMeta("{generateName: 1svc-}"), "spec.template.metadata.generateName"),
		rej("template name beside a generated service name",
			object("Service", "{generateName: svc-}", "{template: {metadata: {name: svc-v1}, spec: {containers: ["+ctr("")+"]}}}"),
			"spec.template.metadata.name"),
		rej("configuration template name without prefix", cfgTmplMeta("{name: foo}"), "spec.template.metadata.name"),
		rej("configuration template name not DNS-1035", cfgTmplMeta("{name: cfg-a.b}"), "spec.template.metadata.name"),
		rej("configuration template name of the bare prefix", cfgTmplMeta("{name: cfg-}"), "spec.template.metadata.name"),
		rej("configuration template generateName with dots", cfgTmplMeta("{generateName: cfg.x-}"), "spec.template.metadata.generateName"),
		rej("configuration template name beside generateName",
			object("Configuration", "{generateName: cfg-}", "{template: {metadata: {name: cfg-v1}, spec: {containers: ["+ctr("")+"]}}}"),
			"spec.template.metadata.name"),

		// ---- Labels and ownerReferences.
		rej("configuration service label without owner", cfgMeta("{name: cfg, labels: {serving.knative.dev/service: svc}}"),
			"metadata.labels.serving.knative.dev/service"),
		rej("configuration service label with another owner", cfgMeta("{name: cfg, labels: {serving.knative.dev/service: svc}, ownerReferences: ["+owner("Service", "other")+"]}"),
			"metadata.labels.serving.knative.dev/service"),
		rej("configuration service label owned by a Route", cfgMeta("{name: cfg, labels: {serving.knative.dev/service: svc}, ownerReferences: ["+owner("Route", "svc")+"]}"),
			"metadata.labels.serving.knative.dev/service"),
		rej("route service label without owner", routeMeta("{name: rt, labels: {serving.knative.dev/service: svc}}"),
			"metadata.labels.serving.knative.dev/service"),
		rej("route service label with another owner", routeMeta("{name: rt, labels: {serving.knative.dev/service: svc}, ownerReferences: ["+owner("Service", "nope")+"]}"),
			"metadata.labels.serving.knative.dev/service"),
		rej("revision configuration label without owner", revMeta("{name: rev, labels: {serving.knative.dev/configuration: cfg}}"),
			"metadata.labels.serving.knative.dev/configuration"),
		rej("revision configuration label with another owner", revMeta("{name: rev, labels: {serving.knative.dev/configuration: cfg}, ownerReferences: ["+owner("Configuration", "other")+"]}"),
			"metadata.labels.serving.knative.dev/configuration"),
		rej("revision configuration label owned by a Service", revMeta("{name: rev, labels: {serving.knative.dev/configuration: cfg}, ownerReferences: ["+owner("Service", "cfg")+"]}"),
			"metadata.labels.serving.knative.dev/configuration"),

		// ---- Annotations on the objects' own metadata.
		rej("autoscaling annotation on a Service", svcMeta("{name: svc, annotations: {autoscaling.knative.dev/min-scale: \"1\"}}"),
			"metadata.annotations", "autoscaling.knative.dev/min-scale"),
		rej("unknown autoscaling annotation on a Service", svcMeta("{name: svc, annotations: {autoscaling.knative.dev/foo: bar}}"),
			"metadata.annotations", "autoscaling.knative.dev/foo"),
		rej("autoscaling annotation on a Configuration", cfgMeta("{name: cfg, annotations: {autoscaling.knative.dev/max-scale: \"3\"}}"),
			"metadata.annotations", "autoscaling.knative.dev/max-scale"),
		rej("autoscaling annotation on a Route", routeMeta("{name: rt, annotations: {autoscaling.knative.dev/class: kpa.autoscaling.knative.dev}}"),
			"metadata.annotations", "autoscaling.knative.dev/class"),
		rej("rollout-duration not a duration", svcMeta("{name: svc, annotations: {serving.knative.dev/rollout-duration: CLXXXIIIs}}"),
			"metadata.annotations.serving.knative.dev/rollout-duration"),
		rej("rollout-duration below a second", svcMeta("{name: svc, annotations: {serving.knative.dev/rollout-duration: 1500ms}}"),
			"metadata.annotations.serving.knative.dev/rollout-duration"),
		rej("rollout-duration negative", svcMeta("{name: svc, annotations: {serving.knative.dev/rollout-duration: -10s}}"),
			"metadata.annotations.serving.knative.dev/rollout-duration"),
		rej("rollout-duration legacy key not a duration", svcMeta("{name: svc, annotations: {serving.knative.dev/rolloutDuration: soon}}"),
			"metadata.annotations.serving.knative.dev/rolloutDuration"),
		rej("route rollout-duration not a duration", routeMeta("{name: rt, annotations: {serving.knative.dev/rollout-duration: three hours}}"),
			"metadata.annotations.serving.knative.dev/rollout-duration"),
		rej("revision min-scale not a number", revMeta("{name: rev, annotations: {autoscaling.knative.dev/min-scale: few}}"),
			"metadata.annotations.autoscaling.knative.dev/min-scale"),
		rej("revision initial-scale negative", revMeta("{name: rev, annotations: {autoscaling.knative.dev/initial-scale: \"-2\"}}"),
			"metadata.annotations.autoscaling.knative.dev/initial-scale"),

		// ---- Template annotations: autoscaling ranges and formats.
		rej("min-scale negative", svcTmplAnn("autoscaling.knative.dev/min-scale", "-1"), tann+"autoscaling.knative.dev/min-scale"),
		rej("min-scale not a number", svcTmplAnn("autoscaling.knative.dev/min-scale", "foo"), tann+"autoscaling.knative.dev/min-scale"),
		rej("min-scale legacy key negative", svcTmplAnn("autoscaling.knative.dev/minScale", "-4"), tann+"autoscaling.knative.dev/minScale"),
		rej("max-scale negative", svcTmplAnn("autoscaling.knative.dev/max-scale", "-1"), tann+"autoscaling.knative.dev/max-scale"),
		rej("max-scale not a number", svcTmplAnn("autoscaling.knative.dev/max-scale", "bar"), tann+"autoscaling.knative.dev/max-scale"),
		rej("max-scale above int32", svcTmplAnn("autoscaling.knative.dev/max-scale", "2147483648"), tann+"autoscaling.knative.dev/max-scale"),
		rej("max-scale below min-scale", svcTmplAnn("autoscaling.knative.dev/min-scale", "5", "autoscaling.knative.dev/max-scale", "2"), tann+"autoscaling.knative.dev/max-scale"),
		rej("activation-scale below min-scale", svcTmplAnn("autoscaling.knative.dev/min-scale", "3", "autoscaling.knative.dev/activation-scale", "2"), tann+"autoscaling.knative.dev/activation-scale"),
		rej("activation-scale above max-scale", svcTmplAnn("autoscaling.knative.dev/max-scale", "1", "autoscaling.knative.dev/activation-scale", "2"), tann+"autoscaling.knative.dev/activation-scale"),
		rej("activation-scale of 1", svcTmplAnn("autoscaling.knative.dev/activation-scale", "1"), tann+"autoscaling.knative.dev/activation-scale"),
		rej("activation-scale not a number", svcTmplAnn("autoscaling.knative.dev/activation-scale", "many"), tann+"autoscaling.knative.dev/activation-scale"),
		rej("class of knative.dev not KPA or HPA", svcTmplAnn("autoscaling.knative.dev/class", "unsupported.knative.dev"), tann+"autoscaling.knative.dev/class"),
		rej("metric-aggregation-algorithm unknown on KPA", svcTmplAnn("autoscaling.knative.dev/class", "kpa.autoscaling.knative.dev", "autoscaling.knative.dev/metric-aggregation-algorithm", "random-selection"), tann+"autoscaling.knative.dev/metric-aggregation-algorithm"),
		rej("metric cpu on the default class (KPA)", svcTmplAnn("autoscaling.knative.dev/metric", "cpu"), tann+"autoscaling.knative.dev/metric"),
		rej("metric empty on HPA", svcTmplAnn("autoscaling.knative.dev/class", "hpa.autoscaling.knative.dev", "autoscaling.knative.dev/metric", ""), tann+"autoscaling.knative.dev/metric"),
		rej("panic-window-percentage negative", svcTmplAnn("autoscaling.knative.dev/panic-window-percentage", "-1"), tann+"autoscaling.knative.dev/panic-window-percentage"),
		rej("panic-window-percentage above 100", svcTmplAnn("autoscaling.knative.dev/panic-window-percentage", "202"), tann+"autoscaling.knative.dev/panic-window-percentage"),
		rej("panic-window-percentage not a number", svcTmplAnn("autoscaling.knative.dev/panic-window-percentage", "fifty"), tann+"autoscaling.knative.dev/panic-window-percentage"),
		rej("panic-threshold-percentage below 110", svcTmplAnn("autoscaling.knative.dev/panic-threshold-percentage", "109"), tann+"autoscaling.knative.dev/panic-threshold-percentage"),
		rej("panic-threshold-percentage above 1000", svcTmplAnn("autoscaling.knative.dev/panic-threshold-percentage", "10009"), tann+"autoscaling.knative.dev/panic-threshold-percentage"),
		rej("panic-threshold-percentage not a number", svcTmplAnn("autoscaling.knative.dev/panic-threshold-percentage", "fifty"), tann+"autoscaling.knative.dev/panic-threshold-percentage"),
		rej("target negative", svcTmplAnn("autoscaling.knative.dev/target", "-11"), tann+"autoscaling.knative.dev/target"),
		rej("target zero", svcTmplAnn("autoscaling.knative.dev/target", "0"), tann+"autoscaling.knative.dev/target"),
		rej("target not a number", svcTmplAnn("autoscaling.knative.dev/target", "100}"), tann+"autoscaling.knative.dev/target"),
		rej("target-burst-capacity negative", svcTmplAnn("autoscaling.knative.dev/target-burst-capacity", "-11"), tann+"autoscaling.knative.dev/target-burst-capacity"),
		rej("target-burst-capacity not a number", svcTmplAnn("autoscaling.knative.dev/target-burst-capacity", "qarashen"), tann+"autoscaling.knative.dev/target-burst-capacity"),
		rej("target-utilization-percentage zero", svcTmplAnn("autoscaling.knative.dev/target-utilization-percentage", "0"), tann+"autoscaling.knative.dev/target-utilization-percentage"),
		rej("target-utilization-percentage above 100", svcTmplAnn("autoscaling.knative.dev/target-utilization-percentage", "101"), tann+"autoscaling.knative.dev/target-utilization-percentage"),
		rej("target-utilization-percentage not a number", svcTmplAnn("autoscaling.knative.dev/target-utilization-percentage", "dghyak"), tann+"autoscaling.knative.dev/target-utilization-percentage"),
		rej("window not a duration", svcTmplAnn("autoscaling.knative.dev/window", "jerry-was-a-racecar-driver"), tann+"autoscaling.knative.dev/window"),
		rej("window below 6s", svcTmplAnn("autoscaling.knative.dev/window", "1s"), tann+"autoscaling.knative.dev/window"),
		rej("window above 1h", svcTmplAnn("autoscaling.knative.dev/window", "365h"), tann+"autoscaling.knative.dev/window"),
		rej("window below second precision", svcTmplAnn("autoscaling.knative.dev/window", "1m9s82ms"), tann+"autoscaling.knative.dev/window"),
		rej("scale-to-zero-pod-retention-period above 1h", svcTmplAnn("autoscaling.knative.dev/scale-to-zero-pod-retention-period", "311m"), tann+"autoscaling.knative.dev/scale-to-zero-pod-retention-period"),
		rej("scale-to-zero-pod-retention-period negative", svcTmplAnn("autoscaling.knative.dev/scale-to-zero-pod-retention-period", "-42s"), tann+"autoscaling.knative.dev/scale-to-zero-pod-retention-period"),
		rej("scale-to-zero-pod-retention-period not a duration", svcTmplAnn("autoscaling.knative.dev/scale-to-zero-pod-retention-period", "twenty-two minutes"), tann+"autoscaling.knative.dev/scale-to-zero-pod-retention-period"),
		rej("scale-down-delay above 1h", svcTmplAnn("autoscaling.knative.dev/scale-down-delay", "311m"), tann+"autoscaling.knative.dev/scale-down-delay"),
		rej("scale-down-delay below second precision", svcTmplAnn("autoscaling.knative.dev/scale-down-delay", "42.5s"), tann+"autoscaling.knative.dev/scale-down-delay"),
		rej("scale-down-delay negative", svcTmplAnn("autoscaling.knative.dev/scale-down-delay", "-42s"), tann+"autoscaling.knative.dev/scale-down-delay"),
		rej("scale-down-delay not a duration", svcTmplAnn("autoscaling.knative.dev/scale-down-delay", "later"), tann+"autoscaling.knative.dev/scale-down-delay"),
		rej("initial-scale zero when the cluster does not allow it", svcTmplAnn("autoscaling.knative.dev/initial-scale", "0"), tann+"autoscaling.knative.dev/initial-scale"),
		rej("initial-scale negative", svcTmplAnn("autoscaling.knative.dev/initial-scale", "-1"), tann+"autoscaling.knative.dev/initial-scale"),
		rej("initial-scale not a number", svcTmplAnn("autoscaling.knative.dev/initial-scale", "invalid"), tann+"autoscaling.knative.dev/initial-scale"),

		// ---- Template annotations: progress deadline, queue sidecar, networking.
		rej("progress-deadline not a duration", svcTmplAnn("serving.knative.dev/progress-deadline", "soon"), tann+"serving.knative.dev/progress-deadline"),
		rej("progress-deadline below second precision", svcTmplAnn("serving.knative.dev/progress-deadline", "1m3.3s"), tann+"serving.knative.dev/progress-deadline"),
		rej("progress-deadline negative", svcTmplAnn("serving.knative.dev/progress-deadline", "-1m3s"), tann+"serving.knative.dev/progress-deadline"),
		// Ferry's own: how ferry up's simulated pods answer.
		rej("simulated-service-time not a duration", svcTmplAnn("serving.ferry.dev/simulated-service-time", "200"), tann+"serving.ferry.dev/simulated-service-time"),
		rej("simulated-capacity 0", svcTmplAnn("serving.ferry.dev/simulated-capacity", "0"), tann+"serving.ferry.dev/simulated-capacity"),
		rej("queue sidecar cpu limit not a quantity", svcTmplAnn("queue.sidecar.serving.knative.dev/cpu-resource-limit", "one"),
			"spec.template.metadata.annotations[queue.sidecar.serving.knative.dev/cpu-resource-limit]|spec.template.metadata.annotations.[queue.sidecar.serving.knative.dev/cpu-resource-limit]|"+tann+"queue.sidecar.serving.knative.dev/cpu-resource-limit"),
		rej("queue sidecar memory request not a quantity", svcTmplAnn("queue.sidecar.serving.knative.dev/memory-resource-request", "lots"),
			"spec.template.metadata.annotations[queue.sidecar.serving.knative.dev/memory-resource-request]|spec.template.metadata.annotations.[queue.sidecar.serving.knative.dev/memory-resource-request]|"+tann+"queue.sidecar.serving.knative.dev/memory-resource-request"),
		rej("queue sidecar resource-percentage above 100", svcTmplAnn("queue.sidecar.serving.knative.dev/resource-percentage", "200"),
			"spec.template.metadata.annotations[queue.sidecar.serving.knative.dev/resource-percentage]|spec.template.metadata.annotations.[queue.sidecar.serving.knative.dev/resource-percentage]|"+tann+"queue.sidecar.serving.knative.dev/resource-percentage"),
		rej("networking visibility annotation on the template", svcTmplAnn("networking.knative.dev/visibility", "cluster-local"),
			"spec.template.metadata.annotations", "networking.knative.dev/visibility"),
		rej("unknown networking annotation on the template", svcTmplAnn("networking.knative.dev/foo", "bar"),
			"spec.template.metadata.annotations", "networking.knative.dev/foo"),

		// ---- Traffic.
		rej("configurationName in a Service's traffic", svcTraffic("[{configurationName: svc, percent: 100}]"), "spec.traffic[0].configurationName"),
		rej("latestRevision true with a revisionName", svcTraffic("[{revisionName: svc-v1, latestRevision: true, percent: 100}]"), "spec.traffic[0].latestRevision"),
		rej("latestRevision false without a revisionName", svcTraffic("[{latestRevision: false, percent: 100}]"), "spec.traffic[0].latestRevision"),
		rej("percent above 100", svcTraffic("[{latestRevision: true, percent: 101}]"), "spec.traffic[0].percent"),
		rej("percent negative", svcTraffic("[{latestRevision: true, percent: -5}, {revisionName: svc-v1, percent: 105}]"), "spec.traffic[0].percent"),
		rej("percents summing to 90", svcTraffic("[{latestRevision: true, percent: 90}]"), "spec.traffic"),
		rej("percents summing to 110", svcTraffic("[{latestRevision: true, percent: 60}, {revisionName: svc-v1, percent: 50}]"), "spec.traffic"),
		rej("duplicate tags", svcTraffic("[{tag: a, latestRevision: true, percent: 50}, {tag: a, revisionName: svc-v1, percent: 50}]"), "spec.traffic[1].tag|spec.traffic[0].tag"),
		rej("tag not a DNS-1035 label", svcTraffic("[{tag: 1Bad_Tag, latestRevision: true, percent: 100}]"), "spec.traffic[0].tag|spec.traffic.tag[0]"),
		rej("tag with dots", svcTraffic("[{tag: a.b, latestRevision: true, percent: 100}]"), "spec.traffic[0].tag|spec.traffic.tag[0]"),
		rej("revisionName not a qualified name", svcTraffic("[{revisionName: a/b/c, percent: 100}]"), "spec.traffic[0].revisionName"),
		rej("url in a Service's traffic", svcTraffic("[{tag: a, latestRevision: true, percent: 100, url: 'http://a.example.com'}]"), "spec.traffic[0].url"),
		rej("route target with both names", routeTraffic("[{revisionName: cfg-1, configurationName: cfg, percent: 100}]"), "spec.traffic[0].configurationName", "spec.traffic[0].revisionName"),
		rej("route target with neither name", routeTraffic("[{percent: 100}]"), "spec.traffic[0].configurationName", "spec.traffic[0].revisionName"),
		rej("route without traffic", object("Route", "{name: rt}", "{}"), "spec.traffic"),
		rej("route percents summing to 30", routeTraffic("[{configurationName: cfg, percent: 30}]"), "spec.traffic"),
		rej("route percent above 100", routeTraffic("[{configurationName: cfg, percent: 120}]"), "spec.traffic[0].percent"),
		rej("route configurationName not a qualified name", routeTraffic("[{configurationName: a/b/c, percent: 100}]"), "spec.traffic[0].configurationName"),
		rej("route latestRevision false on a configuration", routeTraffic("[{configurationName: cfg, latestRevision: false, percent: 100}]"), "spec.traffic[0].latestRevision"),
		rej("route latestRevision true on a revision", routeTraffic("[{revisionName: cfg-1, latestRevision: true, percent: 100}]"), "spec.traffic[0].latestRevision"),
		rej("route duplicate tags", routeTraffic("[{tag: x, configurationName: cfg, percent: 50}, {tag: x, revisionName: cfg-1, percent: 50}]"), "spec.traffic[1].tag|spec.traffic[0].tag"),
		rej("route tag not a DNS-1035 label", routeTraffic("[{tag: Upper, configurationName: cfg, percent: 100}]"), "spec.traffic[0].tag|spec.traffic.tag[0]"),
		rej("route url in spec", routeTraffic("[{tag: x, configurationName: cfg, percent: 100, url: 'http://x.example.com'}]"), "spec.traffic[0].url"),

		// ---- Timeouts and concurrency.
		rej("timeoutSeconds above 600", svcRevSpec("timeoutSeconds: 601"), "spec.template.spec.timeoutSeconds"),
		rej("timeoutSeconds negative", svcRevSpec("timeoutSeconds: -1"), "spec.template.spec.timeoutSeconds"),
		rej("configuration timeoutSeconds above 600", object("Configuration", "{name: cfg}", "{template: {spec: {containers: ["+ctr("")+"], timeoutSeconds: 900}}}"), "spec.template.spec.timeoutSeconds"),
		rej("revision timeoutSeconds above 600", revSpec("timeoutSeconds: 601"), "spec.timeoutSeconds"),
		rej("containerConcurrency negative", svcRevSpec("containerConcurrency: -1"), "spec.template.spec.containerConcurrency"),
		rej("containerConcurrency above 1000", svcRevSpec("containerConcurrency: 1001"), "spec.template.spec.containerConcurrency"),
		rej("revision containerConcurrency above 1000", revSpec("containerConcurrency: 2000"), "spec.containerConcurrency"),
		rej("configuration containerConcurrency negative", object("Configuration", "{name: cfg}", "{template: {spec: {containers: ["+ctr("")+"], containerConcurrency: -2}}}"), "spec.template.spec.containerConcurrency"),

		// ---- PodSpec fields behind feature flags (all off by default).
		rej("affinity with the flag off", svcPodField("affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}}"), pod+"affinity"),
		rej("topologySpreadConstraints with the flag off", svcPodField("topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]"), pod+"topologySpreadConstraints"),
		rej("hostAliases with the flag off", svcPodField("hostAliases: [{ip: 10.0.0.1, hostnames: [db]}]"), pod+"hostAliases"),
		rej("nodeSelector with the flag off", svcPodField("nodeSelector: {disk: ssd}"), pod+"nodeSelector"),
		rej("runtimeClassName with the flag off", svcPodField("runtimeClassName: gvisor"), pod+"runtimeClassName"),
		rej("tolerations with the flag off", svcPodField("tolerations: [{key: dedicated, operator: Equal, value: ml, effect: NoSchedule}]"), pod+"tolerations"),
		rej("pod securityContext with the flag off", svcPodField("securityContext: {runAsUser: 1000}"), pod+"securityContext"),
		rej("shareProcessNamespace with the flag off", svcPodField("shareProcessNamespace: true"), pod+"shareProcessNamespace"),
		rej("priorityClassName with the flag off", svcPodField("priorityClassName: high"), pod+"priorityClassName"),
		rej("schedulerName with the flag off", svcPodField("schedulerName: custom"), pod+"schedulerName"),
		rej("dnsPolicy with the flag off", svcPodField("dnsPolicy: ClusterFirst"), pod+"dnsPolicy"),
		rej("dnsConfig with the flag off", svcPodField("dnsConfig: {nameservers: [1.1.1.1]}"), pod+"dnsConfig"),
		rej("hostIPC with the flag off", svcPodField("hostIPC: true"), pod+"hostIPC"),
		rej("hostPID with the flag off", svcPodField("hostPID: true"), pod+"hostPID"),
		rej("hostNetwork with the flag off", svcPodField("hostNetwork: true"), pod+"hostNetwork"),
		rej("initContainers with the flag off", svcPodField("initContainers: [{name: init, image: example.com/init}]"), pod+"initContainers|init-containers is off"),
		rej("env fieldRef with the flag off", svcCtr("env: [{name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}]"), c0+"env[0].valueFrom.fieldRef"),
		rej("env resourceFieldRef with the flag off", svcCtr("env: [{name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory}}}]"), c0+"env[0].valueFrom.resourceFieldRef"),
		rej("capabilities.add with the flag off", svcCtr("securityContext: {capabilities: {add: [NET_ADMIN]}}"), c0+"securityContext.capabilities.add"),
		rej("mountPropagation with the flag off", svcVolume("emptyDir: {}", "mountPropagation: HostToContainer"), c0+"volumeMounts[0].mountPropagation"),
		rej("hostPath volume with the flag off", svcVolume("hostPath: {path: /var/log}", "readOnly: true"), pod+"volumes[0].hostPath"),
		rej("csi volume with the flag off", svcVolume("csi: {driver: secrets.csi.k8s.io}", "readOnly: true"), pod+"volumes[0].csi"),
		rej("ephemeral volume with the flag off", svcVolume("ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}}", ""), pod+"volumes[0].ephemeral"),
		rej("image volume with the flag off", svcVolume("image: {reference: example.com/data}", "readOnly: true"), pod+"volumes[0].image"),
		rej("persistentVolumeClaim with the flag off", svcVolume("persistentVolumeClaim: {claimName: data, readOnly: true}", "readOnly: true"), pod+"volumes[0].persistentVolumeClaim"),

		// ---- PodSpec fields never allowed.
		rej("restartPolicy", svcPodField("restartPolicy: Always"), pod+"restartPolicy"),
		rej("terminationGracePeriodSeconds", svcPodField("terminationGracePeriodSeconds: 5"), pod+"terminationGracePeriodSeconds"),
		rej("activeDeadlineSeconds", svcPodField("activeDeadlineSeconds: 60"), pod+"activeDeadlineSeconds"),
		rej("nodeName", svcPodField("nodeName: node-1"), pod+"nodeName"),
		rej("hostname", svcPodField("hostname: web"), pod+"hostname"),
		rej("subdomain", svcPodField("subdomain: web"), pod+"subdomain"),
		rej("priority", svcPodField("priority: 1000"), pod+"priority"),
		rej("readinessGates", svcPodField("readinessGates: [{conditionType: example.com/ready}]"), pod+"readinessGates"),
		rej("automountServiceAccountToken true", svcPodField("automountServiceAccountToken: true"), pod+"automountServiceAccountToken"),
		rej("preemptionPolicy", svcPodField("preemptionPolicy: Never"), pod+"preemptionPolicy"),
		rej("setHostnameAsFQDN", svcPodField("setHostnameAsFQDN: true"), pod+"setHostnameAsFQDN"),
		rej("os", svcPodField("os: {name: linux}"), pod+"os"),
		rej("hostUsers", svcPodField("hostUsers: false"), pod+"hostUsers"),
		rej("schedulingGates", svcPodField("schedulingGates: [{name: example.com/wait}]"), pod+"schedulingGates"),
		rej("deprecated serviceAccount", svcPodField("serviceAccount: builder"), pod+"serviceAccount"),
		rej("serviceAccountName not a DNS subdomain", svcPodField("serviceAccountName: foo@bar.baz"), pod+"serviceAccountName"),
		rej("no containers", svcPod("{containers: []}"), pod+"containers"),

		// ---- Container fields never allowed.
		rej("container lifecycle", svcCtr("lifecycle: {preStop: {exec: {command: [sleep, '1']}}}"), c0+"lifecycle"),
		rej("container stdin", svcCtr("stdin: true"), c0+"stdin"),
		rej("container stdinOnce", svcCtr("stdinOnce: true"), c0+"stdinOnce"),
		rej("container tty", svcCtr("tty: true"), c0+"tty"),
		rej("container volumeDevices", svcCtr("volumeDevices: [{name: disk, devicePath: /dev/xvda}]"), c0+"volumeDevices"),
		rej("container resizePolicy", svcCtr("resizePolicy: [{resourceName: cpu, restartPolicy: NotRequired}]"), c0+"resizePolicy"),
		rej("container restartPolicy", svcCtr("restartPolicy: Always"), c0+"restartPolicy"),
		rej("container resources.claims", svcCtr("resources: {claims: [{name: gpu}]}"), c0+"resources.claims"),
		rej("securityContext privileged", svcCtr("securityContext: {privileged: true}"), c0+"securityContext.privileged"),
		rej("securityContext seLinuxOptions", svcCtr("securityContext: {seLinuxOptions: {level: 's0:c123,c456'}}"), c0+"securityContext.seLinuxOptions"),
		rej("securityContext procMount", svcCtr("securityContext: {procMount: Unmasked}"), c0+"securityContext.procMount"),
		rej("securityContext windowsOptions", svcCtr("securityContext: {windowsOptions: {runAsUserName: admin}}"), c0+"securityContext.windowsOptions"),
		rej("securityContext runAsUser negative", svcCtr("securityContext: {runAsUser: -10}"), c0+"securityContext.runAsUser"),
		rej("securityContext runAsUser above int32", svcCtr("securityContext: {runAsUser: 2147483648}"), c0+"securityContext.runAsUser"),
		rej("securityContext runAsGroup negative", svcCtr("securityContext: {runAsGroup: -10}"), c0+"securityContext.runAsGroup"),
		rej("volumeMount subPathExpr", svcVolume("emptyDir: {}", "subPathExpr: $(POD)"), c0+"volumeMounts[0].subPathExpr"),
		rej("volumeMount recursiveReadOnly", svcVolume("secret: {secretName: s}", "readOnly: true, recursiveReadOnly: Enabled"), c0+"volumeMounts[0].recursiveReadOnly"),
		rej("reserved container name queue-proxy", svcCtr("name: queue-proxy"), c0+"name"),
		rej("terminationMessagePolicy unknown", svcCtr("terminationMessagePolicy: Never"), c0+"terminationMessagePolicy"),

		// ---- Ports.
		rej("two ports on one container", svcCtr("ports: [{containerPort: 8080}, {containerPort: 8081}]"), pod+"containers[*].ports|"+c0+"ports"),
		rej("two named ports on one container", svcCtr("ports: [{name: h2c, containerPort: 8080}, {name: http1, containerPort: 8081}]"), pod+"containers[*].ports|"+c0+"ports"),
		rej("a port on each of two containers", svcPod("{containers: ["+ctr("name: a, ports: [{containerPort: 8080}]")+", {name: b, image: example.com/second, ports: [{containerPort: 9000}]}]}"), pod+"containers[*].ports|"+c1+"ports"),
		rej("no port among two containers", svcPod("{containers: ["+ctr("name: a")+", {name: b, image: example.com/second}]}"), pod+"containers[*].ports|"+c0+"ports|"+c1+"ports"),
		rej("reserved port 8012", svcCtr("ports: [{containerPort: 8012}]"), c0+"ports.containerPort|"+c0+"ports[0].containerPort"),
		rej("reserved port 8013", svcCtr("ports: [{containerPort: 8013}]"), c0+"ports.containerPort|"+c0+"ports[0].containerPort"),
		rej("reserved port 8022", svcCtr("ports: [{containerPort: 8022}]"), c0+"ports.containerPort|"+c0+"ports[0].containerPort"),
		rej("reserved port 9090", svcCtr("ports: [{containerPort: 9090}]"), c0+"ports.containerPort|"+c0+"ports[0].containerPort"),
		rej("reserved port 9091", svcCtr("ports: [{containerPort: 9091}]"), c0+"ports.containerPort|"+c0+"ports[0].containerPort"),
		rej("reserved port 8008 (profiling)", svcCtr("ports: [{containerPort: 8008}]"), c0+"ports.containerPort|"+c0+"ports[0].containerPort"),
		rej("port above 65535", svcCtr("ports: [{containerPort: 65536}]"), c0+"ports.containerPort|"+c0+"ports[0].containerPort"),
		rej("port protocol UDP", svcCtr("ports: [{containerPort: 8080, protocol: UDP}]"), c0+"ports.protocol|"+c0+"ports[0].protocol"),
		rej("port protocol SCTP", svcCtr("ports: [{containerPort: 8080, protocol: SCTP}]"), c0+"ports.protocol|"+c0+"ports[0].protocol"),
		rej("port name not h2c or http1", svcCtr("ports: [{name: grpc, containerPort: 8080}]"), c0+"ports"),
		rej("hostPort", svcCtr("ports: [{containerPort: 8080, hostPort: 80}]"), c0+"ports.hostPort|"+c0+"ports[0].hostPort"),
		rej("hostIP", svcCtr("ports: [{containerPort: 8080, hostIP: 10.0.0.1}]"), c0+"ports.hostIP|"+c0+"ports[0].hostIP"),
		rej("revision with two ports", object("Revision", "{name: rev}", "{containers: ["+ctr("ports: [{containerPort: 8080}, {containerPort: 8081}]")+"]}"), "spec.containers[*].ports|spec.containers[0].ports"),

		// ---- Environment.
		rej("reserved env PORT", svcCtr("env: [{name: PORT, value: '9000'}]"), c0+"env[0].name"),
		rej("reserved env K_SERVICE", svcCtr("env: [{name: K_SERVICE, value: x}]"), c0+"env[0].name"),
		rej("reserved env K_CONFIGURATION", svcCtr("env: [{name: K_CONFIGURATION, value: x}]"), c0+"env[0].name"),
		rej("reserved env K_REVISION", svcCtr("env: [{name: OK, value: 'y'}, {name: K_REVISION, value: x}]"), c0+"env[1].name"),
		rej("reserved env K_SERVICE on a sidecar", svcSidecar("env: [{name: K_SERVICE, value: x}]"), c1+"env[0].name"),
		rej("reserved env PORT on a revision", object("Revision", "{name: rev}", "{containers: ["+ctr("env: [{name: PORT, value: '1'}]")+"]}"), "spec.containers[0].env[0].name"),
		rej("empty env name", svcCtr("env: [{name: '', value: x}]"), c0+"env[0].name"),
		rej("envFrom with neither source", svcCtr("envFrom: [{prefix: X_}]"), c0+"envFrom.configMapRef|"+c0+"envFrom[0].configMapRef"),
		rej("envFrom with both sources", svcCtr("envFrom: [{configMapRef: {name: a}, secretRef: {name: b}}]"), c0+"envFrom.configMapRef|"+c0+"envFrom[0].configMapRef"),

		// ---- Images.
		rej("image with spaces", svcPod("{containers: [{image: 'example.com/my app'}]}"), c0+"image"),
		rej("image with capitals in the repository", svcPod("{containers: [{image: example.com/MyApp}]}"), c0+"image"),
		rej("image with two tags", svcPod("{containers: [{image: 'example.com/app:v1:v2'}]}"), c0+"image"),
		rej("image with a bad digest", svcPod("{containers: [{image: 'example.com/app@sha256:1234'}]}"), c0+"image"),
		rej("image with a bad tag", svcPod("{containers: [{image: 'example.com/app:bad/tag'}]}"), c0+"image"),
		rej("empty image", svcPod("{containers: [{name: app, image: ''}]}"), c0+"image"),

		// ---- Probes.
		rej("liveness probe with two handlers", svcCtr("livenessProbe: {httpGet: {path: /, port: 8080}, tcpSocket: {port: 8080}}"), c0+"livenessProbe.httpGet"),
		rej("readiness probe with three handlers", svcCtr("readinessProbe: {httpGet: {path: /, port: 8080}, tcpSocket: {port: 8080}, exec: {command: ['true']}}"), c0+"readinessProbe.exec"),
		rej("startup probe with exec and grpc", svcCtr("startupProbe: {exec: {command: ['true']}, grpc: {port: 8080}}"), c0+"startupProbe.exec"),
		rej("liveness probe without a handler", svcCtr("livenessProbe: {initialDelaySeconds: 3}"), c0+"livenessProbe.httpGet"),
		rej("startup probe without a handler", svcCtr("startupProbe: {periodSeconds: 3}"), c0+"startupProbe.httpGet"),
		rej("readiness tcpSocket on another named port", svcCtr("ports: [{name: h2c, containerPort: 8080}], readinessProbe: {tcpSocket: {port: imap}}"), c0+"readinessProbe.tcpSocket.port"),
		rej("liveness httpGet on another named port", svcCtr("livenessProbe: {httpGet: {port: admin}}"), c0+"livenessProbe.httpGet.port"),
		rej("liveness tcpSocket on another named port", svcCtr("ports: [{name: http1, containerPort: 8080}], livenessProbe: {tcpSocket: {port: metrics}}"), c0+"livenessProbe.tcpSocket.port"),
		rej("readiness periodSeconds negative", svcCtr("readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: -1}"), c0+"readinessProbe.periodSeconds"),
		rej("readiness initialDelaySeconds negative", svcCtr("readinessProbe: {tcpSocket: {port: 8080}, initialDelaySeconds: -1}"), c0+"readinessProbe.initialDelaySeconds"),
		rej("readiness successThreshold negative", svcCtr("readinessProbe: {tcpSocket: {port: 8080}, successThreshold: -1}"), c0+"readinessProbe.successThreshold"),
		rej("readiness failureThreshold with periodSeconds 0", svcCtr("readinessProbe: {tcpSocket: {port: 8080}, failureThreshold: 3}"), c0+"readinessProbe.failureThreshold"),
		rej("readiness timeoutSeconds with periodSeconds 0", svcCtr("readinessProbe: {httpGet: {path: /, port: 8080}, timeoutSeconds: 5}"), c0+"readinessProbe.timeoutSeconds"),
		rej("readiness timeoutSeconds negative", svcCtr("readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 5, timeoutSeconds: -1}"), c0+"readinessProbe.timeoutSeconds"),
		rej("readiness failureThreshold negative", svcCtr("readinessProbe: {tcpSocket: {port: 8080}, periodSeconds: 5, failureThreshold: -1}"), c0+"readinessProbe.failureThreshold"),
		rej("readiness probe on a sidecar", svcSidecar("readinessProbe: {exec: {command: ['true']}}"), c1+"readinessProbe"),
		rej("liveness probe on a sidecar", svcSidecar("livenessProbe: {tcpSocket: {port: 9000}}"), c1+"livenessProbe"),
		rej("startup probe on a sidecar", svcSidecar("startupProbe: {exec: {command: ['true']}}"), c1+"startupProbe"),

		// ---- Volumes and mounts.
		rej("volume not mounted", svcPod("{containers: ["+ctr("")+"], volumes: [{name: v, secret: {secretName: s}}]}"), pod+"volumes[0].name"),
		rej("second volume not mounted", svcPod("{containers: ["+ctr("volumeMounts: [{name: a, mountPath: /a, readOnly: true}]")+"], volumes: [{name: a, configMap: {name: a}}, {name: b, configMap: {name: b}}]}"), pod+"volumes[1].name"),
		rej("duplicate volume names", svcPod("{containers: ["+ctr("volumeMounts: [{name: v, mountPath: /v, readOnly: true}]")+"], volumes: [{name: v, secret: {secretName: s}}, {name: v, configMap: {name: c}}]}"), pod+"volumes[1]"),
		rej("mount of a volume that does not exist", svcCtr("volumeMounts: [{name: ghost, mountPath: /ghost, readOnly: true}]"), c0+"volumeMounts[0].name"),
		rej("mountPath empty", svcPod("{containers: ["+ctr("volumeMounts: [{name: v, mountPath: '', readOnly: true}]")+"], volumes: [{name: v, secret: {secretName: s}}]}"), c0+"volumeMounts[0].mountPath"),
		rej("mountPath /", svcPod("{containers: ["+ctr("volumeMounts: [{name: v, mountPath: /, readOnly: true}]")+"], volumes: [{name: v, secret: {secretName: s}}]}"), c0+"volumeMounts[0].mountPath"),
		rej("mountPath /dev", svcPod("{containers: ["+ctr("volumeMounts: [{name: v, mountPath: /dev, readOnly: true}]")+"], volumes: [{name: v, secret: {secretName: s}}]}"), c0+"volumeMounts[0].mountPath"),
		rej("mountPath /dev/log", svcPod("{containers: ["+ctr("volumeMounts: [{name: v, mountPath: /dev/log/, readOnly: true}]")+"], volumes: [{name: v, secret: {secretName: s}}]}"), c0+"volumeMounts[0].mountPath"),
		rej("mountPath relative", svcPod("{containers: ["+ctr("volumeMounts: [{name: v, mountPath: not/absolute, readOnly: true}]")+"], volumes: [{name: v, secret: {secretName: s}}]}"), c0+"volumeMounts[0].mountPath"),
		rej("mountPath used twice", svcPod("{containers: ["+ctr("volumeMounts: [{name: a, mountPath: /m, readOnly: true}, {name: b, mountPath: /m/, readOnly: true}]")+"], volumes: [{name: a, secret: {secretName: a}}, {name: b, secret: {secretName: b}}]}"), c0+"volumeMounts[1]"),
		rej("volume with two sources", svcVolume("secret: {secretName: s}, configMap: {name: c}", "readOnly: true"), pod+"volumes[0].configMap|"+pod+"volumes[0].secret"),
		rej("volume without a source", svcVolume("", "readOnly: true"), pod+"volumes[0].secret|"+pod+"volumes[0].configMap"),
		rej("volume name not a DNS-1123 label", svcPod("{containers: ["+ctr("volumeMounts: [{name: 'a_b', mountPath: /v, readOnly: true}]")+"], volumes: [{name: 'a_b', secret: {secretName: s}}]}"), pod+"volumes[0].name"),
		rej("nfs volume", svcVolume("nfs: {server: nfs.example.com, path: /exports}", "readOnly: true"), pod+"volumes[0].nfs"),
		rej("gitRepo volume", svcVolume("gitRepo: {repository: 'https://example.com/r.git'}", "readOnly: true"), pod+"volumes[0].gitRepo"),
		rej("secret items without key and path", svcVolume("secret: {secretName: s, items: [{key: '', path: ''}]}", "readOnly: true"), pod+"volumes[0].items[0].key|"+pod+"volumes[0].secret.items[0].key"),
		rej("configMap items without path", svcVolume("configMap: {name: c, items: [{key: k, path: ''}]}", "readOnly: true"), pod+"volumes[0].items[0].path|"+pod+"volumes[0].configMap.items[0].path"),
		rej("projected source with two kinds", svcVolume("projected: {sources: [{secret: {name: s}, configMap: {name: c}}]}", "readOnly: true"), pod+"volumes[0].projected[0].configMap|"+pod+"volumes[0].projected.sources[0].configMap"),
		rej("projected source empty", svcVolume("projected: {sources: [{}]}", "readOnly: true"), pod+"volumes[0].projected[0].configMap|"+pod+"volumes[0].projected.sources[0].configMap"),
		rej("projected secret without a name", svcVolume("projected: {sources: [{secret: {items: [{key: k, path: p}]}}]}", "readOnly: true"), pod+"volumes[0].projected[0].secret.name|"+pod+"volumes[0].projected.sources[0].secret.name"),
		rej("projected serviceAccountToken without a path", svcVolume("projected: {sources: [{serviceAccountToken: {path: '', audience: api}}]}", "readOnly: true"), pod+"volumes[0].projected[0].serviceAccountToken.path|"+pod+"volumes[0].projected.sources[0].serviceAccountToken.path"),
		rej("projected downwardAPI item without a ref", svcVolume("projected: {sources: [{downwardAPI: {items: [{path: labels}]}}]}", "readOnly: true"), pod+"volumes[0].projected[0].downwardAPI.items[0].fieldRef|"+pod+"volumes[0].projected.sources[0].downwardAPI.items[0].fieldRef"),
		rej("emptyDir medium not Memory", svcVolume("emptyDir: {medium: HugePages}", ""), pod+"volumes[0].emptyDir.medium"),
		rej("emptyDir sizeLimit negative", svcVolume("emptyDir: {sizeLimit: '-1'}", ""), pod+"volumes[0].emptyDir.sizeLimit"),

		// ---- Pod validation. For a dry-run request Knative's webhook also dry-runs the
		// Pod that the Revision would make, so Kubernetes' own Pod rules apply; the
		// field is named in the Pod's terms (spec.containers[0]...), which Ferry's own
		// path (spec.template.spec.containers[0]...) contains.
		rej("container name not a DNS-1123 label (Pod validation)", svcCtr("name: Bad_Name"), "spec.containers[0].name"),
		rej("cpu request above its limit (Pod validation)", svcCtr("resources: {requests: {cpu: '2'}, limits: {cpu: '1'}}"), "spec.containers[0].resources.requests"),
		rej("env name with '=' (Pod validation)", svcCtr("env: [{name: 'A=B', value: x}]"), "spec.containers[0].env[0].name"),
		rej("absolute subPath (Pod validation)", svcVolume("secret: {secretName: s}", "readOnly: true, subPath: /abs"), "spec.containers[0].volumeMounts[0].subPath|spec.containers[0].volumeMounts.subPath"),

		// ---- Multi-container.
		rej("duplicate container names", svcPod("{containers: ["+ctr("name: same, ports: [{containerPort: 8080}]")+", {name: same, image: example.com/side}]}"), c1+"name"),
		rej("sidecar with a lifecycle", svcSidecar("lifecycle: {preStop: {exec: {command: [sleep, '1']}}}"), c1+"lifecycle"),
		rej("sidecar with a bad image", svcPod("{containers: ["+ctr("name: app, ports: [{containerPort: 8080}]")+", {name: side, image: 'Not An Image'}]}"), c1+"image"),
	}

	// Accepted with the default configuration.
	cases = append(cases,
		acc("minimal service", svcCtr("")),
		acc("Knative-defaulted service", `apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: hello
  annotations:
    serving.knative.dev/creator: admin
    serving.knative.dev/lastModifier: admin
spec:
  template:
    metadata:
      creationTimestamp: null
    spec:
      containerConcurrency: 0
      enableServiceLinks: false
      timeoutSeconds: 300
      containers:
      - name: user-container
        image: example.com/hello
        ports:
        - containerPort: 8080
          protocol: TCP
        readinessProbe:
          successThreshold: 1
          tcpSocket:
            port: 0
        resources: {}
  traffic:
  - latestRevision: true
    percent: 100
`),
		acc("template generateName", svcTmplMeta("{generateName: svc-}")),
		acc("service generateName", svcMeta("{generateName: gen-}")),
		acc("BYO revision name with pinned traffic", object("Service", "{name: svc}", "{template: {metadata: {name: svc-v2}, spec: {containers: ["+ctr("")+"]}}, traffic: [{revisionName: svc-v1, percent: 50}, {latestRevision: true, percent: 50, tag: next}]}")),
		acc("configuration BYO name", cfgTmplMeta("{name: cfg-blue}")),
		acc("multi-container with one port", svcSidecar("env: [{name: PORT, value: '9000'}]")),
		acc("secret, configMap and projected volumes", svcPod("{containers: ["+ctr("volumeMounts: [{name: s, mountPath: /s, readOnly: true}, {name: c, mountPath: /c, readOnly: true, subPath: app.yaml}, {name: p, mountPath: /p, readOnly: true}]")+"], volumes: [{name: s, secret: {secretName: s, items: [{key: k, path: p}]}}, {name: c, configMap: {name: c, optional: true}}, {name: p, projected: {sources: [{secret: {name: s}}, {configMap: {name: c}}, {serviceAccountToken: {path: token, audience: api, expirationSeconds: 3600}}, {downwardAPI: {items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]}}]}}]}")),
		acc("secret mount without readOnly (defaulted)", svcVolume("secret: {secretName: s}", "subPath: key")),
		acc("emptyDir volume mounted read-write", svcVolume("emptyDir: {medium: Memory, sizeLimit: 64Mi}", "readOnly: false")),
		acc("valid autoscaling annotations on the template", svcTmplAnn(
			"autoscaling.knative.dev/class", "kpa.autoscaling.knative.dev",
			"autoscaling.knative.dev/metric", "rps",
			"autoscaling.knative.dev/min-scale", "1",
			"autoscaling.knative.dev/max-scale", "5",
			"autoscaling.knative.dev/activation-scale", "2",
			"autoscaling.knative.dev/initial-scale", "2",
			"autoscaling.knative.dev/target", "11",
			"autoscaling.knative.dev/target-utilization-percentage", "70",
			"autoscaling.knative.dev/target-burst-capacity", "-1",
			"autoscaling.knative.dev/window", "1984s",
			"autoscaling.knative.dev/panic-window-percentage", "75",
			"autoscaling.knative.dev/panic-threshold-percentage", "125",
			"autoscaling.knative.dev/scale-down-delay", "0",
			"autoscaling.knative.dev/scale-to-zero-pod-retention-period", "21m31s",
			"autoscaling.knative.dev/metric-aggregation-algorithm", "weighted-exponential",
		)),
		acc("HPA class with metric cpu", svcTmplAnn("autoscaling.knative.dev/class", "hpa.autoscaling.knative.dev", "autoscaling.knative.dev/metric", "cpu", "autoscaling.knative.dev/target", "80")),
		acc("custom autoscaler class with any values", svcTmplAnn("autoscaling.knative.dev/class", "example.com/custom", "autoscaling.knative.dev/metric", "queue-depth")),
		acc("max-scale 0 (unlimited) and min-scale 0", svcTmplAnn("autoscaling.knative.dev/min-scale", "0", "autoscaling.knative.dev/max-scale", "0")),
		acc("template annotations for progress-deadline, queue sidecar and ingress class", svcTmplAnn(
			"serving.knative.dev/progress-deadline", "90s",
			"queue.sidecar.serving.knative.dev/cpu-resource-request", "50m",
			"queue.sidecar.serving.knative.dev/memory-resource-limit", "200Mi",
			"networking.knative.dev/ingress.class", "kourier.ingress.networking.knative.dev",
		)),
		acc("simulated service time and capacity", svcTmplAnn("serving.ferry.dev/simulated-service-time", "250ms", "serving.ferry.dev/simulated-capacity", "4")),
		acc("service annotations and labels Knative allows", svcMeta("{name: svc, annotations: {serving.knative.dev/rollout-duration: 380s, serving.knative.dev/foo: bar, example.com/x: 'y'}, labels: {networking.knative.dev/visibility: cluster-local, serving.knative.dev/foo: bar}}")),
		acc("route with split, tags and rollout-duration", object("Route", "{name: rt, annotations: {serving.knative.dev/rollout-duration: 200s}}", "{traffic: [{configurationName: cfg, percent: 90, tag: current}, {revisionName: cfg-00001, percent: 10, tag: old}, {revisionName: cfg-00002, tag: candidate}]}")),
		acc("probes Knative accepts", svcCtr("ports: [{name: h2c, containerPort: 8080}], readinessProbe: {httpGet: {path: /ready, port: 0}, periodSeconds: 5, timeoutSeconds: 2, failureThreshold: 2, successThreshold: 1}, livenessProbe: {tcpSocket: {port: h2c}, initialDelaySeconds: 3}, startupProbe: {exec: {command: [cat, /tmp/ok]}, failureThreshold: 30, periodSeconds: 1}")),
		acc("probes on another numeric port and grpc", svcCtr("ports: [{containerPort: 8080}], readinessProbe: {grpc: {port: 8080, service: health}}, livenessProbe: {httpGet: {path: /live, port: 9001}}")),
		acc("readiness probe without a handler (defaulted)", svcCtr("readinessProbe: {successThreshold: 0}")),
		acc("readiness httpGet without a port (Knative docs)", svcCtr("readinessProbe: {httpGet: {path: /healthz}}")),
		acc("liveness tcpSocket without a port", svcCtr("livenessProbe: {tcpSocket: {}, periodSeconds: 10}")),
		acc("port named http1 with protocol TCP", svcCtr("ports: [{name: http1, containerPort: 9000, protocol: TCP}]")),
		acc("secure container securityContext", svcCtr("securityContext: {runAsNonRoot: true, runAsUser: 1000, runAsGroup: 1000, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, privileged: false, capabilities: {drop: [ALL]}, seccompProfile: {type: RuntimeDefault}}")),
		acc("pod fields always allowed", svcPod("{serviceAccountName: builder, automountServiceAccountToken: false, enableServiceLinks: true, imagePullSecrets: [{name: regcred}], containers: ["+ctr("name: app, command: [/app], args: [--v], workingDir: /srv, imagePullPolicy: IfNotPresent, terminationMessagePath: /dev/termination-log, terminationMessagePolicy: FallbackToLogsOnError, resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi}}")+"]}")),
		acc("env from secrets and configMaps", svcCtr("env: [{name: A, value: b}, {name: S, valueFrom: {secretKeyRef: {name: s, key: k, optional: true}}}, {name: C, valueFrom: {configMapKeyRef: {name: c, key: k}}}], envFrom: [{prefix: X_, configMapRef: {name: c}}, {secretRef: {name: s, optional: true}}]")),
		acc("image references Knative parses", svcPod("{containers: [{name: a, image: 'registry.example.com:5000/team/app:v1.2.3', ports: [{containerPort: 8080}]}, {name: b, image: 'example.com/side@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef'}, {name: c, image: busybox}]}")),
		acc("timeoutSeconds 600 and containerConcurrency 1000", svcRevSpec("timeoutSeconds: 600, containerConcurrency: 1000")),
		acc("timeoutSeconds 0 (defaulted)", svcRevSpec("timeoutSeconds: 0")),
		acc("configuration owned by its service", cfgMeta("{name: cfg, labels: {serving.knative.dev/service: svc}, ownerReferences: ["+owner("Service", "svc")+"]}")),
		acc("route owned by its service", routeMeta("{name: rt, labels: {serving.knative.dev/service: svc}, ownerReferences: ["+owner("Service", "svc")+"]}")),
		acc("revision owned by its configuration", revMeta("{name: cfg-00001, labels: {serving.knative.dev/configuration: cfg, serving.knative.dev/configurationGeneration: '1'}, ownerReferences: ["+owner("Configuration", "cfg")+"], annotations: {autoscaling.knative.dev/min-scale: '1'}}")),
		acc("minimal revision", revMeta("{name: rev}")),
		acc("revision with a service label and no owner (only the configuration label is checked)", revMeta("{name: rev, labels: {serving.knative.dev/service: svc}}")),
		acc("cluster-local route", routeMeta("{name: rt, labels: {networking.knative.dev/visibility: cluster-local}}")),
		acc("sidecar without probes beside a probed serving container", svcPod("{containers: ["+ctr("name: app, ports: [{containerPort: 8080}], readinessProbe: {httpGet: {path: /}}")+", {name: side, image: example.com/side, env: [{name: K, value: v}]}]}")),
	)
	return append(cases, domainMappingCases()...)
}

// updateCases need an existing object: they create it for real, then dry-run an
// update. Object names are unique in the table.
func updateCases() []admissionCase {
	byoSvc := object("Service", "{name: %s, annotations: {example.com/note: x}}", "{template: {metadata: {name: %s-v1}, spec: {containers: [{image: example.com/app:v1}]}}}")
	byoCfg := object("Configuration", "{name: %s, annotations: {example.com/note: x}}", "{template: {metadata: {name: %s-v1}, spec: {containers: [{image: example.com/app:v1}]}}}")
	plainSvc := object("Service", "{name: %s, annotations: {example.com/note: x}}", "{template: {spec: {containers: [{image: example.com/app:v1}]}}}")
	plainCfg := object("Configuration", "{name: %s, annotations: {example.com/note: x}}", "{template: {spec: {containers: [{image: example.com/app:v1}]}}}")
	plainRoute := object("Route", "{name: %s, annotations: {example.com/note: x}}", "{traffic: [{configurationName: cfg, percent: 100}]}")
	plainRev := object("Revision", "{name: %s, annotations: {example.com/note: x}}", "{containers: [{image: example.com/app:v1}], containerConcurrency: 10}")
	f := func(tmpl, name string) string { return strings.ReplaceAll(tmpl, "%s", name) }
	upd := func(name, obj string, update func(*unstructured.Unstructured), reject bool, want ...string) admissionCase {
		return admissionCase{name: name, obj: obj, update: update, reject: reject, want: want}
	}
	// ownedUpd: Knative checks creator and lastModifier only on objects that no
	// Service owns.
	ownedUpd := func(name, kind, objName string) admissionCase {
		spec := "{template: {spec: {containers: [{image: example.com/app:v1}]}}}"
		if kind == "Route" {
			spec = "{traffic: [{configurationName: cfg, percent: 100}]}"
		}
		return admissionCase{
			name:   name,
			owner:  f(plainSvc, objName+"-svc"),
			obj:    object(kind, "{name: "+objName+", annotations: {example.com/note: x}, labels: {serving.knative.dev/service: "+objName+"-svc}, ownerReferences: ["+owner("Service", objName+"-svc")+"]}", spec),
			update: both(setAnnotation("serving.knative.dev/creator", "mallory"), setAnnotation("serving.knative.dev/lastModifier", "mallory")),
		}
	}
	return append([]admissionCase{
		upd("service template changed without a new BYO name", f(byoSvc, "byo-a"), setImage("example.com/app:v2", templateContainers...), true, "spec.template.metadata.name"),
		upd("service template annotations changed without a new BYO name", f(byoSvc, "byo-b"), setField(map[string]any{"autoscaling.knative.dev/min-scale": "1"}, "spec", "template", "metadata", "annotations"), true, "spec.template.metadata.name"),
		upd("service template timeout changed without a new BYO name", f(byoSvc, "byo-c"), setField(int64(100), "spec", "template", "spec", "timeoutSeconds"), true, "spec.template.metadata.name"),
		upd("configuration template changed without a new BYO name", f(byoCfg, "byo-d"), setImage("example.com/app:v2", templateContainers...), true, "spec.template.metadata.name"),
		upd("service creator changed", f(plainSvc, "creator-a"), setAnnotation("serving.knative.dev/creator", "mallory"), true, "metadata.annotations.serving.knative.dev/creator"),
		upd("configuration creator changed", f(plainCfg, "creator-b"), setAnnotation("serving.knative.dev/creator", "mallory"), true, "metadata.annotations.serving.knative.dev/creator"),
		upd("route creator changed", f(plainRoute, "creator-c"), setAnnotation("serving.knative.dev/creator", "mallory"), true, "metadata.annotations.serving.knative.dev/creator"),
		upd("service lastModifier changed without a spec change", f(plainSvc, "modifier-a"), setAnnotation("serving.knative.dev/lastModifier", "mallory"), true, "metadata.annotations.serving.knative.dev/lastModifier"),
		upd("configuration lastModifier changed without a spec change", f(plainCfg, "modifier-d"), setAnnotation("serving.knative.dev/lastModifier", "mallory"), true, "metadata.annotations.serving.knative.dev/lastModifier"),
		upd("route lastModifier changed without a spec change", f(plainRoute, "modifier-b"), setAnnotation("serving.knative.dev/lastModifier", "mallory"), true, "metadata.annotations.serving.knative.dev/lastModifier"),
		upd("revision image changed", f(plainRev, "frozen-a"), setImage("example.com/app:v2", "spec", "containers"), true, "spec", "mmutable"),
		upd("revision containerConcurrency changed", f(plainRev, "frozen-b"), setField(int64(20), "spec", "containerConcurrency"), true, "spec", "mmutable"),
		upd("revision env added", f(plainRev, "frozen-c"), func(u *unstructured.Unstructured) {
			cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "containers")
			cs[0].(map[string]any)["env"] = []any{map[string]any{"name": "A", "value": "b"}}
			_ = unstructured.SetNestedSlice(u.Object, cs, "spec", "containers")
		}, true, "spec", "mmutable"),

		upd("service template changed with a new BYO name", f(byoSvc, "byo-e"), both(setImage("example.com/app:v2", templateContainers...), setField("byo-e-v2", "spec", "template", "metadata", "name")), false),
		upd("service traffic changed, BYO name kept", f(byoSvc, "byo-f"), setField([]any{map[string]any{"revisionName": "byo-f-v1", "percent": int64(100)}}, "spec", "traffic"), false),
		upd("service labels changed, BYO name kept", f(byoSvc, "byo-g"), setLabel("team", "a"), false),
		upd("service spec and lastModifier changed", f(plainSvc, "modifier-c"), both(setImage("example.com/app:v3", templateContainers...), setAnnotation("serving.knative.dev/lastModifier", "mallory")), false),
		upd("revision labels changed", f(plainRev, "frozen-d"), setLabel("serving.knative.dev/routingState", "active"), false),
		ownedUpd("creator of a configuration owned by a service may change", "Configuration", "owned-a"),
		ownedUpd("creator of a route owned by a service may change", "Route", "owned-b"),
	}, domainMappingUpdateCases()...)
}

// flagGroup is a set of ConfigMap values in ferry-system and the cases judged under
// them. cases[0] is the probe: its outcome must differ under the default config.
type flagGroup struct {
	name       string
	configMaps map[string]map[string]string
	cases      []admissionCase
}

func flagGroups() []flagGroup {
	allOn := map[string]string{}
	for _, k := range []string{
		"kubernetes.podspec-affinity", "kubernetes.podspec-topologyspreadconstraints", "kubernetes.podspec-hostaliases",
		"kubernetes.podspec-nodeselector", "kubernetes.podspec-runtimeclassname", "kubernetes.podspec-tolerations",
		"kubernetes.podspec-securitycontext", "kubernetes.podspec-shareprocessnamespace", "kubernetes.podspec-priorityclassname",
		"kubernetes.podspec-schedulername", "kubernetes.podspec-dnspolicy", "kubernetes.podspec-dnsconfig",
		"kubernetes.podspec-hostipc", "kubernetes.podspec-hostpid", "kubernetes.podspec-hostnetwork",
		"kubernetes.podspec-fieldref", "kubernetes.podspec-init-containers", "kubernetes.podspec-persistent-volume-claim",
		"kubernetes.podspec-volumes-hostpath", "kubernetes.podspec-volumes-csi", "kubernetes.podspec-volumes-ephemeral",
		"kubernetes.podspec-volumes-image", "kubernetes.podspec-volumes-mount-propagation",
		"kubernetes.containerspec-addcapabilities", "multi-container-probing",
	} {
		allOn[k] = "Enabled"
	}
	init := func(fields string) string {
		return svcPod("{containers: [" + ctr("name: app") + "], initContainers: [{name: init, image: example.com/init, " + fields + "}]}")
	}
	return []flagGroup{{
		name:       "podspec flags enabled",
		configMaps: map[string]map[string]string{"config-features": allOn},
		cases: []admissionCase{
			acc("nodeSelector", svcPodField("nodeSelector: {disk: ssd}")),
			acc("affinity", svcPodField("affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [a]}]}]}}}")),
			acc("topologySpreadConstraints", svcPodField("topologySpreadConstraints: [{maxSkew: 1, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}]")),
			acc("hostAliases", svcPodField("hostAliases: [{ip: 10.0.0.1, hostnames: [db]}]")),
			acc("runtimeClassName", svcPodField("runtimeClassName: gvisor")),
			acc("tolerations", svcPodField("tolerations: [{key: dedicated, operator: Equal, value: ml, effect: NoSchedule}]")),
			acc("pod securityContext", svcPodField("securityContext: {runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true, fsGroup: 2000, supplementalGroups: [3000], seccompProfile: {type: RuntimeDefault}}")),
			acc("shareProcessNamespace", svcPodField("shareProcessNamespace: true")),
			acc("priorityClassName", svcPodField("priorityClassName: high")),
			acc("schedulerName", svcPodField("schedulerName: custom")),
			acc("dnsPolicy and dnsConfig", svcPodField("dnsPolicy: None, dnsConfig: {nameservers: [1.1.1.1]}")),
			acc("hostIPC, hostPID and hostNetwork", svcPodField("hostIPC: true, hostPID: true, hostNetwork: true")),
			acc("env fieldRef and resourceFieldRef", svcCtr("env: [{name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}, {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory}}}]")),
			acc("init container", svcPod("{containers: ["+ctr("name: app, volumeMounts: [{name: shared, mountPath: /shared}]")+"], initContainers: [{name: init, image: example.com/init, volumeMounts: [{name: shared, mountPath: /shared}]}], volumes: [{name: shared, emptyDir: {}}]}")),
			acc("read-only persistentVolumeClaim", svcVolume("persistentVolumeClaim: {claimName: data, readOnly: true}", "readOnly: true")),
			acc("hostPath, csi and image volumes", svcPod("{containers: ["+ctr("volumeMounts: [{name: h, mountPath: /h, readOnly: true}, {name: c, mountPath: /c, readOnly: true}, {name: i, mountPath: /i, readOnly: true}]")+"], volumes: [{name: h, hostPath: {path: /var/log}}, {name: c, csi: {driver: secrets.csi.k8s.io}}, {name: i, image: {reference: example.com/data:v1, pullPolicy: IfNotPresent}}]}")),
			acc("ephemeral volume", svcVolume("ephemeral: {volumeClaimTemplate: {spec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}}}", "")),
			acc("mountPropagation HostToContainer", svcVolume("emptyDir: {}", "mountPropagation: HostToContainer")),
			acc("capabilities.add", svcCtr("securityContext: {capabilities: {add: [NET_ADMIN], drop: [ALL]}}")),
			acc("sidecar probes with multi-container-probing", svcSidecar("readinessProbe: {exec: {command: ['true']}}, livenessProbe: {tcpSocket: {port: 9000}}")),

			rej("pod securityContext seLinuxOptions", svcPodField("securityContext: {seLinuxOptions: {level: 's0:c1'}}"), pod+"securityContext.seLinuxOptions"),
			rej("pod securityContext sysctls", svcPodField("securityContext: {sysctls: [{name: net.core.somaxconn, value: '1024'}]}"), pod+"securityContext.sysctls"),
			rej("pod securityContext windowsOptions", svcPodField("securityContext: {windowsOptions: {runAsUserName: admin}}"), pod+"securityContext.windowsOptions"),
			rej("pod securityContext fsGroupChangePolicy", svcPodField("securityContext: {fsGroupChangePolicy: Always}"), pod+"securityContext.fsGroupChangePolicy"),
			rej("pod runAsUser negative", svcPodField("securityContext: {runAsUser: -10}"), pod+"securityContext.runAsUser"),
			rej("pod runAsGroup above int32", svcPodField("securityContext: {runAsGroup: 2147483648}"), pod+"securityContext.runAsGroup"),
			rej("pod fsGroup negative", svcPodField("securityContext: {fsGroup: -1}"), pod+"securityContext.fsGroup"),
			rej("pod supplementalGroups negative", svcPodField("securityContext: {supplementalGroups: [-10]}"), pod+"securityContext.supplementalGroups[0]"),
			rej("init container readinessProbe", init("readinessProbe: {exec: {command: ['true']}}"), pod+"initContainers[0].readinessProbe|"+c0+"readinessProbe"),
			rej("init container livenessProbe", init("livenessProbe: {exec: {command: ['true']}}"), pod+"initContainers[0].livenessProbe|"+c0+"livenessProbe"),
			rej("init container startupProbe", init("startupProbe: {exec: {command: ['true']}}"), pod+"initContainers[0].startupProbe|"+c0+"startupProbe"),
			rej("init container lifecycle", init("lifecycle: {postStart: {exec: {command: ['true']}}}"), pod+"initContainers[0].lifecycle|"+c0+"lifecycle"),
			rej("init container named like the serving container", svcPod("{containers: ["+ctr("name: app")+"], initContainers: [{name: app, image: example.com/init}]}"), pod+"initContainers[0].name|"+c0+"name"),
			rej("init container with reserved env K_SERVICE", init("env: [{name: K_SERVICE, value: x}]"), pod+"initContainers[0].env[0].name|"+c0+"env[0].name"),
			rej("init container on a reserved port", init("ports: [{containerPort: 8012}]"), pod+"initContainers[0].ports[0].containerPort|"+pod+"initContainers[0].ports.containerPort|"+c0+"ports.containerPort"),
			acc("init container with two ports and env PORT", init("ports: [{containerPort: 7000}, {containerPort: 7001}], env: [{name: PORT, value: '7000'}]")),
			rej("init container with a bad image", svcPod("{containers: ["+ctr("name: app")+"], initContainers: [{name: init, image: 'Bad Image'}]}"), pod+"initContainers[0].image|"+c0+"image"),
			rej("writable persistentVolumeClaim without the write flag", svcVolume("persistentVolumeClaim: {claimName: data}", ""), "Persistent volume write support is disabled|"+pod+"volumes[0].persistentVolumeClaim"),
			rej("read-only persistentVolumeClaim mounted read-write", svcVolume("persistentVolumeClaim: {claimName: data, readOnly: true}", "readOnly: false"), c0+"volumeMounts[0].readOnly"),
			rej("image volume without a reference", svcVolume("image: {pullPolicy: Always}", "readOnly: true"), pod+"volumes[0].image.reference"),
			rej("image volume with an unknown pullPolicy", svcVolume("image: {reference: example.com/data, pullPolicy: Sometimes}", "readOnly: true"), pod+"volumes[0].image.pullPolicy"),
			rej("mountPropagation Bidirectional", svcVolume("emptyDir: {}", "mountPropagation: Bidirectional"), c0+"volumeMounts[0].mountPropagation"),
			rej("sidecar tcp probe without a port under multi-container-probing", svcSidecar("readinessProbe: {tcpSocket: {port: 0}}"), c1+"readinessProbe.tcpSocket.port"),
			rej("sidecar http probe without a port under multi-container-probing", svcSidecar("livenessProbe: {httpGet: {path: /, port: 0}}"), c1+"livenessProbe.httpGet.port"),
			rej("restartPolicy still never allowed", svcPodField("restartPolicy: Never, nodeSelector: {a: b}"), pod+"restartPolicy"),
		},
	}, {
		name: "podspec flags allowed",
		configMaps: map[string]map[string]string{"config-features": {
			"kubernetes.podspec-affinity":                "allowed",
			"kubernetes.podspec-nodeselector":            "Allowed",
			"kubernetes.podspec-init-containers":         "Allowed",
			"kubernetes.podspec-persistent-volume-claim": "Allowed",
			"kubernetes.podspec-volumes-hostpath":        "Allowed",
			"kubernetes.containerspec-addcapabilities":   "Allowed",
			"kubernetes.podspec-fieldref":                "Allowed",
			"multi-container":                            "Allowed",
		}},
		cases: []admissionCase{
			acc("nodeSelector with the flag allowed", svcPodField("nodeSelector: {disk: ssd}")),
			acc("affinity with the flag allowed (lower case)", svcPodField("affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 100, podAffinityTerm: {topologyKey: kubernetes.io/hostname}}]}}")),
			acc("fieldRef with the flag allowed", svcCtr("env: [{name: NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}]")),
			rej("initContainers need Enabled", svcPodField("initContainers: [{name: init, image: example.com/init}]"), pod+"initContainers|init-containers is off"),
			rej("persistentVolumeClaim needs Enabled", svcVolume("persistentVolumeClaim: {claimName: data, readOnly: true}", "readOnly: true"), "Persistent volume claim support is disabled|"+pod+"volumes[0].persistentVolumeClaim"),
			rej("hostPath needs Enabled", svcVolume("hostPath: {path: /var/log}", "readOnly: true"), "HostPath volume support is disabled|"+pod+"volumes[0].hostPath"),
			rej("capabilities.add needs Enabled", svcCtr("securityContext: {capabilities: {add: [NET_ADMIN]}}"), c0+"securityContext.capabilities.add"),
			rej("two containers need multi-container Enabled", svcSidecar("env: [{name: A, value: b}]"), "multi-container is off|"+pod+"containers"),
			rej("tolerations still off", svcPodField("tolerations: [{key: a, operator: Exists}]"), pod+"tolerations"),
		},
	}, {
		name: "multi-container and emptyDir disabled",
		configMaps: map[string]map[string]string{"config-features": {
			"multi-container":                     "Disabled",
			"kubernetes.podspec-volumes-emptydir": "Disabled",
		}},
		cases: []admissionCase{
			rej("two containers with multi-container off", svcSidecar("env: [{name: A, value: b}]"), "multi-container is off|"+pod+"containers"),
			rej("emptyDir with the flag off", svcVolume("emptyDir: {}", ""), pod+"volumes[0].emptyDir"),
			acc("one container still accepted", svcCtr("ports: [{containerPort: 8080}]")),
			acc("secret volume still accepted", svcVolume("secret: {secretName: s}", "readOnly: true")),
		},
	}, {
		name:       "secure-pod-defaults enabled",
		configMaps: map[string]map[string]string{"config-features": {"secure-pod-defaults": "Enabled"}},
		cases: []admissionCase{
			acc("pod seccompProfile RuntimeDefault", svcPodField("securityContext: {seccompProfile: {type: RuntimeDefault}}")),
			acc("capabilities.add NET_BIND_SERVICE", svcCtr("ports: [{containerPort: 80}], securityContext: {capabilities: {add: [NET_BIND_SERVICE], drop: [ALL]}}")),
			rej("capabilities.add beyond NET_BIND_SERVICE", svcCtr("securityContext: {capabilities: {add: [NET_ADMIN]}}"), c0+"securityContext.capabilities.add"),
			rej("pod runAsUser still needs the securitycontext flag", svcPodField("securityContext: {runAsUser: 1000}"), pod+"securityContext.runAsUser"),
			rej("pod seccompProfile Localhost still needs the securitycontext flag", svcPodField("securityContext: {seccompProfile: {type: Localhost, localhostProfile: p.json}}"), pod+"securityContext.seccompProfile"),
		},
	}, {
		name: "secure-pod-defaults AllowRootBounded, unknown values ignored",
		configMaps: map[string]map[string]string{"config-features": {
			"secure-pod-defaults":             "AllowRootBounded",
			"kubernetes.podspec-affinity":     "Yes",
			"kubernetes.podspec-tolerations":  "",
			"kubernetes.podspec-nodeselector": "ENABLED",
		}},
		cases: []admissionCase{
			acc("pod seccompProfile Unconfined", svcPodField("securityContext: {seccompProfile: {type: Unconfined}}")),
			acc("nodeSelector with the flag in capitals", svcPodField("nodeSelector: {disk: ssd}")),
			rej("affinity with an unknown flag value stays off", svcPodField("affinity: {podAntiAffinity: {preferredDuringSchedulingIgnoredDuringExecution: [{weight: 100, podAffinityTerm: {topologyKey: kubernetes.io/hostname}}]}}"), pod+"affinity"),
			rej("tolerations with an empty flag value stay off", svcPodField("tolerations: [{key: a, operator: Exists}]"), pod+"tolerations"),
			rej("pod seccompProfile Localhost needs the securitycontext flag", svcPodField("securityContext: {seccompProfile: {type: Localhost, localhostProfile: p.json}}"), pod+"securityContext.seccompProfile"),
		},
	}, {
		name: "secure-pod-defaults Allowed is ignored",
		configMaps: map[string]map[string]string{"config-features": {
			"secure-pod-defaults":              "Allowed",
			"kubernetes.podspec-schedulername": "Enabled",
		}},
		cases: []admissionCase{
			acc("schedulerName (shows the ConfigMap was read)", svcPodField("schedulerName: custom")),
			rej("pod seccompProfile RuntimeDefault still needs a flag", svcPodField("securityContext: {seccompProfile: {type: RuntimeDefault}}"), pod+"securityContext"),
			rej("capabilities.add NET_BIND_SERVICE still needs a flag", svcCtr("ports: [{containerPort: 80}], securityContext: {capabilities: {add: [NET_BIND_SERVICE]}}"), c0+"securityContext.capabilities.add"),
		},
	}, {
		name: "persistent volume write enabled",
		configMaps: map[string]map[string]string{"config-features": {
			"kubernetes.podspec-persistent-volume-claim": "Enabled",
			"kubernetes.podspec-persistent-volume-write": "Enabled",
		}},
		cases: []admissionCase{
			acc("writable persistentVolumeClaim", svcVolume("persistentVolumeClaim: {claimName: data}", "")),
			rej("read-only claim still needs a read-only mount", svcVolume("persistentVolumeClaim: {claimName: data, readOnly: true}", "readOnly: false"), c0+"volumeMounts[0].readOnly"),
		},
	}, {
		name: "container-concurrency zero not allowed",
		configMaps: map[string]map[string]string{"config-defaults": {
			"allow-container-concurrency-zero": "false",
			"container-concurrency":            "1",
		}},
		cases: []admissionCase{
			rej("containerConcurrency 0 when zero is not allowed", svcRevSpec("containerConcurrency: 0"), "spec.template.spec.containerConcurrency"),
			acc("containerConcurrency defaulted to 1", svcCtr("")),
			acc("containerConcurrency 1", svcRevSpec("containerConcurrency: 1")),
		},
	}, {
		name: "config-defaults limits",
		configMaps: map[string]map[string]string{"config-defaults": {
			"max-revision-timeout-seconds":    "900",
			"container-concurrency-max-limit": "50",
		}},
		cases: []admissionCase{
			acc("timeoutSeconds 900 under max-revision-timeout-seconds 900", svcRevSpec("timeoutSeconds: 900")),
			rej("timeoutSeconds above max-revision-timeout-seconds", svcRevSpec("timeoutSeconds: 901"), "spec.template.spec.timeoutSeconds"),
			rej("containerConcurrency above container-concurrency-max-limit", svcRevSpec("containerConcurrency: 51"), "spec.template.spec.containerConcurrency"),
			rej("revision containerConcurrency above container-concurrency-max-limit", revSpec("containerConcurrency: 60"), "spec.containerConcurrency"),
			acc("containerConcurrency at container-concurrency-max-limit", svcRevSpec("containerConcurrency: 50")),
		},
	}}
}

func TestAdmissionTable(t *testing.T) {
	ns := testNamespace(t)
	var rejected, accepted int
	count := func(cs []admissionCase) {
		for _, c := range cs {
			if c.reject {
				rejected++
			} else {
				accepted++
			}
		}
	}
	count(defaultConfigCases())
	count(updateCases())
	for _, g := range flagGroups() {
		count(g.cases)
	}
	t.Logf("admission table: %d cases, %d rejected, %d accepted", rejected+accepted, rejected, accepted)

	t.Run("default", func(t *testing.T) {
		for _, tc := range defaultConfigCases() {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				runAdmissionCase(t, ns, tc)
			})
		}
	})
	t.Run("update", func(t *testing.T) {
		for _, tc := range updateCases() {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				runAdmissionCase(t, ns, tc)
			})
		}
	})
	// The flag groups change cluster-wide ConfigMaps: one group at a time, after
	// every default-config case has finished.
	t.Run("flags", func(t *testing.T) {
		flipTimeout := 30 * time.Second
		for _, g := range flagGroups() {
			t.Run(g.name, func(t *testing.T) {
				// The probe is the first case whose outcome under the current config
				// differs from the one the group expects: it shows when the group's
				// config has taken effect.
				probe, probeFound := admissionCase{}, false
				for _, tc := range g.cases {
					if (submit(t, ns, tc) == nil) == tc.reject {
						probe, probeFound = tc, true
						break
					}
				}
				restore := applyConfigMaps(t, g.configMaps)
				effective := true
				if !probeFound {
					t.Logf("every case already has its outcome before %v is written: nothing shows when it takes effect", g.configMaps)
					time.Sleep(2 * time.Second)
				} else if !waitForOutcome(t, ns, probe, !probe.reject, flipTimeout) {
					effective = false
					t.Errorf("%v in %s did not take effect within %v: case %q keeps its default outcome. Admission must read %s from the ConfigMaps (in the test binary too: TestMain must start admission with Ferry's config store), so the cases of this group are not judged",
						g.configMaps, ferrySystemNamespace, flipTimeout, probe.name, strings.Join(mapKeys(g.configMaps), ", "))
					// Probably no store at all: do not wait as long for the next groups.
					flipTimeout = 5 * time.Second
				}
				t.Cleanup(func() {
					restore()
					if effective && probeFound && !waitForOutcome(t, ns, probe, probe.reject, 30*time.Second) {
						t.Errorf("restoring %v did not take effect within 30s", g.configMaps)
					}
				})
				for _, tc := range g.cases {
					t.Run(tc.name, func(t *testing.T) {
						if !effective {
							t.Errorf("not judged: %v did not take effect", g.configMaps)
							return
						}
						t.Parallel()
						runAdmissionCase(t, ns, tc)
					})
				}
			})
		}
	})
}

const ferrySystemNamespace = "ferry-system"

func mapKeys[V any](m map[string]V) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	return keys
}

// submit sends the case's object (or update) as a server-side dry run and returns
// the API server's error.
func submit(t *testing.T, ns string, tc admissionCase) error {
	t.Helper()
	ctx := context.Background()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(tc.obj), &obj.Object); err != nil {
		t.Fatalf("bad case YAML: %v\n%s", err, tc.obj)
	}
	obj.SetNamespace(ns)
	var opts []client.CreateOption
	if !tc.reject {
		opts = append(opts, client.FieldValidation("Strict"))
	}
	if tc.update == nil {
		return testClient.Create(ctx, obj, append(opts, client.DryRunAll)...)
	}
	if tc.owner != "" {
		owner := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(tc.owner), &owner.Object); err != nil {
			t.Fatalf("bad owner YAML: %v\n%s", err, tc.owner)
		}
		owner.SetNamespace(ns)
		if err := testClient.Create(ctx, owner); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("creating the owner: %v", err)
		}
		if err := testClient.Get(ctx, client.ObjectKeyFromObject(owner), owner); err != nil {
			t.Fatal(err)
		}
		refs := obj.GetOwnerReferences()
		for i := range refs {
			if refs[i].Name == owner.GetName() && refs[i].Kind == owner.GetKind() {
				refs[i].UID = owner.GetUID()
			}
		}
		obj.SetOwnerReferences(refs)
	}
	if err := testClient.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating the object to update: %v\n%s", err, tc.obj)
	}
	if err := testClient.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	tc.update(obj)
	uopts := []client.UpdateOption{client.DryRunAll}
	if !tc.reject {
		uopts = append(uopts, client.FieldValidation("Strict"))
	}
	return testClient.Update(ctx, obj, uopts...)
}

func runAdmissionCase(t *testing.T, ns string, tc admissionCase) {
	t.Helper()
	err := submit(t, ns, tc)
	if !tc.reject {
		if err != nil {
			t.Errorf("refused, want accepted: %v\n%s", err, tc.obj)
		}
		return
	}
	if err == nil {
		t.Errorf("accepted, want rejected naming %q\n%s", tc.want, tc.obj)
		return
	}
	if !apierrors.IsInvalid(err) && !apierrors.IsBadRequest(err) && !apierrors.IsForbidden(err) {
		t.Errorf("refused, but not as a denial (want 422, 400 or 403): %v", err)
	}
	msg := err.Error()
	t.Logf("rejected: %s", msg)
	for _, w := range tc.want {
		if !containsAny(msg, w) {
			t.Errorf("rejected, but the message does not name %q:\n%s\n%s", w, msg, tc.obj)
		}
	}
}

// containsAny reports whether msg contains one of the |-separated alternatives.
func containsAny(msg, alternatives string) bool {
	for _, a := range strings.Split(alternatives, "|") {
		if strings.Contains(msg, a) {
			return true
		}
	}
	return false
}

// waitForOutcome dry-runs tc until it is accepted (wantAccepted) or rejected, or
// the timeout passes.
func waitForOutcome(t *testing.T, ns string, tc admissionCase, wantAccepted bool, timeout time.Duration) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		err := submit(t, ns, tc)
		if (err == nil) == wantAccepted {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// applyConfigMaps writes the ConfigMaps (data replaced) in ferry-system and returns
// a function that puts back what was there before.
func applyConfigMaps(t *testing.T, configMaps map[string]map[string]string) (restore func()) {
	t.Helper()
	ctx := context.Background()
	const systemNS = ferrySystemNamespace
	if err := testClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: systemNS}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	var undo []func()
	for name, data := range configMaps {
		cm := &corev1.ConfigMap{}
		err := testClient.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: name}, cm)
		switch {
		case apierrors.IsNotFound(err):
			cm = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: systemNS, Name: name}, Data: data}
			if err := testClient.Create(ctx, cm); err != nil {
				t.Fatal(err)
			}
			undo = append(undo, func() {
				if err := testClient.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
					t.Errorf("deleting ConfigMap %s: %v", name, err)
				}
			})
		case err != nil:
			t.Fatal(err)
		default:
			old := cm.Data
			cm.Data = data
			if err := testClient.Update(ctx, cm); err != nil {
				t.Fatal(err)
			}
			undo = append(undo, func() {
				cur := &corev1.ConfigMap{}
				if err := testClient.Get(ctx, client.ObjectKey{Namespace: systemNS, Name: name}, cur); err != nil {
					t.Errorf("restoring ConfigMap %s: %v", name, err)
					return
				}
				cur.Data = old
				if err := testClient.Update(ctx, cur); err != nil {
					t.Errorf("restoring ConfigMap %s: %v", name, err)
				}
			})
		}
	}
	return func() {
		for _, u := range undo {
			u()
		}
	}
}
