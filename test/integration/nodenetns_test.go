package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"testing"

	"github.com/vishvananda/netns"

	"github.com/ferry-serving/ferry/internal/localcluster"
)

// nodeClient is an HTTP client whose connections start in the network namespace of
// the program node of the cluster kept in dataDir, so that a ClusterIP leads through
// that cluster's kube-proxy. The host's route to ServiceCIDR belongs to whichever
// ferry up on the machine made it first: another test's cluster, or a developer's.
func nodeClient(t *testing.T, dataDir string) *http.Client {
	t.Helper()
	name := localcluster.NetworkPlan(dataDir).NodeNamespace()
	dial := func(ctx context.Context, network, addr string) (net.Conn, error) {
		// The socket is made in the namespace of the thread that makes it, and keeps
		// it: only the dial runs there.
		runtime.LockOSThread()
		orig, err := netns.Get()
		if err != nil {
			runtime.UnlockOSThread()
			return nil, err
		}
		defer orig.Close()
		node, err := netns.GetFromName(name)
		if err != nil {
			runtime.UnlockOSThread()
			return nil, fmt.Errorf("the node's namespace %s: %w", name, err)
		}
		defer node.Close()
		if err := netns.Set(node); err != nil {
			runtime.UnlockOSThread()
			return nil, err
		}
		var d net.Dialer
		conn, dialErr := d.DialContext(ctx, network, addr)
		if err := netns.Set(orig); err != nil {
			// The thread stays locked, and ends with the goroutine: no other goroutine
			// runs in the node's namespace.
			if conn != nil {
				conn.Close()
			}
			return nil, fmt.Errorf("back from the node's namespace: %w", err)
		}
		runtime.UnlockOSThread()
		return conn, dialErr
	}
	return &http.Client{Transport: &http.Transport{DialContext: dial, DisableKeepAlives: true}}
}

// getHostWith asks addr for host through client; an error is the body, with code 0.
func getHostWith(client *http.Client, addr, host string) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	req.Host = host
	resp, err := client.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
