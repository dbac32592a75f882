package localcluster

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"os"
	"path/filepath"
	"time"

	"github.com/ferry-serving/ferry/internal/certauthority"
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
	notAfter := now.AddDate(10, 0, 0)
	ca, err := certauthority.New(pkix.Name{CommonName: "ferry up kubelet client CA"}, x509.KeyUsageCertSign, now, notAfter)
	if err != nil {
		return nil, err
	}
	// The name kubeadm gives it; system:masters, so a kubelet's SubjectAccessReview
	// of nodes/proxy would pass too.
	cert, key, err := ca.Client(pkix.Name{CommonName: "kube-apiserver-kubelet-client", Organization: []string{"system:masters"}}, now, notAfter)
	if err != nil {
		return nil, err
	}
	for file, data := range map[string][]byte{k.caFile: ca.CertPEM, k.certFile: cert, k.keyFile: key} {
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return nil, err
		}
	}
	return k, nil
}
