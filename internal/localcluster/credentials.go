package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"

	"github.com/ferry-serving/ferry/internal/certauthority"
)

// credentials are the files the control plane authenticates with. They are created
// once per data directory and reused, so a kubeconfig stays valid across restarts.
type credentials struct {
	token           string // the admin's bearer token (system:masters)
	controllerToken string // ControllerUser's, new at every start: only this process uses it
	tokenFile       string
	saKeyFile       string // signs and verifies service account tokens
	servingCertFile string // the API server's certificate, followed by its CA
	servingKeyFile  string
	caFile          string // the CA alone, for clients
}

// servingNames are the API server's names in its certificate: a pod's client-go dials
// kubernetes.default.svc, or the kubernetes Service's ClusterIP.
var servingNames = []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc",
	"kubernetes.default.svc.cluster.local"}

// loadOrCreateCredentials loads the credentials kept in dir, creating what is missing.
// The API server's certificate covers 127.0.0.1 and ips; one that does not (made by an
// older ferry up, or before pods reached the API server) is made again.
func loadOrCreateCredentials(dir string, ips ...net.IP) (*credentials, error) {
	ips = append([]net.IP{net.ParseIP("127.0.0.1")}, ips...)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	c := &credentials{
		tokenFile:       filepath.Join(dir, "tokens.csv"),
		saKeyFile:       filepath.Join(dir, "service-account.key"),
		servingCertFile: filepath.Join(dir, "apiserver.crt"),
		servingKeyFile:  filepath.Join(dir, "apiserver.key"),
		caFile:          filepath.Join(dir, "ca.crt"),
	}
	tokenRaw := filepath.Join(dir, "admin.token")
	if b, err := os.ReadFile(tokenRaw); err == nil {
		c.token = string(b)
	} else if errors.Is(err, os.ErrNotExist) {
		if c.token, err = newToken(); err != nil {
			return nil, err
		}
		if err := os.WriteFile(tokenRaw, []byte(c.token), 0o600); err != nil {
			return nil, err
		}
	} else {
		return nil, err
	}
	var err error
	if c.controllerToken, err = newToken(); err != nil {
		return nil, err
	}
	tokens := c.token + ",admin,admin,system:masters\n" +
		c.controllerToken + "," + ControllerUser + "," + ControllerUser + ",system:masters\n"
	if err := os.WriteFile(c.tokenFile, []byte(tokens), 0o600); err != nil {
		return nil, err
	}
	if _, err := os.Stat(c.saKeyFile); errors.Is(err, os.ErrNotExist) {
		// ECDSA P-256 (ES256): the API server signs every pod's token as its sandbox is
		// made, on the way of a cold start; 0.06 ms a signature where RSA-2048 takes
		// 1.5 ms here. A data directory with an RSA key keeps it.
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		der, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, err
		}
		block := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
		if err := os.WriteFile(c.saKeyFile, block, 0o600); err != nil {
			return nil, err
		}
	}
	if !servingCertCovers(c.servingCertFile, ips, servingNames) {
		cert, key, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", ips, servingNames)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(c.servingKeyFile, key, 0o600); err != nil {
			return nil, err
		}
		if err := os.WriteFile(c.servingCertFile, cert, 0o600); err != nil {
			return nil, err
		}
		// The bundle is the serving certificate then its CA; clients and the
		// controller manager's root CA publisher want the CA alone.
		bundle, err := certutil.ParseCertsPEM(cert)
		if err != nil {
			return nil, fmt.Errorf("the generated serving certificate: %w", err)
		}
		if err := os.WriteFile(c.caFile, certauthority.EncodeCert(bundle[len(bundle)-1].Raw), 0o600); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// servingCertRenewal is how long before the API server's certificate (a year's, from
// client-go's certutil) expires that a start makes a new one.
const servingCertRenewal = 30 * 24 * time.Hour

// servingCertCovers says whether the certificate in file is valid for every IP and
// name, and for at least servingCertRenewal more.
func servingCertCovers(file string, ips []net.IP, names []string) bool {
	b, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	cert, err := certauthority.ParseCert(b)
	if err != nil || certauthority.ExpiresWithin(cert, time.Now(), servingCertRenewal) {
		return false
	}
	for _, ip := range ips {
		if cert.VerifyHostname(ip.String()) != nil {
			return false
		}
	}
	for _, name := range names {
		if cert.VerifyHostname(name) != nil {
			return false
		}
	}
	return true
}

// newToken returns a random bearer token.
func newToken() (string, error) {
	buf := make([]byte, 24)
	if _, err := rand.Read(buf); err != nil {
		return "", err
	}
	return hex.EncodeToString(buf), nil
}

// writeKubeconfig writes an admin kubeconfig for cfg with the CA and token inline, so
// that it keeps working when copied elsewhere.
func writeKubeconfig(path string, cfg *rest.Config) error {
	ca, err := os.ReadFile(cfg.CAFile)
	if err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["ferry"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: ca, DisableCompression: cfg.DisableCompression}
	kc.AuthInfos["ferry-admin"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken}
	kc.Contexts["ferry"] = &clientcmdapi.Context{Cluster: "ferry", AuthInfo: "ferry-admin", Namespace: "default"}
	kc.CurrentContext = "ferry"
	return clientcmd.WriteToFile(*kc, path)
}
