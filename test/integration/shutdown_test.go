package integration

import (
	"context"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// shutdownGrace is how long a controller may take to exit after SIGTERM: the
// terminationGracePeriodSeconds a pod gets by default, after which the kubelet kills it.
const shutdownGrace = 30 * time.Second

// maxIdleCPU is the share of a core a controller may use while its API server is gone:
// client-go's backoff costs 1-3%, a loop that spins a whole core; the margin is for a
// loaded machine.
const maxIdleCPU = 0.10

// TestControllerShutdownAPIServerGone runs `ferry controller --leader-elect` through a
// TCP proxy to the shared API server and stops the proxy, as a cluster that went away
// (connection refused). The controller must idle while the server is gone and exit
// within shutdownGrace of SIGTERM, without spinning meanwhile. Before its caches sync
// it used to spin: controller-runtime's runnableGroup.Start loops on a cancelled context
// until every cache reports synced, which it never does with no server.
func TestControllerShutdownAPIServerGone(t *testing.T) {
	for _, tc := range []struct {
		name string
		// unauthorized runs the controller as a ServiceAccount without Ferry's RBAC, as
		// in a failed install: its caches never sync (every list is Forbidden).
		unauthorized bool
		// until is what the controller has logged when the server goes.
		until string
	}{
		{name: "before-sync", unauthorized: true, until: "forbidden"},
		{name: "while-leading", until: acquiredLease},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := testNamespace(t) // holds the Lease, apart from other tests' controllers
			proxy := startAPIProxy(t)
			token := ""
			if tc.unauthorized {
				token = serviceAccountToken(t, ns, "no-rbac")
			}
			p := startProcess(t, "ferry controller", nil, "controller", "--kubeconfig", proxy.kubeconfig(t, token),
				"--leader-elect", "--leader-election-namespace", ns,
				"--metrics-addr", "0", "--health-addr", "0", "--stats-addr", "0")
			eventually(t, time.Minute, func() (bool, string) {
				if p.Exited() {
					t.Fatalf("ferry controller exited:\n%s", p.Output())
				}
				return strings.Contains(strings.ToLower(p.Output()), tc.until), "has not logged " + tc.until
			})
			proxy.stop()
			pid := p.cmd.Process.Pid

			// Gone: only backoff, no spin (well within the lease's renew deadline, 10 s).
			time.Sleep(time.Second)
			before, at := cpuTime(t, pid), time.Now()
			time.Sleep(3 * time.Second)
			if p.Exited() {
				t.Fatalf("ferry controller exited before SIGTERM:\n%s", p.Output())
			}
			idle := (cpuTime(t, pid) - before).Seconds() / time.Since(at).Seconds()
			t.Logf("CPU with the API server gone: %.1f%% of a core", 100*idle)
			if idle > maxIdleCPU {
				t.Errorf("with the API server gone the controller used %.0f%% of a core, want at most %.0f%%", 100*idle, 100*maxIdleCPU)
			}

			// SIGTERM: out within the grace period, idle while stopping.
			before, at = cpuTime(t, pid), time.Now()
			last, lastAt := before, at
			p.signal(syscall.SIGTERM)
			for !p.Exited() && time.Since(at) < shutdownGrace {
				if c, ok := readCPUTime(pid); ok {
					last, lastAt = c, time.Now()
				}
				time.Sleep(100 * time.Millisecond)
			}
			took := time.Since(at)
			if window := lastAt.Sub(at); window >= time.Second {
				stopping := (last - before).Seconds() / window.Seconds()
				t.Logf("CPU while stopping (%s observed): %.1f%% of a core", window.Round(time.Millisecond), 100*stopping)
				if stopping > maxIdleCPU {
					t.Errorf("stopping, the controller used %.0f%% of a core, want at most %.0f%%", 100*stopping, 100*maxIdleCPU)
				}
			}
			if !p.Exited() {
				t.Fatalf("ferry controller still running %s after SIGTERM", shutdownGrace)
			}
			t.Logf("exited %s after SIGTERM", took.Round(time.Millisecond))
		})
	}
}

// apiProxy forwards TCP connections to the shared API server until stopped; then
// every connection is cut and new ones are refused, as from a stopped cluster, while
// the shared cluster runs on for the other tests.
type apiProxy struct {
	ln     net.Listener
	target string

	mu      sync.Mutex
	conns   []net.Conn
	stopped bool
}

func startAPIProxy(t *testing.T) *apiProxy {
	t.Helper()
	u, err := url.Parse(testConfig.Host)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &apiProxy{ln: ln, target: u.Host}
	go p.serve()
	t.Cleanup(p.stop)
	return p
}

func (p *apiProxy) serve() {
	for {
		in, err := p.ln.Accept()
		if err != nil {
			return // stopped
		}
		out, err := net.Dial("tcp", p.target)
		if err != nil {
			in.Close()
			continue
		}
		if !p.track(in, out) {
			return
		}
		go func() { _, _ = io.Copy(out, in); out.Close() }()
		go func() { _, _ = io.Copy(in, out); in.Close() }()
	}
}

// track records a forwarded connection, or closes it if the proxy stopped meanwhile.
func (p *apiProxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	p.conns = append(p.conns, conns...)
	return true
}

func (p *apiProxy) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return
	}
	p.stopped = true
	p.ln.Close()
	for _, c := range p.conns {
		c.Close()
	}
}

// kubeconfig writes the shared cluster's kubeconfig with the proxy as its server (the
// API server's certificate names 127.0.0.1, whatever the port) and, if token is set,
// that token instead of the admin's credentials.
func (p *apiProxy) kubeconfig(t *testing.T, token string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(testCluster.KubeconfigPath())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cfg.Clusters {
		c.Server = "https://" + p.ln.Addr().String()
	}
	if token != "" {
		for name := range cfg.AuthInfos {
			cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
		}
	}
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// serviceAccountToken creates the ServiceAccount name in ns, bound to no role, and
// returns a token for it.
func serviceAccountToken(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(testConfig)
	if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token for ServiceAccount %s: %v", name, err)
	}
	return tr.Status.Token
}

// cpuTime is the CPU time (user and system) process pid has used so far.
func cpuTime(t *testing.T, pid int) time.Duration {
	t.Helper()
	d, ok := readCPUTime(pid)
	if !ok {
		t.Fatalf("reading /proc/%d/stat: the process is gone", pid)
	}
	return d
}

// readCPUTime reads utime and stime from /proc/<pid>/stat, in clock ticks of 1/100 s
// (USER_HZ, fixed on Linux).
func readCPUTime(pid int) (time.Duration, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The fields after the command name, which ends at the last ')': state is the
	// first, utime the 12th, stime the 13th.
	i := strings.LastIndexByte(string(b), ')')
	fields := strings.Fields(string(b[i+1:]))
	if i < 0 || len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond, true
}
