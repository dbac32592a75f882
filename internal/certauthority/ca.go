package certauthority

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"time"
)

// CA is a CA certificate and the key it signs with.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	// CertPEM is Cert, PEM-encoded: what clients are given to trust.
	CertPEM []byte
}

// New makes a self-signed CA with a new key. usage is the CA certificate's key usage
// (x509.KeyUsageCertSign and whatever else its user has always set).
func New(subject pkix.Name, usage x509.KeyUsage, now, notAfter time.Time) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serialNumber(),
		Subject:               subject,
		NotBefore:             notBefore(now),
		NotAfter:              notAfter,
		KeyUsage:              usage,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, CertPEM: EncodeCert(der)}, nil
}

// Load reads a CA kept as PEM, as CertPEM and KeyPEM write it.
func Load(certPEM, keyPEM []byte) (*CA, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	key, ok := pair.PrivateKey.(*ecdsa.PrivateKey)
	if !ok {
		return nil, errors.New("the key is not ECDSA")
	}
	return &CA{Cert: pair.Leaf, Key: key, CertPEM: certPEM}, nil
}

// KeyPEM is the CA's key, PEM-encoded, for keeping it.
func (ca *CA) KeyPEM() ([]byte, error) { return EncodeKey(ca.Key) }

// notBefore backdates a certificate by an hour, so that a peer whose clock is a little
// behind accepts it at once.
func notBefore(now time.Time) time.Time { return now.Add(-time.Hour) }
