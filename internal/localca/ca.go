package localca

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/ferry-serving/ferry/internal/certauthority"
)

// The files of the CA in the data directory.
const (
	CertFile = "ca.crt"
	KeyFile  = "ca.key"
)

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 90 * 24 * time.Hour
)

// CA is the local CA kept in the data directory: it signs the serving certificates
// of the Certificates of its class.
type CA struct {
	authority *certauthority.CA
}

// LoadOrCreate reads the CA in dir, or creates it there if neither file exists.
func LoadOrCreate(dir string) (*CA, error) {
	certPath, keyPath := filepath.Join(dir, CertFile), filepath.Join(dir, KeyFile)
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	if errors.Is(certErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist) {
		return create(certPath, keyPath)
	}
	if err := errors.Join(certErr, keyErr); err != nil {
		return nil, fmt.Errorf("reading the local CA: %w", err)
	}
	ca, err := certauthority.Load(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("the local CA in %s: %w", dir, err)
	}
	return &CA{authority: ca}, nil
}

func create(certPath, keyPath string) (*CA, error) {
	now := time.Now()
	ca, err := certauthority.New(pkix.Name{CommonName: "Ferry local CA", Organization: []string{"Ferry"}},
		x509.KeyUsageCertSign|x509.KeyUsageCRLSign, now, now.Add(caValidity))
	if err != nil {
		return nil, err
	}
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		return nil, err
	}
	// The key first: a CA certificate without its key would be unusable.
	if err := os.WriteFile(keyPath, keyPEM, 0o600); err != nil {
		return nil, fmt.Errorf("writing the local CA: %w", err)
	}
	if err := os.WriteFile(certPath, ca.CertPEM, 0o644); err != nil {
		return nil, fmt.Errorf("writing the local CA: %w", err)
	}
	return &CA{authority: ca}, nil
}

// CertPEM is the CA's certificate, PEM-encoded.
func (ca *CA) CertPEM() []byte { return ca.authority.CertPEM }

// Sign issues a serving certificate for dnsNames, the first its common name.
func (ca *CA) Sign(dnsNames []string, now time.Time) (certPEM, keyPEM []byte, err error) {
	return ca.authority.Serving(dnsNames, nil, now, now.Add(leafValidity))
}

// Issued returns the expiry of the certificate in certPEM/keyPEM if it is a valid pair
// this CA signed for exactly dnsNames that is not due for renewal at now (a third of
// its validity left); ok is false otherwise.
func (ca *CA) Issued(certPEM, keyPEM []byte, dnsNames []string, now time.Time) (notAfter time.Time, ok bool) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil || pair.Leaf == nil {
		return time.Time{}, false
	}
	leaf := pair.Leaf
	if leaf.CheckSignatureFrom(ca.authority.Cert) != nil || !slices.Equal(leaf.DNSNames, dnsNames) {
		return time.Time{}, false
	}
	if certauthority.ExpiresWithin(leaf, now, leaf.NotAfter.Sub(leaf.NotBefore)/3) {
		return time.Time{}, false
	}
	return leaf.NotAfter, true
}
