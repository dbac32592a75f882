package config

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// CertManagerConfigName is Knative's ConfigMap of the cert-manager provider.
const CertManagerConfigName = "config-certmanager"

// IssuerRef names a cert-manager Issuer or ClusterIssuer.
type IssuerRef struct {
	Kind  string `json:"kind,omitempty"`
	Name  string `json:"name"`
	Group string `json:"group,omitempty"`
}

// CertManager is config-certmanager: the issuers of the cert-manager Certificates made
// for Knative Certificates. Ferry makes external-domain ones only; the other two keys
// are validated as Knative does.
type CertManager struct {
	// IssuerRef is issuerRef, for external-domain Certificates.
	IssuerRef IssuerRef
}

// DefaultCertManager is Knative's default: the ClusterIssuer knative-selfsigned-issuer.
func DefaultCertManager() *CertManager {
	return &CertManager{IssuerRef: IssuerRef{Kind: "ClusterIssuer", Name: "knative-selfsigned-issuer"}}
}

// NewCertManagerFromConfigMap parses config-certmanager: issuerRef,
// clusterLocalIssuerRef and systemInternalIssuerRef are YAML object references; one
// that does not parse is a load error.
func NewCertManagerFromConfigMap(cm *corev1.ConfigMap) (*CertManager, error) {
	c := DefaultCertManager()
	data := dataOf(cm.Data)
	for _, key := range []string{"issuerRef", "clusterLocalIssuerRef", "systemInternalIssuerRef"} {
		v, ok := lookup(data, key)
		if !ok {
			continue
		}
		ref := IssuerRef{}
		if err := yaml.Unmarshal([]byte(v), &ref); err != nil {
			return nil, keyError(key, err)
		}
		if ref.Name == "" {
			return nil, keyError(key, fmt.Errorf("no name"))
		}
		if key == "issuerRef" {
			c.IssuerRef = ref
		}
	}
	return c, nil
}
