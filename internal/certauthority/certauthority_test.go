package certauthority

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func newCA(t *testing.T) *CA {
	t.Helper()
	ca, err := New(pkix.Name{CommonName: "test CA"}, x509.KeyUsageCertSign, now, now.AddDate(10, 0, 0))
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// leafOf reads a signed pair as a TLS server or client would: leafOf(t)(ca.Serving(...)).
func leafOf(t *testing.T) func(certPEM, keyPEM []byte, err error) *x509.Certificate {
	return func(certPEM, keyPEM []byte, err error) *x509.Certificate {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatalf("the certificate and key are not a pair: %v", err)
		}
		return pair.Leaf
	}
}

func verify(ca *CA, leaf *x509.Certificate, name string, usage x509.ExtKeyUsage) error {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.CertPEM)
	_, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{usage}, CurrentTime: now})
	return err
}

// TestServing: a serving certificate verifies against its CA for each of its names
// and IPs, as a server, and for nothing else.
func TestServing(t *testing.T) {
	ca := newCA(t)
	leaf := leafOf(t)(ca.Serving([]string{"a.example", "b.example"}, []net.IP{net.ParseIP("127.0.0.1")}, now, now.Add(time.Hour)))
	if leaf.Subject.CommonName != "a.example" {
		t.Errorf("common name %q, want the first DNS name", leaf.Subject.CommonName)
	}
	for _, tc := range []struct {
		name  string
		usage x509.ExtKeyUsage
		ok    bool
	}{
		{"a.example", x509.ExtKeyUsageServerAuth, true},
		{"b.example", x509.ExtKeyUsageServerAuth, true},
		{"127.0.0.1", x509.ExtKeyUsageServerAuth, true},
		{"c.example", x509.ExtKeyUsageServerAuth, false},
		{"127.0.0.2", x509.ExtKeyUsageServerAuth, false},
		{"a.example", x509.ExtKeyUsageClientAuth, false},
	} {
		if err := verify(ca, leaf, tc.name, tc.usage); (err == nil) != tc.ok {
			t.Errorf("%s for usage %v: %v, want ok=%v", tc.name, tc.usage, err, tc.ok)
		}
	}
	if err := verify(newCA(t), leaf, "a.example", x509.ExtKeyUsageServerAuth); err == nil {
		t.Error("the certificate verifies against another CA")
	}
}

// TestClient: a client certificate carries its subject (the user and its groups) and
// verifies against its CA as a client, not as a server.
func TestClient(t *testing.T) {
	ca := newCA(t)
	subject := pkix.Name{CommonName: "user", Organization: []string{"group"}}
	leaf := leafOf(t)(ca.Client(subject, now, now.Add(time.Hour)))
	if leaf.Subject.CommonName != "user" || len(leaf.Subject.Organization) != 1 || leaf.Subject.Organization[0] != "group" {
		t.Errorf("subject %v, want %v", leaf.Subject, subject)
	}
	if err := verify(ca, leaf, "", x509.ExtKeyUsageClientAuth); err != nil {
		t.Errorf("as a client: %v", err)
	}
	if err := verify(ca, leaf, "", x509.ExtKeyUsageServerAuth); err == nil {
		t.Error("a client certificate verifies as a server's")
	}
}

// TestValidity: a certificate is valid from an hour before it was made (clocks a little
// behind) until the notAfter it was given; serial numbers differ.
func TestValidity(t *testing.T) {
	ca := newCA(t)
	leaf := leafOf(t)(ca.Serving([]string{"a.example"}, nil, now, now.Add(90*24*time.Hour)))
	if !leaf.NotBefore.Equal(now.Add(-time.Hour)) || !leaf.NotAfter.Equal(now.Add(90*24*time.Hour)) {
		t.Errorf("valid %v to %v", leaf.NotBefore, leaf.NotAfter)
	}
	if !ca.Cert.NotAfter.Equal(now.AddDate(10, 0, 0)) {
		t.Errorf("CA valid to %v", ca.Cert.NotAfter)
	}
	if leaf.SerialNumber.Cmp(ca.Cert.SerialNumber) == 0 || leaf.SerialNumber.Sign() <= 0 {
		t.Errorf("serial numbers %v (leaf) and %v (CA)", leaf.SerialNumber, ca.Cert.SerialNumber)
	}
}

// TestExpiresWithin: renewal is due once now+d reaches past NotAfter.
func TestExpiresWithin(t *testing.T) {
	cert := &x509.Certificate{NotAfter: now.Add(30 * 24 * time.Hour)}
	for _, tc := range []struct {
		at   time.Time
		d    time.Duration
		want bool
	}{
		{now, 29 * 24 * time.Hour, false},
		{now, 30 * 24 * time.Hour, false},
		{now, 31 * 24 * time.Hour, true},
		{now.Add(2 * 24 * time.Hour), 29 * 24 * time.Hour, true},
		{now.Add(31 * 24 * time.Hour), 0, true},
	} {
		if got := ExpiresWithin(cert, tc.at, tc.d); got != tc.want {
			t.Errorf("at %v within %v: %v, want %v", tc.at, tc.d, got, tc.want)
		}
	}
}

// TestLoad: a CA kept as PEM signs again after loading, and its leaves verify against
// the CA certificate kept; a key that is not the certificate's is refused. The key is
// kept as SEC 1, as every older Ferry wrote it.
func TestLoad(t *testing.T) {
	ca := newCA(t)
	keyPEM, err := ca.KeyPEM()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(string(keyPEM), "-----BEGIN EC PRIVATE KEY-----\n") {
		t.Errorf("the key is kept as\n%s", keyPEM)
	}
	loaded, err := Load(ca.CertPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf := leafOf(t)(loaded.Serving([]string{"a.example"}, nil, now, now.Add(time.Hour)))
	if err := verify(ca, leaf, "a.example", x509.ExtKeyUsageServerAuth); err != nil {
		t.Errorf("a leaf of the loaded CA: %v", err)
	}
	otherKey, _ := newCA(t).KeyPEM()
	if _, err := Load(ca.CertPEM, otherKey); err == nil {
		t.Error("a CA with another's key was loaded")
	}
}

// TestParseCert: the first certificate of a bundle is read; anything else is an error.
func TestParseCert(t *testing.T) {
	ca, other := newCA(t), newCA(t)
	got, err := ParseCert(append(append([]byte{}, ca.CertPEM...), other.CertPEM...))
	if err != nil || !got.Equal(ca.Cert) {
		t.Errorf("ParseCert of a bundle: %v, %v; want the first certificate", got, err)
	}
	keyPEM, _ := ca.KeyPEM()
	for name, b := range map[string][]byte{"garbage": []byte("garbage"), "a key": keyPEM, "nothing": nil} {
		if _, err := ParseCert(b); err == nil {
			t.Errorf("%s parsed as a certificate", name)
		}
	}
}
