package config

import (
	"fmt"
	"io"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NewDefaultsFromConfigMap parses config-defaults with Knative's keys and checks:
// revision-timeout-seconds ≤ max-revision-timeout-seconds; response-start and idle
// timeouts, when positive, ≤ revision-timeout-seconds (response-start defaults to
// revision-timeout-seconds as configured); container-concurrency-max-limit ≥ 1;
// 0 ≤ container-concurrency ≤ max-limit; the name templates parse and execute on an
// empty ObjectMeta. enable-service-links is true, false or (anything else) unset.
func NewDefaultsFromConfigMap(cm *corev1.ConfigMap) (*Defaults, error) {
	data := dataOf(cm.Data)
	d := DefaultDefaults()
	d.RevisionResponseStartTimeoutSeconds = -1 // "not given": follows revision-timeout-seconds
	if err := parse(data,
		asString("container-name-template", &d.UserContainerNameTemplate),
		asString("init-container-name-template", &d.InitContainerNameTemplate),
		asBool("allow-container-concurrency-zero", &d.AllowContainerConcurrencyZero),
		asTriState("enable-service-links", &d.EnableServiceLinks),
		asInt64("revision-timeout-seconds", &d.RevisionTimeoutSeconds),
		asInt64("max-revision-timeout-seconds", &d.MaxRevisionTimeoutSeconds),
		asInt64("revision-response-start-timeout-seconds", &d.RevisionResponseStartTimeoutSeconds),
		asInt64("revision-idle-timeout-seconds", &d.RevisionIdleTimeoutSeconds),
		asInt64("container-concurrency", &d.ContainerConcurrency),
		asInt64("container-concurrency-max-limit", &d.ContainerConcurrencyMaxLimit),
		asQuantity("revision-cpu-request", &d.RevisionCPURequest),
		asQuantity("revision-memory-request", &d.RevisionMemoryRequest),
		asQuantity("revision-ephemeral-storage-request", &d.RevisionEphemeralStorageRequest),
		asQuantity("revision-cpu-limit", &d.RevisionCPULimit),
		asQuantity("revision-memory-limit", &d.RevisionMemoryLimit),
		asQuantity("revision-ephemeral-storage-limit", &d.RevisionEphemeralStorageLimit),
	); err != nil {
		return nil, err
	}
	if _, given := data["revision-response-start-timeout-seconds"]; !given {
		d.RevisionResponseStartTimeoutSeconds = d.RevisionTimeoutSeconds
	}
	if d.RevisionTimeoutSeconds > d.MaxRevisionTimeoutSeconds {
		return nil, fmt.Errorf("revision-timeout-seconds (%d) cannot be greater than max-revision-timeout-seconds (%d)",
			d.RevisionTimeoutSeconds, d.MaxRevisionTimeoutSeconds)
	}
	if d.RevisionResponseStartTimeoutSeconds > 0 && d.RevisionResponseStartTimeoutSeconds > d.RevisionTimeoutSeconds {
		return nil, fmt.Errorf("revision-response-start-timeout-seconds (%d) cannot be greater than revision-timeout-seconds (%d)",
			d.RevisionResponseStartTimeoutSeconds, d.RevisionTimeoutSeconds)
	}
	if d.RevisionIdleTimeoutSeconds > 0 && d.RevisionIdleTimeoutSeconds > d.RevisionTimeoutSeconds {
		return nil, fmt.Errorf("revision-idle-timeout-seconds (%d) cannot be greater than revision-timeout-seconds (%d)",
			d.RevisionIdleTimeoutSeconds, d.RevisionTimeoutSeconds)
	}
	if d.ContainerConcurrencyMaxLimit < 1 {
		return nil, fmt.Errorf("container-concurrency-max-limit: expected 1 <= %d", d.ContainerConcurrencyMaxLimit)
	}
	if d.ContainerConcurrency < 0 || d.ContainerConcurrency > d.ContainerConcurrencyMaxLimit {
		return nil, fmt.Errorf("container-concurrency: expected 0 <= %d <= %d", d.ContainerConcurrency, d.ContainerConcurrencyMaxLimit)
	}
	for key, text := range map[string]string{
		"container-name-template":      d.UserContainerNameTemplate,
		"init-container-name-template": d.InitContainerNameTemplate,
	} {
		t, err := template.New(key).Parse(text)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		if err := t.Execute(io.Discard, metav1.ObjectMeta{}); err != nil {
			return nil, fmt.Errorf("%s: error executing template: %w", key, err)
		}
	}
	return d, nil
}
