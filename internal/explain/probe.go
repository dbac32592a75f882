package explain

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// Routed says whether a gateway answer means the request reached a revision: a 2xx,
// from a real pod or, when kwok simulates the pods, Ferry's gateway answering for one
// ("Hello from revision ..."). A request for a revision with no ready pod yet is held
// by the gateway until one is ready, so it is not answered until it is routed.
func Routed(status int, _ string) bool { return status >= 200 && status < 300 }

// Probe sends one GET / to the gateway at gatewayURL with the Host header set to
// host, and says whether the gateway routed it, with its answer ("200 Hello from revision …").
func Probe(ctx context.Context, hc *http.Client, gatewayURL, host string) (bool, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(gatewayURL, "/")+"/", nil)
	if err != nil {
		return false, err.Error()
	}
	req.Host = host
	resp, err := hc.Do(req)
	if err != nil {
		return false, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	return Routed(resp.StatusCode, string(body)), fmt.Sprintf("%d %s", resp.StatusCode, strings.TrimSpace(string(body)))
}

// HostOf is the host of a status URL ("http://hello.default.example.com" gives
// "hello.default.example.com"), "" when there is none.
func HostOf(statusURL string) string {
	if statusURL == "" {
		return ""
	}
	u, err := url.Parse(statusURL)
	if err != nil {
		return ""
	}
	return u.Host
}

// ProbeGateway sends one request to the gateway at gatewayURL with the Route's host,
// when the Route is Ready, and records the answer in the chain.
func (c *Chain) ProbeGateway(ctx context.Context, hc *http.Client, gatewayURL string) {
	if c.Route == nil || !c.Route.IsReady() {
		return
	}
	c.Probed, c.GatewayURL = true, gatewayURL
	host := HostOf(c.Route.Status.URL)
	if host == "" {
		c.LastAnswer = "the Route has no status.url"
		return
	}
	if routed, answer := Probe(ctx, hc, gatewayURL, host); routed {
		c.RoutedAnswer = answer
	} else {
		c.LastAnswer = answer
	}
}
