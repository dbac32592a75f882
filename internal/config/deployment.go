package config

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Default affinity types of config-deployment.
const (
	AffinityPreferSpreadRevisionOverNodes = "prefer-spread-revision-over-nodes"
	AffinityNone                          = "none"
)

// Deployment is the part of config-deployment that applies to Ferry. Ferry runs no
// queue-proxy sidecar, so the queue-sidecar-* keys are accepted and ignored, and a
// missing queue-sidecar-image (required by Knative) is not an error.
type Deployment struct {
	ProgressDeadline               time.Duration
	RegistriesSkippingTagResolving []string
	DigestResolutionTimeout        time.Duration
	PodIsAlwaysSchedulable         bool
	// DefaultAffinityType is prefer-spread-revision-over-nodes or none.
	DefaultAffinityType string
	// RuntimeClassNames maps a runtimeClassName to the Revision labels that select it
	// (an empty selector matches every Revision).
	RuntimeClassNames map[string]map[string]string
}

// DefaultDeployment is Knative's config-deployment defaults.
func DefaultDeployment() *Deployment {
	return &Deployment{
		ProgressDeadline:               600 * time.Second,
		RegistriesSkippingTagResolving: []string{"kind.local", "ko.local", "dev.local"},
		DigestResolutionTimeout:        10 * time.Second,
		DefaultAffinityType:            AffinityPreferSpreadRevisionOverNodes,
	}
}

// NewDeploymentFromConfigMap parses config-deployment with Knative's keys (legacy
// camelCase spellings too; kebab-case wins) and checks: progress-deadline > 0 in whole
// seconds, digest-resolution-timeout > 0, default-affinity-type known, runtime-class-name
// YAML with DNS-1123 names and valid label selectors. Unlike Knative, queue-sidecar-image
// is not required.
func NewDeploymentFromConfigMap(cm *corev1.ConfigMap) (*Deployment, error) {
	data := dataOf(cm.Data)
	d := DefaultDeployment()
	if err := parse(data,
		asDuration("progressDeadline", &d.ProgressDeadline),
		asDuration("progress-deadline", &d.ProgressDeadline),
		asStringSet("registriesSkippingTagResolving", &d.RegistriesSkippingTagResolving),
		asStringSet("registries-skipping-tag-resolving", &d.RegistriesSkippingTagResolving),
		asDuration("digestResolutionTimeout", &d.DigestResolutionTimeout),
		asDuration("digest-resolution-timeout", &d.DigestResolutionTimeout),
		asBool("pod-is-always-schedulable", &d.PodIsAlwaysSchedulable),
		asOneOf("default-affinity-type", &d.DefaultAffinityType, AffinityPreferSpreadRevisionOverNodes, AffinityNone),
	); err != nil {
		return nil, err
	}
	if d.ProgressDeadline <= 0 {
		return nil, fmt.Errorf("progress-deadline cannot be a non-positive duration, was %v", d.ProgressDeadline)
	}
	if d.ProgressDeadline.Truncate(time.Second) != d.ProgressDeadline {
		return nil, fmt.Errorf("progress-deadline must be rounded to a whole second, was: %v", d.ProgressDeadline)
	}
	if d.DigestResolutionTimeout <= 0 {
		return nil, fmt.Errorf("digest-resolution-timeout cannot be a non-positive duration, was %v", d.DigestResolutionTimeout)
	}
	if v, ok := lookup(data, "runtime-class-name"); ok && v != "" {
		rcn, err := parseRuntimeClassNames(v)
		if err != nil {
			return nil, keyError("runtime-class-name", err)
		}
		d.RuntimeClassNames = rcn
	}
	return d, nil
}

func parseRuntimeClassNames(v string) (map[string]map[string]string, error) {
	var entries map[string]struct {
		Selector map[string]string `json:"selector,omitempty"`
	}
	if err := yaml.Unmarshal([]byte(v), &entries); err != nil {
		return nil, err
	}
	out := make(map[string]map[string]string, len(entries))
	for name, e := range entries {
		if errs := validation.IsDNS1123Subdomain(name); len(errs) > 0 {
			return nil, fmt.Errorf("%q: %s", name, strings.Join(errs, "; "))
		}
		for k, val := range e.Selector {
			if errs := validation.IsQualifiedName(k); len(errs) > 0 {
				return nil, fmt.Errorf("%q: selector key %q: %s", name, k, strings.Join(errs, "; "))
			}
			if errs := validation.IsValidLabelValue(val); len(errs) > 0 {
				return nil, fmt.Errorf("%q: selector value %q: %s", name, val, strings.Join(errs, "; "))
			}
		}
		out[name] = e.Selector
	}
	return out, nil
}
