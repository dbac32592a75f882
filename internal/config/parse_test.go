package config

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
)

func cm(name string, data map[string]string) *corev1.ConfigMap {
	c := &corev1.ConfigMap{Data: data}
	c.Name, c.Namespace = name, SystemNamespace
	return c
}

// wantErr is "" for success, else a substring of the error (which must name the key).
type parseCase[T any] struct {
	name    string
	data    map[string]string
	wantErr string
	check   func(*T) bool
}

func runParse[T any](t *testing.T, parse func(*corev1.ConfigMap) (*T, error), cmName string, tests []parseCase[T]) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(cm(cmName, tc.data))
			switch {
			case tc.wantErr != "" && err == nil:
				t.Fatalf("no error, want one containing %q (got %+v)", tc.wantErr, got)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q, want one containing %q", err, tc.wantErr)
			case tc.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tc.wantErr == "" && tc.check != nil && !tc.check(got):
				t.Fatalf("got %+v", got)
			}
		})
	}
}

func TestNewGCFromConfigMap(t *testing.T) {
	runParse(t, NewGCFromConfigMap, GCConfigName, []parseCase[GC]{
		{name: "empty is the defaults", check: func(g *GC) bool { return *g == *DefaultGC() }},
		{name: "example only", data: map[string]string{ExampleKey: "min-non-active-revisions: x"}, check: func(g *GC) bool { return *g == *DefaultGC() }},
		{name: "all set", data: map[string]string{"retain-since-create-time": "1h", "retain-since-last-active-time": " 30m ",
			"min-non-active-revisions": "3", "max-non-active-revisions": "10"},
			check: func(g *GC) bool {
				return *g == GC{RetainSinceCreateTime: time.Hour, RetainSinceLastActiveTime: 30 * time.Minute, MinNonActiveRevisions: 3, MaxNonActiveRevisions: 10}
			}},
		{name: "never collect", data: map[string]string{"retain-since-create-time": "disabled", "retain-since-last-active-time": "Disabled",
			"max-non-active-revisions": "DISABLED"},
			check: func(g *GC) bool {
				return g.RetainSinceCreateTime == GCDisabled && g.RetainSinceLastActiveTime == GCDisabled && g.MaxNonActiveRevisions == GCDisabled
			}},
		{name: "delete immediately", data: map[string]string{"retain-since-create-time": "disabled", "retain-since-last-active-time": "disabled",
			"min-non-active-revisions": "0", "max-non-active-revisions": "0"},
			check: func(g *GC) bool { return g.MinNonActiveRevisions == 0 && g.MaxNonActiveRevisions == 0 }},
		{name: "empty retain and max keep the defaults", data: map[string]string{"retain-since-create-time": "", "max-non-active-revisions": ""},
			check: func(g *GC) bool { return *g == *DefaultGC() }},
		{name: "min disabled is an error", data: map[string]string{"min-non-active-revisions": "disabled"}, wantErr: "min-non-active-revisions"},
		{name: "min empty is an error", data: map[string]string{"min-non-active-revisions": ""}, wantErr: "min-non-active-revisions"},
		{name: "min negative", data: map[string]string{"min-non-active-revisions": "-1"}, wantErr: "min-non-active-revisions must be non-negative"},
		{name: "max negative", data: map[string]string{"max-non-active-revisions": "-1"}, wantErr: "max-non-active-revisions"},
		{name: "max not a number", data: map[string]string{"max-non-active-revisions": "lots"}, wantErr: "max-non-active-revisions"},
		{name: "min above max", data: map[string]string{"min-non-active-revisions": "5", "max-non-active-revisions": "4"}, wantErr: "must be <= max-non-active-revisions"},
		{name: "min above disabled max", data: map[string]string{"min-non-active-revisions": "5000", "max-non-active-revisions": "disabled"},
			check: func(g *GC) bool { return g.MinNonActiveRevisions == 5000 }},
		{name: "bare number is no duration", data: map[string]string{"retain-since-create-time": "600"}, wantErr: "retain-since-create-time"},
		{name: "negative duration", data: map[string]string{"retain-since-last-active-time": "-1h"}, wantErr: "retain-since-last-active-time"},
	})
}

func TestNewDeploymentFromConfigMap(t *testing.T) {
	runParse(t, NewDeploymentFromConfigMap, DeploymentConfigName, []parseCase[Deployment]{
		{name: "empty is the defaults, no queue-sidecar-image needed", check: func(d *Deployment) bool { return reflect.DeepEqual(d, DefaultDeployment()) }},
		{name: "all set", data: map[string]string{"progress-deadline": "120s", "registries-skipping-tag-resolving": "a.io, b.io",
			"digest-resolution-timeout": "3s", "pod-is-always-schedulable": "true", "default-affinity-type": "none",
			"queue-sidecar-image": "ignored", "queue-sidecar-cpu-request": "not a quantity: ignored"},
			check: func(d *Deployment) bool {
				return d.ProgressDeadline == 120*time.Second && reflect.DeepEqual(d.RegistriesSkippingTagResolving, []string{"a.io", "b.io"}) &&
					d.DigestResolutionTimeout == 3*time.Second && d.PodIsAlwaysSchedulable && d.DefaultAffinityType == AffinityNone
			}},
		{name: "legacy keys", data: map[string]string{"progressDeadline": "30s", "digestResolutionTimeout": "5s", "registriesSkippingTagResolving": "x.io"},
			check: func(d *Deployment) bool {
				return d.ProgressDeadline == 30*time.Second && d.DigestResolutionTimeout == 5*time.Second && reflect.DeepEqual(d.RegistriesSkippingTagResolving, []string{"x.io"})
			}},
		{name: "kebab wins over legacy", data: map[string]string{"progressDeadline": "30s", "progress-deadline": "40s"},
			check: func(d *Deployment) bool { return d.ProgressDeadline == 40*time.Second }},
		{name: "bad legacy value is an error even with kebab set", data: map[string]string{"progressDeadline": "x", "progress-deadline": "40s"}, wantErr: "progressDeadline"},
		{name: "progress-deadline bare seconds", data: map[string]string{"progress-deadline": "600"}, wantErr: "progress-deadline"},
		{name: "progress-deadline zero", data: map[string]string{"progress-deadline": "0s"}, wantErr: "progress-deadline cannot be a non-positive"},
		{name: "progress-deadline fraction", data: map[string]string{"progress-deadline": "1500ms"}, wantErr: "whole second"},
		{name: "digest timeout negative", data: map[string]string{"digest-resolution-timeout": "-1s"}, wantErr: "digest-resolution-timeout"},
		{name: "bad bool", data: map[string]string{"pod-is-always-schedulable": "yes"}, wantErr: "pod-is-always-schedulable"},
		{name: "unknown affinity", data: map[string]string{"default-affinity-type": "spread"}, wantErr: "default-affinity-type"},
		{name: "runtime classes", data: map[string]string{"runtime-class-name": "gvisor:\n  selector:\n    sandbox: \"true\"\nkata: {}\n"},
			check: func(d *Deployment) bool {
				return reflect.DeepEqual(d.RuntimeClassNames, map[string]map[string]string{"gvisor": {"sandbox": "true"}, "kata": nil})
			}},
		{name: "runtime class bad name", data: map[string]string{"runtime-class-name": "Not_A_Name: {}"}, wantErr: "runtime-class-name"},
		{name: "runtime class bad yaml", data: map[string]string{"runtime-class-name": "[1, 2"}, wantErr: "runtime-class-name"},
	})
}

func TestNewDefaultsFromConfigMap(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	runParse(t, NewDefaultsFromConfigMap, DefaultsConfigName, []parseCase[Defaults]{
		{name: "empty is the defaults", check: func(d *Defaults) bool { return reflect.DeepEqual(d, DefaultDefaults()) }},
		{name: "all set", data: map[string]string{
			"revision-timeout-seconds": "100", "max-revision-timeout-seconds": "200", "revision-response-start-timeout-seconds": "50",
			"revision-idle-timeout-seconds": "60", "container-concurrency": "10", "container-concurrency-max-limit": "100",
			"allow-container-concurrency-zero": "false", "container-name-template": "{{.Name}}", "init-container-name-template": "init-{{.Name}}",
			"enable-service-links": "TRUE", "revision-cpu-request": "100m", "revision-memory-request": "64Mi",
			"revision-ephemeral-storage-request": "1Gi", "revision-cpu-limit": "1", "revision-memory-limit": "128Mi",
			"revision-ephemeral-storage-limit": "2Gi"},
			check: func(d *Defaults) bool {
				return d.RevisionTimeoutSeconds == 100 && d.MaxRevisionTimeoutSeconds == 200 && d.RevisionResponseStartTimeoutSeconds == 50 &&
					d.RevisionIdleTimeoutSeconds == 60 && d.ContainerConcurrency == 10 && d.ContainerConcurrencyMaxLimit == 100 &&
					!d.AllowContainerConcurrencyZero && *d.EnableServiceLinks &&
					d.RevisionCPURequest.Equal(*q("100m")) && d.RevisionMemoryRequest.Equal(*q("64Mi")) &&
					d.RevisionEphemeralStorageRequest.Equal(*q("1Gi")) && d.RevisionCPULimit.Equal(*q("1")) &&
					d.RevisionMemoryLimit.Equal(*q("128Mi")) && d.RevisionEphemeralStorageLimit.Equal(*q("2Gi")) &&
					d.UserContainerNameTemplate == "{{.Name}}" && d.InitContainerNameTemplate == "init-{{.Name}}"
			}},
		{name: "response-start follows revision-timeout", data: map[string]string{"revision-timeout-seconds": "100"},
			check: func(d *Defaults) bool { return d.RevisionResponseStartTimeoutSeconds == 100 }},
		{name: "enable-service-links unknown is unset", data: map[string]string{"enable-service-links": "default"},
			check: func(d *Defaults) bool { return d.EnableServiceLinks == nil }},
		{name: "enable-service-links false", data: map[string]string{"enable-service-links": "False"},
			check: func(d *Defaults) bool { return d.EnableServiceLinks != nil && !*d.EnableServiceLinks }},
		{name: "timeout above max", data: map[string]string{"revision-timeout-seconds": "700"}, wantErr: "max-revision-timeout-seconds"},
		{name: "response-start above timeout", data: map[string]string{"revision-response-start-timeout-seconds": "301"}, wantErr: "revision-response-start-timeout-seconds"},
		{name: "idle above timeout", data: map[string]string{"revision-idle-timeout-seconds": "301"}, wantErr: "revision-idle-timeout-seconds"},
		{name: "bad int", data: map[string]string{"revision-timeout-seconds": "5m"}, wantErr: "revision-timeout-seconds"},
		{name: "empty int", data: map[string]string{"container-concurrency": ""}, wantErr: "container-concurrency"},
		{name: "max-limit zero", data: map[string]string{"container-concurrency-max-limit": "0"}, wantErr: "container-concurrency-max-limit"},
		{name: "concurrency above max-limit", data: map[string]string{"container-concurrency": "11", "container-concurrency-max-limit": "10"}, wantErr: "container-concurrency"},
		{name: "concurrency negative", data: map[string]string{"container-concurrency": "-1"}, wantErr: "container-concurrency"},
		{name: "bad bool", data: map[string]string{"allow-container-concurrency-zero": "no"}, wantErr: "allow-container-concurrency-zero"},
		{name: "empty bool", data: map[string]string{"allow-container-concurrency-zero": ""}, wantErr: "allow-container-concurrency-zero"},
		{name: "bad quantity", data: map[string]string{"revision-memory-limit": "lots"}, wantErr: "revision-memory-limit"},
		{name: "template does not parse", data: map[string]string{"container-name-template": "{{.Name"}, wantErr: "container-name-template"},
		{name: "template does not execute", data: map[string]string{"init-container-name-template": "{{.Nope}}"}, wantErr: "init-container-name-template"},
	})
	d, _ := NewDefaultsFromConfigMap(cm(DefaultsConfigName, map[string]string{"container-name-template": "{{.Name}}-main"}))
	if got := d.UserContainerName(cm("hello", nil).ObjectMeta); got != "hello-main" {
		t.Errorf("UserContainerName = %q", got)
	}
}

func TestNewFeaturesFromConfigMap(t *testing.T) {
	runParse(t, NewFeaturesFromConfigMap, FeaturesConfigName, []parseCase[Features]{
		{name: "empty is the defaults", check: func(f *Features) bool { return *f == *DefaultFeatures() }},
		{name: "any case, canonical", data: map[string]string{"kubernetes.podspec-affinity": "enabled", "multi-container": "DISABLED",
			"kubernetes.podspec-fieldref": " Allowed ", "kubernetes.podspec-init-containers": "Enabled", "kubernetes.podspec-volumes-emptydir": "disabled",
			"tag-header-based-routing": "Enabled", "kubernetes.podspec-dnsconfig": "allowed"},
			check: func(f *Features) bool {
				return f.PodSpecAffinity == Enabled && f.MultiContainer == Disabled && f.PodSpecFieldRef == Allowed &&
					f.PodSpecInitContainers == Enabled && f.PodSpecVolumesEmptyDir == Disabled && f.TagHeaderBasedRouting == Enabled &&
					f.PodSpecDNSConfig == Allowed
			}},
		{name: "unknown values are ignored, never an error", data: map[string]string{"kubernetes.podspec-affinity": "yes", "multi-container": ""},
			check: func(f *Features) bool { return *f == *DefaultFeatures() }},
		{name: "secure-pod-defaults", data: map[string]string{"secure-pod-defaults": "allowrootbounded"},
			check: func(f *Features) bool { return f.SecurePodDefaults == AllowRootBounded }},
		{name: "secure-pod-defaults ignores Allowed", data: map[string]string{"secure-pod-defaults": "Allowed"},
			check: func(f *Features) bool { return f.SecurePodDefaults == Disabled }},
		{name: "every key", data: everyFeature(), check: func(f *Features) bool {
			v := reflect.ValueOf(*f)
			for i := 0; i < v.NumField(); i++ {
				if v.Type().Field(i).Name != "SecurePodDefaults" && v.Field(i).Interface() != Allowed {
					t.Errorf("%s = %v", v.Type().Field(i).Name, v.Field(i))
				}
			}
			return true
		}},
	})
}

// everyFeature sets every flag to Allowed, which no flag has by default but dry-run.
func everyFeature() map[string]string {
	data := map[string]string{}
	for k := range featureKeys(&Features{}) {
		data[k] = "Allowed"
	}
	return data
}

func TestNewNetworkFromConfigMap(t *testing.T) {
	runParse(t, NewNetworkFromConfigMap, NetworkConfigName, []parseCase[Network]{
		{name: "empty is the defaults", check: func(n *Network) bool {
			return n.DomainTemplate == DefaultDomainTemplate && n.TagTemplate == DefaultTagTemplate && n.DefaultExternalScheme == "http" && n.RolloutDurationSeconds == 0 &&
				!n.ExternalDomainTLS && n.HTTPProtocol == HTTPEnabled && n.CertificateClass == ""
		}},
		{name: "all set", data: map[string]string{"domain-template": "{{.Name}}-{{.Namespace}}.{{.Domain}}", "tag-template": "{{.Name}}-{{.Tag}}",
			"default-external-scheme": "https", "rollout-duration": "380", "http-protocol": "Redirected", "ingress-class": "anything",
			"external-domain-tls": "whatever", "mesh-compatibility-mode": "bogus"},
			check: func(n *Network) bool {
				return n.DomainTemplate == "{{.Name}}-{{.Namespace}}.{{.Domain}}" && n.TagTemplate == "{{.Name}}-{{.Tag}}" &&
					n.DefaultExternalScheme == "https" && n.RolloutDurationSeconds == 380 && n.HTTPProtocol == HTTPRedirected && !n.ExternalDomainTLS
			}},
		{name: "external-domain-tls Enabled, any case; certificate-class", data: map[string]string{"external-domain-tls": "eNaBlEd", "certificate-class": "c"},
			check: func(n *Network) bool { return n.ExternalDomainTLS && n.CertificateClass == "c" }},
		{name: "legacy auto-tls, certificate.class, httpProtocol", data: map[string]string{"auto-tls": "Enabled", "certificate.class": "old", "httpProtocol": "redirected"},
			check: func(n *Network) bool {
				return n.ExternalDomainTLS && n.CertificateClass == "old" && n.HTTPProtocol == HTTPRedirected
			}},
		{name: "external-domain-tls overrides auto-tls", data: map[string]string{"auto-tls": "Enabled", "external-domain-tls": "Disabled"},
			check: func(n *Network) bool { return !n.ExternalDomainTLS }},
		{name: "http-protocol empty is enabled", data: map[string]string{"http-protocol": ""},
			check: func(n *Network) bool { return n.HTTPProtocol == HTTPEnabled }},
		{name: "legacy keys", data: map[string]string{"domainTemplate": "{{.Name}}.{{.Domain}}", "tagTemplate": "{{.Tag}}--{{.Name}}",
			"defaultExternalScheme": "https", "rolloutDuration": "5"},
			check: func(n *Network) bool {
				return n.DomainTemplate == "{{.Name}}.{{.Domain}}" && n.TagTemplate == "{{.Tag}}--{{.Name}}" && n.DefaultExternalScheme == "https" && n.RolloutDurationSeconds == 5
			}},
		{name: "kebab wins", data: map[string]string{"domainTemplate": "{{.Name}}.{{.Domain}}", "domain-template": "{{.Name}}.x.{{.Domain}}"},
			check: func(n *Network) bool { return n.DomainTemplate == "{{.Name}}.x.{{.Domain}}" }},
		{name: "rollout-duration with a unit", data: map[string]string{"rollout-duration": "380s"}, wantErr: "rollout-duration"},
		{name: "rollout-duration negative", data: map[string]string{"rollout-duration": "-1"}, wantErr: "rollout-duration"},
		{name: "domain-template does not parse", data: map[string]string{"domain-template": "{{.Name"}, wantErr: "domain-template"},
		{name: "domain-template does not execute", data: map[string]string{"domain-template": "{{.Nope}}.{{.Domain}}"}, wantErr: "domain-template"},
		{name: "domain-template gives no host", data: map[string]string{"domain-template": ""}, wantErr: "domain-template"},
		{name: "domain-template gives a path", data: map[string]string{"domain-template": "{{.Domain}}/{{.Name}}"}, wantErr: "path"},
		{name: "tag-template does not execute", data: map[string]string{"tag-template": "{{.Domain}}"}, wantErr: "tag-template"},
		{name: "bad http-protocol", data: map[string]string{"http-protocol": "sometimes"}, wantErr: "http-protocol"},
		{name: "bad bool", data: map[string]string{"autocreate-cluster-domain-claims": "maybe"}, wantErr: "autocreate-cluster-domain-claims"},
		{name: "bad system-internal-tls", data: map[string]string{"system-internal-tls": "on"}, wantErr: "system-internal-tls"},
		{name: "bad selector yaml", data: map[string]string{"namespace-wildcard-cert-selector": "matchLabels: [1"}, wantErr: "namespace-wildcard-cert-selector"},
		{name: "empty selector is unset", data: map[string]string{"namespace-wildcard-cert-selector": ""}, check: func(*Network) bool { return true }},
	})
}

func TestNewCertManagerFromConfigMap(t *testing.T) {
	runParse(t, NewCertManagerFromConfigMap, CertManagerConfigName, []parseCase[CertManager]{
		{name: "empty: Knative's self-signed ClusterIssuer", check: func(c *CertManager) bool {
			return c.IssuerRef == IssuerRef{Kind: "ClusterIssuer", Name: "knative-selfsigned-issuer"}
		}},
		{name: "issuerRef", data: map[string]string{"issuerRef": "kind: Issuer\nname: mine"},
			check: func(c *CertManager) bool { return c.IssuerRef == IssuerRef{Kind: "Issuer", Name: "mine"} }},
		{name: "bad yaml", data: map[string]string{"issuerRef": "kind: [1"}, wantErr: "issuerRef"},
		{name: "no name", data: map[string]string{"clusterLocalIssuerRef": "kind: Issuer"}, wantErr: "clusterLocalIssuerRef"},
	})
}

func TestNewDomainFromConfigMap(t *testing.T) {
	runParse(t, NewDomainFromConfigMap, DomainConfigName, []parseCase[Domain]{
		{name: "empty: Ferry's example.com catch-all", check: func(d *Domain) bool { return reflect.DeepEqual(d, DefaultDomain()) }},
		{name: "example ignored", data: map[string]string{ExampleKey: "anything: [", "a.com": ""},
			check: func(d *Domain) bool {
				return reflect.DeepEqual(d.Domains, map[string]DomainSelector{"a.com": {Type: DomainTypeWildcard}})
			}},
		{name: "selectors and a catch-all", data: map[string]string{"example.com": "", "example.org": "selector:\n  app: nonprofit\n",
			"svc.cluster.local": "selector:\n  app: secret", "w.com": "selector: {app: w}\ntype: wildcard"},
			check: func(d *Domain) bool {
				return reflect.DeepEqual(d.Domains, map[string]DomainSelector{
					"example.com":       {Type: DomainTypeWildcard},
					"example.org":       {Selector: map[string]string{"app": "nonprofit"}},
					"svc.cluster.local": {Selector: map[string]string{"app": "secret"}},
					"w.com":             {Selector: map[string]string{"app": "w"}, Type: DomainTypeWildcard},
				})
			}},
		{name: "no catch-all: example.com added", data: map[string]string{"example.org": "selector:\n  app: nonprofit"},
			check: func(d *Domain) bool { _, ok := d.Domains[DefaultDomainName]; return ok && len(d.Domains) == 2 }},
		{name: "empty selector is a catch-all", data: map[string]string{"a.com": "selector: {}"},
			check: func(d *Domain) bool { return len(d.Domains) == 1 && d.Domains["a.com"].Type == DomainTypeWildcard }},
		{name: "bad yaml", data: map[string]string{"bad": "yaml: all: day"}, wantErr: `domain "bad"`},
		{name: "a string is no entry", data: map[string]string{"a.com": "app=foo"}, wantErr: `domain "a.com"`},
	})
}

func TestLookupDomainForLabels(t *testing.T) {
	d, err := NewDomainFromConfigMap(cm(DomainConfigName, map[string]string{
		"example.com":       "",
		"example.org":       "selector:\n  app: nonprofit",
		"svc.cluster.local": "selector:\n  app: secret",
		"prod.example.com":  "selector:\n  app: foo\n  version: prod",
		"foo.example.com":   "selector:\n  app: foo",
		"b.tie.com":         "selector:\n  tie: x",
		"a.tie.com":         "selector:\n  tie: x",
	}))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		labels map[string]string
		want   string
	}{
		{nil, "example.com"},
		{map[string]string{"app": "other"}, "example.com"},
		{map[string]string{"app": "nonprofit"}, "example.org"},
		{map[string]string{"app": "secret"}, ClusterLocalDomain},
		{map[string]string{"app": "foo"}, "foo.example.com"},
		{map[string]string{"app": "foo", "version": "prod"}, "prod.example.com"},
		{map[string]string{"app": "foo", "version": "dev"}, "foo.example.com"},
		{map[string]string{"tie": "x"}, "a.tie.com"},
		{map[string]string{"app": "nonprofit", netv1alpha1.VisibilityLabelKey: netv1alpha1.VisibilityClusterLocal}, ClusterLocalDomain},
	}
	for _, tc := range tests {
		if got := d.LookupDomainForLabels(tc.labels); got != tc.want {
			t.Errorf("LookupDomainForLabels(%v) = %q, want %q", tc.labels, got, tc.want)
		}
	}
	if got := DefaultDomain().LookupDomainForLabels(map[string]string{"app": "x"}); got != DefaultDomainName {
		t.Errorf("default lookup = %q", got)
	}
	// Two catch-alls: the smallest wins.
	two, _ := NewDomainFromConfigMap(cm(DomainConfigName, map[string]string{"z.com": "", "m.com": ""}))
	if got := two.LookupDomainForLabels(nil); got != "m.com" {
		t.Errorf("two catch-alls: %q", got)
	}
}

func TestTemplates(t *testing.T) {
	n, err := NewNetworkFromConfigMap(cm(NetworkConfigName, map[string]string{
		"domain-template": `{{.Name}}.{{.Namespace}}.{{index .Annotations "zone"}}.{{.Domain}}`,
		"tag-template":    "{{.Name}}-at-{{.Tag}}",
	}))
	if err != nil {
		t.Fatal(err)
	}
	v := DomainTemplateValues{Name: "hello", Namespace: "ns", Domain: "example.com", Annotations: map[string]string{"zone": "eu"}}
	if got, err := n.DomainName(v, false); err != nil || got != "hello.ns.eu.example.com" {
		t.Errorf("DomainName = %q, %v", got, err)
	}
	// Cluster-local hosts ignore domain-template.
	v.Domain = ClusterLocalDomain
	if got, err := n.DomainName(v, true); err != nil || got != "hello.ns.svc.cluster.local" {
		t.Errorf("cluster-local DomainName = %q, %v", got, err)
	}
	if got, err := n.HostName("hello", "v2"); err != nil || got != "hello-at-v2" {
		t.Errorf("HostName = %q, %v", got, err)
	}
	if got, _ := n.HostName("hello", ""); got != "hello" {
		t.Errorf("HostName without tag = %q", got)
	}
	// A host that is not a valid FQDN is an error at use, not at load.
	v = DomainTemplateValues{Name: "hello", Namespace: "ns", Domain: "example.com"}
	if got, err := n.DomainName(v, false); err == nil || !strings.Contains(err.Error(), "invalid domain name") {
		t.Errorf("missing annotation: %q, %v", got, err)
	}
	upper, err := NewNetworkFromConfigMap(cm(NetworkConfigName, map[string]string{"domain-template": "{{.Name}}.{{.Namespace}}.Example.com"}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := upper.DomainName(v, false); err == nil {
		t.Error("upper-case host accepted")
	}
}
