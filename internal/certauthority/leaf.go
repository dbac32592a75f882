package certauthority

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"time"
)

// Serving signs a TLS server certificate for dnsNames and ips, with a new key; its
// common name is the first DNS name.
func (ca *CA) Serving(dnsNames []string, ips []net.IP, now, notAfter time.Time) (certPEM, keyPEM []byte, err error) {
	var cn string
	if len(dnsNames) > 0 {
		cn = dnsNames[0]
	}
	return ca.sign(&x509.Certificate{
		Subject:     pkix.Name{CommonName: cn},
		DNSNames:    dnsNames,
		IPAddresses: ips,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}, now, notAfter)
}

// Client signs a TLS client certificate for subject, with a new key: the common name is
// the user, the organizations its groups, as Kubernetes reads them.
func (ca *CA) Client(subject pkix.Name, now, notAfter time.Time) (certPEM, keyPEM []byte, err error) {
	return ca.sign(&x509.Certificate{
		Subject:     subject,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}, now, notAfter)
}

// sign completes tmpl (serial number, validity, key usage) and signs it for a new key.
func (ca *CA) sign(tmpl *x509.Certificate, now, notAfter time.Time) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serialNumber()
	tmpl.NotBefore, tmpl.NotAfter = notBefore(now), notAfter
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = EncodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return EncodeCert(der), keyPEM, nil
}

// ExpiresWithin says whether cert is no longer valid at now+d: due for renewal when d
// is how long before expiry its user renews.
func ExpiresWithin(cert *x509.Certificate, now time.Time, d time.Duration) bool {
	return now.Add(d).After(cert.NotAfter)
}
