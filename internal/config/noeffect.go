package config

import (
	"fmt"
	"slices"
	"strings"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
)

// A noEffect key is one Knative reads and Ferry takes (validated as Knative does, so a
// ConfigMap one accepts the other accepts) but does not act on, because what it
// configures does not exist in Ferry. Set to anything but Knative's default, it is
// reported rather than silently ignored.
type noEffect struct {
	// key, or a prefix when it ends in "*".
	key string
	// quiet are the values not reported: Knative's default, and values that mean what
	// Ferry does anyway (compared without case). Empty: every value is reported.
	quiet []string
	why   string
}

const (
	noQueueProxy    = "Ferry runs no queue-proxy sidecar"
	noMesh          = "Ferry has no mesh or internal-TLS mode"
	noTagResolution = "Ferry does not resolve image tags to digests"
)

var noEffectKeys = map[string][]noEffect{
	AutoscalerConfigName: {
		{key: "activator-capacity", quiet: []string{"100"},
			why: "Ferry has no activators to share a Revision among: every gateway replica serves every Revision"},
		{key: "target-burst-capacity", quiet: []string{"211", "-1"},
			why: "the gateway is always in the request path, as with -1 in Knative"},
	},
	NetworkConfigName: {
		{key: "enable-mesh-pod-addressability", quiet: []string{"false"}, why: noMesh},
		{key: "internal-encryption", quiet: []string{"false"}, why: noMesh},
		{key: "system-internal-tls", quiet: []string{"disabled"}, why: noMesh},
		{key: "cluster-local-domain-tls", quiet: []string{"disabled"}, why: noMesh},
		{key: "ingress-class", quiet: []string{netv1alpha1.IngressClass},
			why: "Ferry's Routes are always served by Ferry's gateway (class " + netv1alpha1.IngressClass + ")"},
		{key: "ingress.class", quiet: []string{netv1alpha1.IngressClass},
			why: "Ferry's Routes are always served by Ferry's gateway (class " + netv1alpha1.IngressClass + ")"},
		{key: "namespace-wildcard-cert-selector", quiet: []string{""}, why: "Ferry makes no wildcard certificates yet"},
	},
	DeploymentConfigName: {
		// queue-sidecar-image is in every Knative install's config-deployment, and
		// Ferry's own ConfigMap says it is not needed: not worth a warning.
		{key: "queue-sidecar-image"},
		{key: "queue-sidecar-*", why: noQueueProxy},
		{key: "registries-skipping-tag-resolving", quiet: []string{"kind.local,ko.local,dev.local"}, why: noTagResolution},
		{key: "digest-resolution-timeout", quiet: []string{"10s"}, why: noTagResolution},
	},
	ObservabilityConfigName: {
		{key: "logging.enable-var-log-collection", quiet: []string{"false"},
			why: "Ferry mounts no /var/log for a node's log collector"},
		{key: "request-metrics-*", quiet: []string{"none", "", "0", "0s"}, why: noQueueProxy +
			"; the gateway's request metrics go where metrics-protocol says"},
		{key: "runtime-profiling", quiet: []string{"disabled"},
			why: "Ferry serves pprof where its --pprof-addr flag says"},
		{key: "runtime-export-interval", quiet: []string{"15s"},
			why: "Ferry's Go runtime metrics are read when they are scraped or exported"},
	},
	FeaturesConfigName: {
		{key: "queueproxy.*", quiet: []string{"disabled"}, why: noQueueProxy},
	},
}

// noEffectWith are keys without effect only beside another key's value: the rules
// above look at one key at a time.
var noEffectWith = map[string]func(data map[string]string) []string{
	ObservabilityConfigName: func(data map[string]string) []string {
		endpoint := strings.TrimSpace(data["metrics-endpoint"])
		if strings.TrimSpace(data["metrics-protocol"]) != ProtocolPrometheus || endpoint == "" {
			return nil
		}
		return []string{fmt.Sprintf("metrics-endpoint: %q has no effect with metrics-protocol prometheus: "+
			"Ferry serves /metrics where its --metrics-addr flag says", endpoint)}
	},
}

// NoEffect returns one line for each key of the named ConfigMap's data that Ferry
// takes without acting on, sorted by key, or nil.
func NoEffect(name string, data map[string]string) []string {
	rules := noEffectKeys[name]
	if len(rules) == 0 {
		return nil
	}
	var lines []string
	if with := noEffectWith[name]; with != nil {
		lines = with(data)
	}
	for key, value := range data {
		i := slices.IndexFunc(rules, func(r noEffect) bool {
			if prefix, ok := strings.CutSuffix(r.key, "*"); ok {
				return strings.HasPrefix(key, prefix)
			}
			return key == r.key
		})
		if i < 0 || rules[i].why == "" {
			continue
		}
		value = strings.TrimSpace(value)
		if slices.ContainsFunc(rules[i].quiet, func(q string) bool { return strings.EqualFold(q, value) }) {
			continue
		}
		lines = append(lines, fmt.Sprintf("%s: %q has no effect: %s", key, value, rules[i].why))
	}
	slices.Sort(lines)
	return lines
}
