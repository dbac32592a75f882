package gateway

import (
	"crypto/tls"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	"github.com/ferry-serving/ferry/internal/gateway/proxy"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestHTTPSListener: the HTTPS listener serves a host with a certificate over HTTP/2
// (ALPN) and HTTP/1.1, refuses the handshake for a host without one; the plain
// listener redirects a Redirected host with a certificate (301, to the HTTPS port when
// the client named a port) and serves the others.
func TestHTTPSListener(t *testing.T) {
	g := startGateway(t, Options{HTTPSAddr: "127.0.0.1:0"})
	backend := newEchoBackend(t, "rev")
	g.serve("rev", backend)
	for _, h := range []string{"secure.example.com", "plain.example.com", "nocert.example.com"} {
		g.program(gatewaytest.NewIngress(strings.Split(h, ".")[0], 0, gatewaytest.ExternalRule([]string{h}, gatewaytest.Path("", gatewaytest.SplitTo("rev", 100)))))
	}
	crt, k, pool := gatewaytest.SelfSigned(t, "secure.example.com")
	cert, err := tls.X509KeyPair(crt, k)
	if err != nil {
		t.Fatal(err)
	}
	g.tlsStore.Set(gatewaytest.Key("secure"), gatewaytest.Epoch, map[string]*proxy.HostTLS{"secure.example.com": {Cert: &cert, Redirect: true}})
	g.tlsStore.Set(gatewaytest.Key("plain"), gatewaytest.Epoch, map[string]*proxy.HostTLS{"plain.example.com": {Cert: &cert}})
	// nocert's Secret is broken: Redirected, but no certificate.
	g.tlsStore.Set(gatewaytest.Key("nocert"), gatewaytest.Epoch, map[string]*proxy.HostTLS{})

	for _, h2 := range []bool{true, false} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "secure.example.com"}, ForceAttemptHTTP2: h2}
		if !h2 {
			tr.TLSClientConfig.NextProtos = []string{"http/1.1"}
		}
		req, _ := http.NewRequest("GET", "https://"+g.HTTPSAddr()+"/x", nil)
		req.Host = "secure.example.com"
		res, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		want := map[bool]int{true: 2, false: 1}[h2]
		if res.StatusCode != 200 || res.ProtoMajor != want || !strings.Contains(string(body), `"backend":"rev"`) {
			t.Errorf("h2=%v: %s %s %s, want 200 over HTTP/%d from rev", h2, res.Proto, res.Status, body, want)
		}
		tr.CloseIdleConnections()
	}
	_, err = tls.Dial("tcp", g.HTTPSAddr(), &tls.Config{RootCAs: pool, ServerName: "nocert.example.com"})
	if err == nil {
		t.Error("a handshake for a host without a certificate succeeded")
	}
	// Without SNI (an IP address is never sent as one).
	if _, err := tls.Dial("tcp", g.HTTPSAddr(), &tls.Config{InsecureSkipVerify: true}); err == nil {
		t.Error("a handshake without a server name succeeded")
	}
	for reason, want := range map[string]float64{"no_certificate": 1, "no_server_name": 1} {
		if got := testutil.ToFloat64(g.metrics.TLSRefused.WithLabelValues(reason)); got != want {
			t.Errorf("ferry_gateway_tls_handshakes_refused_total{reason=%q} = %v, want %v", reason, got, want)
		}
	}

	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	_, port, _ := strings.Cut(g.HTTPSAddr(), ":")
	for _, tc := range []struct{ host, wantLocation string }{
		{"secure.example.com:8080", "https://secure.example.com:" + port + "/p?q=1"},
		{"secure.example.com", "https://secure.example.com/p?q=1"},
		{"plain.example.com", ""},
		{"nocert.example.com", ""},
	} {
		req, _ := http.NewRequest("GET", g.externalURL("/p?q=1"), nil)
		req.Host = tc.host
		res, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if tc.wantLocation == "" {
			if res.StatusCode != 200 {
				t.Errorf("%s: %s, want 200 over plain HTTP", tc.host, res.Status)
			}
			continue
		}
		if res.StatusCode != http.StatusMovedPermanently || res.Header.Get("Location") != tc.wantLocation {
			t.Errorf("%s: %s Location %q, want 301 to %s", tc.host, res.Status, res.Header.Get("Location"), tc.wantLocation)
		}
	}
	// The cluster-local listener never redirects.
	req, _ := http.NewRequest("GET", g.localURL("/"), nil)
	req.Host = "secure.example.com"
	res, err := noFollow.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Errorf("cluster-local listener: %s, want 200", res.Status)
	}
}
