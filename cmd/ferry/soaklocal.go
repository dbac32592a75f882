package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/scale"
	"github.com/ferry-serving/ferry/internal/soak"
)

// The fleet's programs on the local cluster when pods run as programs: Ferry's
// examples, built from the working directory.
const (
	soakImage         = "ko://github.com/ferry-serving/ferry/examples/hello"
	soakFrontendImage = "ko://github.com/ferry-serving/ferry/examples/frontend"
)

// soakCluster is the local cluster a soak without --kubeconfig runs on: the control
// plane, Ferry's admission and gateway replica A in this process (as ferry up runs
// them), and `ferry controller` and gateway replica B as processes of this binary, so
// that the faults can kill them. The controller reaches the API server through a
// proxy that the apiserver fault slows.
type soakCluster struct {
	cluster localCluster
	ferry   *inProcessFerry
	proxy   *soak.SlowProxy
	exe     string
	dir     string
	// The kubeconfigs of the processes: the controller's through the proxy.
	slowKubeconfig, directKubeconfig string
	statsAddr                        string
	simulatedPods                    bool

	controller, gatewayB *child
	gatewayBUp           atomic.Bool
	gatewayBAddr         string
	gatewayBLocalAddr    string
	gatewayBHealth       string
	picks                atomic.Uint64
	logs                 []*os.File
}

// child is a ferry process the soak started.
type child struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func startSoakCluster(ctx context.Context, out io.Writer, f soakFlags, opts *soak.Options) (_ *soakCluster, err error) {
	s := &soakCluster{dir: f.reportDir}
	defer func() {
		if err != nil {
			s.stop()
		}
	}()
	if s.exe, err = os.Executable(); err != nil {
		return nil, err
	}
	processes, _, _, programsErr := programsMode(f.isolation)
	fmt.Fprintln(out, "Starting a local cluster, Ferry's admission and gateway in-process, its controller and a second gateway as processes ...")
	cpLog, err := s.log("control-plane.log")
	if err != nil {
		return nil, err
	}
	if s.cluster, err = startLocalCluster(ctx, localClusterOptions{log: cpLog, programs: programsErr == nil, programProcesses: processes}); err != nil {
		return nil, err
	}
	admin := s.cluster.RESTConfig()
	if err := ensureNamespace(ctx, admin, config.SystemNamespace); err != nil {
		return nil, err
	}
	if err := ensureConfigMaps(ctx, admin); err != nil {
		return nil, err
	}
	if err := keepFewRevisions(ctx, admin); err != nil {
		return nil, err
	}
	if s.proxy, err = soak.NewSlowProxy(hostPort(admin.Host)); err != nil {
		return nil, err
	}
	ctrlCfg := s.cluster.ControllerRESTConfig()
	if s.slowKubeconfig, err = s.writeKubeconfig("controller.kubeconfig", ctrlCfg, "https://"+s.proxy.Addr()); err != nil {
		return nil, err
	}
	if s.directKubeconfig, err = s.writeKubeconfig("gateway.kubeconfig", ctrlCfg, ctrlCfg.Host); err != nil {
		return nil, err
	}
	ports, err := freePorts(5)
	if err != nil {
		return nil, err
	}
	s.statsAddr, s.gatewayBAddr, s.gatewayBLocalAddr, s.gatewayBHealth = ports[0], ports[1], ports[2], ports[3]
	controllerHealth := ports[4]
	s.simulatedPods = programsErr != nil

	ferryLog, err := s.log("ferry.log")
	if err != nil {
		return nil, err
	}
	var localAddrForPods string
	if host := s.cluster.PodHostAddr(); host != "" {
		localAddrForPods = net.JoinHostPort(host, "0")
	}
	s.ferry, err = startFerry(ctx, s.cluster, inProcessOptions{log: ferryLog, reconcilersElsewhere: true, autoscalerAddr: s.statsAddr, pprofAddr: f.pprofAddr,
		gatewayAddr: "127.0.0.1:0", gatewayLocalAddr: "127.0.0.1:0", gatewayLocalAddrForPods: localAddrForPods,
		leaseNamespace: config.SystemNamespace, programs: !s.simulatedPods})
	if err != nil {
		return nil, err
	}
	s.cluster.DrainWith(s.ferry.Gateway.InFlightTo)
	if addr := s.ferry.Gateway.LocalAddrForPods(); addr != "" {
		_, port, _ := net.SplitHostPort(addr)
		p, _ := strconv.Atoi(port)
		if err := s.cluster.ServeToPods(ctx, config.SystemNamespace, gatewayLocalService, p); err != nil {
			return nil, fmt.Errorf("the gateway's Service for pods: %w", err)
		}
	}
	if s.controller, err = s.start("controller", "controller", "--kubeconfig", s.slowKubeconfig, "--leader-elect",
		"--leader-election-namespace", config.SystemNamespace, "--stats-addr", s.statsAddr, "--metrics-addr", "0",
		"--health-addr", controllerHealth, "--log-format", "console"); err != nil {
		return nil, err
	}
	if err := s.startGatewayB(ctx); err != nil {
		return nil, err
	}

	opts.Config = admin
	opts.Gateways = s
	opts.Breaker = s
	opts.Programs = !s.simulatedPods
	opts.ChangeAutoscaler = true
	opts.Processes = s.processes
	if opts.Image == "" {
		opts.Image = soakImage
		if !s.simulatedPods {
			opts.FrontendImage = soakFrontendImage
		}
		if s.simulatedPods {
			opts.Image = scale.DefaultImage
			fmt.Fprintf(out, "Pods are simulated by kwok (%v): the program fault cannot strike.\n", programsErr)
		}
	}
	return s, nil
}

// Pick sends the load round-robin over the gateway replicas that take requests.
func (s *soakCluster) Pick(local bool) string {
	a, b := s.ferry.Gateway.ExternalAddr(), s.gatewayBAddr
	if local {
		a, b = s.ferry.Gateway.LocalAddr(), s.gatewayBLocalAddr
	}
	if s.gatewayBUp.Load() && s.picks.Add(1)%2 == 0 {
		return "http://" + b
	}
	return "http://" + a
}

// KillController kills the controller with SIGKILL, as an OOM kill would, and starts
// a new one at once, as its Deployment would.
func (s *soakCluster) KillController(context.Context) (string, error) {
	old := s.controller.cmd.Process.Pid
	_ = s.controller.cmd.Process.Signal(syscall.SIGKILL)
	<-s.controller.done
	c, err := s.start("controller", s.controller.cmd.Args[1:]...)
	if err != nil {
		return fmt.Sprintf("controller pid %d killed", old), err
	}
	s.controller = c
	return fmt.Sprintf("controller pid %d killed (SIGKILL), pid %d started", old, c.cmd.Process.Pid), nil
}

// RestartGateway takes replica B out of the load, stops it as a rolling update
// would (SIGTERM: it drains), starts it again and puts it back once it is ready.
func (s *soakCluster) RestartGateway(ctx context.Context) (string, error) {
	s.gatewayBUp.Store(false)
	time.Sleep(time.Second) // requests already sent to B finish; new ones go to A
	old := s.gatewayB.cmd.Process.Pid
	stopped := time.Now()
	_ = s.gatewayB.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.gatewayB.done:
	case <-time.After(time.Minute):
		_ = s.gatewayB.cmd.Process.Kill()
		<-s.gatewayB.done
	}
	drained := time.Since(stopped)
	if err := s.startGatewayB(ctx); err != nil {
		return fmt.Sprintf("gateway B pid %d stopped", old), err
	}
	return fmt.Sprintf("gateway B pid %d stopped (SIGTERM, gone in %s), pid %d serving %s later", old,
		drained.Round(100*time.Millisecond), s.gatewayB.cmd.Process.Pid, time.Since(stopped).Round(100*time.Millisecond)), nil
}

// SlowAPIServer delays every chunk between the controller and the API server by
// 200 ms for d.
func (s *soakCluster) SlowAPIServer(ctx context.Context, d time.Duration) (string, error) {
	const delay = 200 * time.Millisecond
	return fmt.Sprintf("the controller's API server connections slowed by %s a chunk for %s", delay, d), s.proxy.Slow(ctx, delay, d)
}

func (s *soakCluster) startGatewayB(ctx context.Context) error {
	args := []string{"gateway", "--kubeconfig", s.directKubeconfig, "--addr", s.gatewayBAddr, "--local-addr", s.gatewayBLocalAddr,
		"--lease-namespace", config.SystemNamespace, "--autoscaler", s.statsAddr, "--metrics-addr", "0",
		"--health-addr", s.gatewayBHealth, "--log-format", "console"}
	if s.simulatedPods {
		args = append(args, "--simulated-pods")
	}
	c, err := s.start("gateway-b", args...)
	if err != nil {
		return err
	}
	s.gatewayB = c
	if err := waitHealthy(ctx, "http://"+s.gatewayBHealth+"/readyz", c.done, time.Minute); err != nil {
		return fmt.Errorf("gateway B: %w", err)
	}
	s.gatewayBUp.Store(true)
	return nil
}

// start runs this binary with args, its output appended to <name>.log.
func (s *soakCluster) start(name string, args ...string) (*child, error) {
	logf, err := os.OpenFile(filepath.Join(s.dir, name+".log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.exe, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	// Its own process group: a Ctrl-C meant for the soak reaches it through stop.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	c := &child{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		logf.Close()
		close(c.done)
	}()
	return c, nil
}

// processes are the processes whose memory the soak follows.
func (s *soakCluster) processes() []soak.Process {
	ps := []soak.Process{{Name: "ferry soak (control plane, admission, gateway A, load)", PID: os.Getpid()}}
	if c := s.controller; c != nil {
		ps = append(ps, soak.Process{Name: "ferry controller", PID: c.cmd.Process.Pid})
	}
	if g := s.gatewayB; g != nil && s.gatewayBUp.Load() {
		ps = append(ps, soak.Process{Name: "ferry gateway B", PID: g.cmd.Process.Pid})
	}
	return ps
}

// stop stops the processes, Ferry, the proxy and the cluster.
func (s *soakCluster) stop() {
	for _, c := range []*child{s.controller, s.gatewayB} {
		if c != nil {
			_ = c.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-c.done:
			case <-time.After(30 * time.Second):
				_ = c.cmd.Process.Kill()
				<-c.done
			}
		}
	}
	if s.ferry != nil {
		if err := s.ferry.Stop(); err != nil && !errors.Is(err, context.Canceled) {
			fmt.Fprintln(os.Stderr, "ferry:", err)
		}
	}
	if s.proxy != nil {
		_ = s.proxy.Close()
	}
	if s.cluster != nil {
		_ = s.cluster.Stop()
	}
	for _, f := range s.logs {
		f.Close()
	}
}

func (s *soakCluster) log(name string) (*os.File, error) {
	f, err := os.Create(filepath.Join(s.dir, name))
	if err == nil {
		s.logs = append(s.logs, f)
	}
	return f, err
}

// writeKubeconfig writes cfg's credentials for server into the report directory.
func (s *soakCluster) writeKubeconfig(name string, cfg *rest.Config, server string) (string, error) {
	ca := cfg.CAData
	if len(ca) == 0 && cfg.CAFile != "" {
		var err error
		if ca, err = os.ReadFile(cfg.CAFile); err != nil {
			return "", err
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["local"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca, TLSServerName: cfg.TLSClientConfig.ServerName}
	kc.AuthInfos["ferry"] = &clientcmdapi.AuthInfo{Token: cfg.BearerToken, ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData}
	kc.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: "ferry"}
	kc.CurrentContext = "local"
	path := filepath.Join(s.dir, name)
	return path, clientcmd.WriteToFile(*kc, path)
}

// hostPort is a rest.Config Host's host:port.
func hostPort(host string) string {
	if u, err := url.Parse(host); err == nil && u.Host != "" {
		return u.Host
	}
	return host
}

// freePorts are n loopback addresses free a moment ago.
func freePorts(n int) ([]string, error) {
	var out []string
	var lns []net.Listener
	defer func() {
		for _, l := range lns {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, l)
		out = append(out, l.Addr().String())
	}
	return out, nil
}

// waitHealthy polls url until it answers 200, the process exits, or timeout.
func waitHealthy(ctx context.Context, url string, exited <-chan struct{}, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-exited:
			return errors.New("exited before it was ready (its log is in the report directory)")
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("not ready within %s", timeout)
}

// soakGC is config-gc on the soak's own cluster: two non-active Revisions kept per
// Configuration, past that the oldest collected at once. With Knative's defaults
// (20, kept 48 hours) the hour's template updates, rollouts and crashes add some 30
// Revisions, each with its Deployment, ReplicaSet and PodAutoscaler in every cache, and
// memory grows with them for the whole hour: the third hour's heap profiles showed
// the API server's watch cache holding them. A fleet of steady size lets the memory
// trend tell a leak; the collector runs under the faults besides. A cluster the soak
// is pointed at (--kubeconfig) keeps its own config-gc.
var soakGC = map[string]string{"min-non-active-revisions": "1", "max-non-active-revisions": "2"}

func keepFewRevisions(ctx context.Context, cfg *rest.Config) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	cms := cs.CoreV1().ConfigMaps(config.SystemNamespace)
	cm, err := cms.Get(ctx, config.GCConfigName, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	maps.Copy(cm.Data, soakGC)
	_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}
