package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/yaml"
)

// Knative's default templates.
const (
	DefaultDomainTemplate = "{{.Name}}.{{.Namespace}}.{{.Domain}}"
	DefaultTagTemplate    = "{{.Tag}}-{{.Name}}"
)

// Network is the part of config-network that Ferry's control plane and gateway use.
// The other keys Knative reads are validated as Knative does (so that a ConfigMap one
// accepts the other accepts) and otherwise ignored.
type Network struct {
	DomainTemplate        string
	TagTemplate           string
	DefaultExternalScheme string
	// RolloutDurationSeconds is rollout-duration: the gradual rollout of Routes without
	// their own rollout-duration annotation (0: traffic moves at once).
	RolloutDurationSeconds int
	// ExternalDomainTLS is external-domain-tls (legacy auto-tls, autoTLS): Routes get a
	// Certificate per external host, DomainMappings one for their domain, and https URLs
	// once it is Ready. Only "Enabled", in any case, turns it on; any other value is
	// off, never an error (Knative's rule).
	ExternalDomainTLS bool
	// HTTPProtocol is http-protocol (legacy httpProtocol): HTTPEnabled, HTTPRedirected
	// or HTTPDisabled (Knative's deprecated value: no httpOption on the KIngress).
	HTTPProtocol string
	// CertificateClass is certificate-class (legacy certificate.class) as set; ""
	// when the ConfigMap sets none, so that the reconcilers pick the default (Knative's
	// cert-manager class, or ferry up's local CA).
	CertificateClass string
	// AutocreateClusterDomainClaims lets the DomainMapping reconciler create the
	// ClusterDomainClaim of a domain nobody has claimed; off, an administrator creates
	// each claim and a DomainMapping without one is not Ready.
	AutocreateClusterDomainClaims bool

	domainTemplate, tagTemplate *template.Template
}

// http-protocol's values, lower-cased as Knative stores them.
const (
	HTTPEnabled    = "enabled"
	HTTPRedirected = "redirected"
	HTTPDisabled   = "disabled"
)

// DefaultNetwork is Knative's config-network defaults.
func DefaultNetwork() *Network {
	n := &Network{
		DomainTemplate:        DefaultDomainTemplate,
		TagTemplate:           DefaultTagTemplate,
		DefaultExternalScheme: "http",
		HTTPProtocol:          HTTPEnabled,
	}
	if err := n.compile(); err != nil {
		panic(err) // the defaults are constants
	}
	return n
}

// DomainTemplateValues are what domain-template may use.
type DomainTemplateValues struct {
	Name        string
	Namespace   string
	Domain      string
	Annotations map[string]string
	Labels      map[string]string
}

// TagTemplateValues are what tag-template may use.
type TagTemplateValues struct {
	Name string
	Tag  string
}

// NewNetworkFromConfigMap parses config-network with Knative's keys, legacy camelCase
// spellings included (the kebab-case key wins when both are set), and its load checks:
// the templates must parse and execute and domain-template must give a host without a
// path; rollout-duration is whole non-negative seconds; http-protocol is enabled,
// redirected, disabled or ""; the bools, system-internal-tls, cluster-local-domain-tls
// and namespace-wildcard-cert-selector must be valid even though Ferry does not act on
// them.
func NewNetworkFromConfigMap(cm *corev1.ConfigMap) (*Network, error) {
	data := dataOf(cm.Data)
	n := DefaultNetwork()
	var ignored string
	var ignoredBool bool
	if err := parse(data,
		asString("domainTemplate", &n.DomainTemplate),
		asString("domain-template", &n.DomainTemplate),
		asString("tagTemplate", &n.TagTemplate),
		asString("tag-template", &n.TagTemplate),
		asString("defaultExternalScheme", &n.DefaultExternalScheme),
		asString("default-external-scheme", &n.DefaultExternalScheme),
		asInt("rolloutDuration", &n.RolloutDurationSeconds),
		asInt("rollout-duration", &n.RolloutDurationSeconds),
		asBool("autocreate-cluster-domain-claims", &n.AutocreateClusterDomainClaims),
		// Validated only.
		asBool("enable-mesh-pod-addressability", &ignoredBool),
		asBool("internal-encryption", &ignoredBool),
		asOneOf("system-internal-tls", &ignored, "enabled", "disabled"),
		asOneOf("cluster-local-domain-tls", &ignored, "enabled", "disabled"),
		asOneOf("httpProtocol", &n.HTTPProtocol, "", HTTPEnabled, HTTPRedirected, HTTPDisabled),
		asOneOf("http-protocol", &n.HTTPProtocol, "", HTTPEnabled, HTTPRedirected, HTTPDisabled),
		asString("certificate.class", &n.CertificateClass),
		asString("certificate-class", &n.CertificateClass),
	); err != nil {
		return nil, err
	}
	if n.HTTPProtocol == "" {
		n.HTTPProtocol = HTTPEnabled
	}
	for _, key := range []string{"autoTLS", "auto-tls", "external-domain-tls"} {
		if v, ok := lookup(data, key); ok {
			n.ExternalDomainTLS = strings.EqualFold(v, "enabled")
		}
	}
	if n.RolloutDurationSeconds < 0 {
		return nil, fmt.Errorf("rollout-duration must be a positive integer, but was %d", n.RolloutDurationSeconds)
	}
	if v, ok := lookup(data, "namespace-wildcard-cert-selector"); ok && v != "" {
		var ls metav1.LabelSelector
		if err := yaml.Unmarshal([]byte(v), &ls); err != nil {
			return nil, keyError("namespace-wildcard-cert-selector", err)
		}
	}
	if err := n.compile(); err != nil {
		return nil, err
	}
	return n, nil
}

// compile parses the templates and runs Knative's load-time checks on them.
func (n *Network) compile() error {
	dt, err := template.New("domain-template").Parse(n.DomainTemplate)
	if err != nil {
		return fmt.Errorf("domain-template: %w", err)
	}
	var buf bytes.Buffer
	if err := dt.Execute(&buf, DomainTemplateValues{Name: "foo", Namespace: "bar", Domain: "baz.com"}); err != nil {
		return fmt.Errorf("domain-template: %w", err)
	}
	u, err := url.Parse("https://" + buf.String())
	if err != nil {
		return fmt.Errorf("domain-template: %w", err)
	}
	if u.Hostname() == "" {
		return errors.New("domain-template: empty hostname")
	}
	if u.RequestURI() != "/" {
		return fmt.Errorf("domain-template: the host has a path: %s", u.RequestURI())
	}
	tt, err := template.New("tag-template").Parse(n.TagTemplate)
	if err != nil {
		return fmt.Errorf("tag-template: %w", err)
	}
	if err := tt.Execute(io.Discard, TagTemplateValues{Name: "foo", Tag: "v2"}); err != nil {
		return fmt.Errorf("tag-template: %w", err)
	}
	n.domainTemplate, n.tagTemplate = dt, tt
	return nil
}

// HostName is the name a Route's tag goes by: the Route's name for no tag, else
// tag-template's output. It is the first label of the tag's hosts.
func (n *Network) HostName(name, tag string) (string, error) {
	if tag == "" {
		return name, nil
	}
	t := n.tagTemplate
	if t == nil {
		var err error
		if t, err = template.New("tag-template").Parse(n.TagTemplate); err != nil {
			return "", err
		}
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, TagTemplateValues{Name: name, Tag: tag}); err != nil {
		return "", fmt.Errorf("error executing the tag-template: %w", err)
	}
	return buf.String(), nil
}

// DomainName runs domain-template (Knative's default one when clusterLocal) and checks
// that the result is a fully qualified domain name.
func (n *Network) DomainName(v DomainTemplateValues, clusterLocal bool) (string, error) {
	t := n.domainTemplate
	if clusterLocal || t == nil {
		t = defaultDomainTemplate
		if !clusterLocal && n.DomainTemplate != DefaultDomainTemplate {
			var err error
			if t, err = template.New("domain-template").Parse(n.DomainTemplate); err != nil {
				return "", err
			}
		}
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, v); err != nil {
		return "", fmt.Errorf("error executing the domain-template: %w", err)
	}
	host := buf.String()
	if errs := validation.IsFullyQualifiedDomainName(field.NewPath("url"), host); len(errs) > 0 {
		return "", fmt.Errorf("invalid domain name %q: %w", host, errs.ToAggregate())
	}
	return host, nil
}

var defaultDomainTemplate = template.Must(template.New("domain-template").Parse(DefaultDomainTemplate))
