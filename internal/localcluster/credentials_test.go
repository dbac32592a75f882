package localcluster

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/internal/certauthority"
)

// A data directory's API server certificate is made again when it misses a name the
// API server now has, or expires within servingCertRenewal: an old data directory
// would otherwise serve an expired certificate.
func TestServingCertCovers(t *testing.T) {
	now := time.Now()
	ca, err := certauthority.New(pkix.Name{CommonName: "test"}, x509.KeyUsageCertSign, now, now.Add(10*365*24*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	ips := []net.IP{net.ParseIP("127.0.0.1")}
	for _, tc := range []struct {
		name     string
		names    []string
		validFor time.Duration
		want     bool
	}{
		{"covers, a year left", []string{"kubernetes.default.svc"}, 365 * 24 * time.Hour, true},
		{"a name missing", nil, 365 * 24 * time.Hour, false},
		{"expires in a week", []string{"kubernetes.default.svc"}, 7 * 24 * time.Hour, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cert, _, err := ca.Serving(tc.names, ips, now, now.Add(tc.validFor))
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "apiserver.crt")
			if err := os.WriteFile(file, cert, 0o600); err != nil {
				t.Fatal(err)
			}
			if got := servingCertCovers(file, ips, []string{"kubernetes.default.svc"}); got != tc.want {
				t.Errorf("servingCertCovers = %v, want %v", got, tc.want)
			}
		})
	}
}
