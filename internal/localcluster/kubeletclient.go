package localcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"time"
)

// kubeletClient is how the API server proves itself to the program node's kubelet
// API (kubectl logs, exec, attach, port-forward): a client certificate of a CA that
// only this start of the cluster has, as --kubelet-client-certificate and a kubelet's
// --client-ca-file pair them on a cluster.
type kubeletClient struct {
	caFile, certFile, keyFile string
}

// newKubeletClient makes the CA and the API server's client certificate in dir, new
// at every start: nothing but this run's API server and node use them.
func newKubeletClient(dir string) (*kubeletClient, error) {
	k := &kubeletClient{caFile: filepath.Join(dir, "kubelet-client-ca.crt"),
		certFile: filepath.Join(dir, "apiserver-kubelet-client.crt"), keyFile: filepath.Join(dir, "apiserver-kubelet-client.key")}
	now := time.Now()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ferry up kubelet client CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	// The name kubeadm gives it; system:masters, so a kubelet's SubjectAccessReview
	// of nodes/proxy would pass too.
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(2),
		Subject:   pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}},
		NotBefore: now.Add(-time.Hour), NotAfter: now.AddDate(10, 0, 0),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	for file, block := range map[string]*pem.Block{
		k.caFile:   {Type: "CERTIFICATE", Bytes: caDER},
		k.certFile: {Type: "CERTIFICATE", Bytes: der},
		k.keyFile:  {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(file, pem.EncodeToMemory(block), 0o600); err != nil {
			return nil, err
		}
	}
	return k, nil
}
