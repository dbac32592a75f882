package admission

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"
	"time"

	"github.com/ferry-serving/ferry/internal/certauthority"
)

// The certificates are made by certauthority: client-go's cert helpers make only a
// self-signed pair with a fixed validity and do not return the CA separately, and the
// API server needs exactly that CA in each webhook's caBundle.
const (
	caValidity   = 10 * 365 * 24 * time.Hour
	certValidity = 365 * 24 * time.Hour
	// renewBefore: a serving certificate this close to expiry is replaced.
	renewBefore = 30 * 24 * time.Hour
)

// certBundle is PEM: the CA certificate (for caBundle) and the serving pair.
type certBundle struct {
	CA, Cert, Key []byte
}

// newCertBundle makes a CA and a serving certificate it signs, for the given DNS names
// (the first its common name) and IPs.
func newCertBundle(dnsNames []string, ips []net.IP) (*certBundle, error) {
	now := time.Now()
	ca, err := certauthority.New(pkix.Name{CommonName: "ferry-webhook-ca"},
		x509.KeyUsageCertSign|x509.KeyUsageDigitalSignature, now, now.Add(caValidity))
	if err != nil {
		return nil, err
	}
	cert, key, err := ca.Serving(dnsNames, ips, now, now.Add(certValidity))
	if err != nil {
		return nil, err
	}
	return &certBundle{CA: ca.CertPEM, Cert: cert, Key: key}, nil
}

// keyPair parses the serving pair.
func (b *certBundle) keyPair() (*tls.Certificate, error) {
	c, err := tls.X509KeyPair(b.Cert, b.Key)
	if err != nil {
		return nil, fmt.Errorf("the webhook's serving certificate: %w", err)
	}
	return &c, nil
}

// expiresSoon says whether the serving certificate needs replacing (or cannot be read).
func (b *certBundle) expiresSoon(now time.Time) bool {
	c, err := certauthority.ParseCert(b.Cert)
	return err != nil || certauthority.ExpiresWithin(c, now, renewBefore)
}
