package localcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/ferry-serving/ferry/internal/clusternet"
	"github.com/ferry-serving/ferry/internal/programs"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Options configure a local cluster. The zero value is a cluster in a temporary
// directory on free ports.
type Options struct {
	// DataDir keeps etcd's data, the keys and the kubeconfig, so that a restart on the
	// same directory keeps every object. Empty means a temporary directory removed by
	// Stop.
	DataDir string
	// APIServerPort is the kube-apiserver's secure port on 127.0.0.1; 0 picks a free one.
	APIServerPort int
	// Log receives the control plane's logs; nil discards them. The logs also go to
	// DataDir/control-plane.log when DataDir is set.
	Log io.Writer
	// APIServerFlags are appended to kube-apiserver's command line. Only the fault
	// tests use them: with --watch-cache=false and a short --etcd-compaction-interval a
	// watch resuming from an old resourceVersion gets 410 Gone from etcd, which the
	// watch cache would otherwise hide.
	APIServerFlags []string
	// Programs, when set, adds a node whose pods run local programs
	// (internal/programs): the pods with an image that Programs runs go there and
	// nowhere else, every other pod to kwok's node. It needs Linux, root and runc.
	Programs *programs.Images
	// ProgramProcesses runs the Programs node's pods as plain processes of the host,
	// without isolation (programs.Options.Processes): where runc cannot run, or when
	// ferry up is asked to.
	ProgramProcesses bool
}

// ControllerUser is the user of ControllerRESTConfig: Ferry's controller when it runs in
// the same process. It has the admin's rights; a name of its own lets the webhooks tell
// the controller's writes from users' (internal/admission ControllerUser).
const ControllerUser = "ferry-controller"

// Cluster is a running local control plane.
type Cluster struct {
	dir             string
	removeDir       bool
	restConfig      *rest.Config
	controllerToken string
	kubeconfig      string

	// programs is the node of local programs, if Options.Programs asked for one.
	programs *programs.Node
	// network is that node's cluster network, when its pods are isolated.
	network *clusternet.Plan

	cancel  context.CancelFunc
	stop    sync.Once
	wg      sync.WaitGroup
	errMu   sync.Mutex
	errs    []error
	closers []func()
}

// Start brings up etcd, kube-apiserver, kube-controller-manager, kube-scheduler and
// kwok, installs Ferry's CRDs and waits until they are served. It returns once the
// cluster is usable. Cancel ctx or call Stop to shut it down.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	c := &Cluster{dir: opts.DataDir, cancel: func() {}}
	var err error
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "ferry-localcluster-"); err != nil {
			return nil, fmt.Errorf("creating a temporary data directory: %w", err)
		}
		c.removeDir = true
	} else if err := prepareDataDir(c.dir); err != nil {
		return nil, err
	}
	ctx, c.cancel = context.WithCancel(ctx)
	if err := c.start(ctx, opts); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

func (c *Cluster) start(ctx context.Context, opts Options) error {

	logs, closeLogs, err := c.logWriter(opts.Log)
	if err != nil {
		return err
	}
	c.closers = append(c.closers, closeLogs)
	silenceKlog(logs)

	// Pods in network namespaces of their own get a cluster's network; plain
	// processes share the host's.
	if opts.Programs != nil && !opts.ProgramProcesses {
		plan := NetworkPlan(c.dir)
		if err := clusternet.SetUp(ctx, plan); err != nil {
			return fmt.Errorf("the program node's network: %w", err)
		}
		c.closers = append(c.closers, func() { _ = clusternet.Remove(context.Background(), plan) })
		c.network = &plan
	}
	certIPs := []net.IP{net.IP(clusternet.APIServerClusterIP.AsSlice())}
	if c.network != nil {
		certIPs = append(certIPs, net.IP(c.network.HostAddr.AsSlice()))
	}
	creds, err := loadOrCreateCredentials(filepath.Join(c.dir, "pki"), certIPs...)
	if err != nil {
		return err
	}

	var etcdURL string
	var closeEtcd func()
	labelled(ctx, "etcd", func(context.Context) { etcdURL, closeEtcd, err = startEtcd(filepath.Join(c.dir, "etcd"), logs) })
	if err != nil {
		return err
	}
	c.closers = append(c.closers, closeEtcd)

	ln, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", opts.APIServerPort))
	if err != nil {
		return fmt.Errorf("kube-apiserver cannot listen on 127.0.0.1:%d: %w", opts.APIServerPort, err)
	}
	kubelet, err := newKubeletClient(filepath.Join(c.dir, "pki"))
	if err != nil {
		return err
	}
	apiServerFlags := append([]string{"--kubelet-client-certificate=" + kubelet.certFile, "--kubelet-client-key=" + kubelet.keyFile},
		opts.APIServerFlags...)
	var advertise netip.Addr
	if c.network != nil {
		advertise = c.network.HostAddr
		port := ln.Addr().(*net.TCPAddr).Port
		forPods, err := net.Listen("tcp", netip.AddrPortFrom(advertise, uint16(port)).String())
		if err != nil {
			ln.Close()
			return fmt.Errorf("kube-apiserver cannot listen for pods: %w", err)
		}
		ln = joinListeners(ln, forPods)
	}
	c.run(ctx, "kube-apiserver", func() error { return runAPIServer(ctx, ln, etcdURL, creds, advertise, apiServerFlags) })

	c.restConfig = &rest.Config{
		Host:            "https://" + ln.Addr().String(),
		BearerToken:     creds.token,
		TLSClientConfig: rest.TLSClientConfig{CAFile: creds.caFile},
		QPS:             -1, // the local API server is ours alone; client-side throttling only hides its real speed
		// Nothing to save over loopback: gzip would cost the API server a flush per
		// watch event (manager.withoutCompression).
		DisableCompression: true,
	}
	c.controllerToken = creds.controllerToken
	if err := c.waitReady(ctx, 60*time.Second); err != nil {
		return err
	}
	c.kubeconfig = filepath.Join(c.dir, "kubeconfig")
	if err := writeKubeconfig(c.kubeconfig, c.restConfig); err != nil {
		return err
	}

	c.run(ctx, "kube-controller-manager", func() error { return runControllerManager(ctx, c.kubeconfig, creds) })
	c.run(ctx, "kube-scheduler", func() error { return runScheduler(ctx, c.dir, c.kubeconfig, opts.Programs) })
	labelled(ctx, "kwok", func(ctx context.Context) { err = startKwok(ctx, c.restConfig, c.kubeconfig, logs) })
	if err != nil {
		return err
	}
	if opts.Programs != nil {
		cs, err := kubernetes.NewForConfig(c.restConfig)
		if err != nil {
			return err
		}
		labelled(ctx, "programs", func(ctx context.Context) {
			c.programs, err = programs.Start(ctx, programs.Options{Client: cs, Images: opts.Programs, Dir: filepath.Join(c.dir, "programs"),
				Processes: opts.ProgramProcesses, Network: c.network, ClientCAFile: kubelet.caFile, Log: logs})
		})
		if err != nil {
			return err
		}
		c.closers = append(c.closers, c.programs.Stop)
		// After the node: kube-proxy is healthy only once its Node exists.
		if c.network != nil {
			if err := c.startPodNetwork(ctx, cs, logs); err != nil {
				return err
			}
		}
	}
	if err := installCRDs(ctx, c.restConfig); err != nil {
		return err
	}
	return nil
}

// RESTConfig returns a config for an admin client. The caller may modify its copy.
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.restConfig) }

// ControllerRESTConfig returns a config for a client that is ControllerUser. The caller
// may modify its copy.
func (c *Cluster) ControllerRESTConfig() *rest.Config {
	cfg := c.RESTConfig()
	cfg.BearerToken = c.controllerToken
	return cfg
}

// ControllerUser is the username of ControllerRESTConfig's client.
func (c *Cluster) ControllerUser() string { return ControllerUser }

// KubeconfigPath is the kubeconfig of an admin user, for kubectl.
func (c *Cluster) KubeconfigPath() string { return c.kubeconfig }

// DrainWith tells the node of local programs, if there is one, how many requests are
// in flight to a pod's IP (programs.Node.DrainWith).
func (c *Cluster) DrainWith(inFlight func(ip string) int64) {
	if c.programs != nil {
		c.programs.DrainWith(inFlight)
	}
}

// DataDir is where the cluster keeps its state.
func (c *Cluster) DataDir() string { return c.dir }

// Stop shuts every component down, waiting at most a few seconds, and removes a
// temporary data directory. It returns the errors the components stopped with. Calling
// it again does nothing more.
func (c *Cluster) Stop() error {
	c.stop.Do(c.shutdown)
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return errors.Join(c.errs...)
}

func (c *Cluster) shutdown() {
	c.cancel()
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(4 * time.Second):
		// A component that ignores its context must not keep the process alive.
	}
	for i := len(c.closers) - 1; i >= 0; i-- {
		c.closers[i]()
	}
	c.closers = nil
	if c.removeDir {
		os.RemoveAll(c.dir)
	}
}

// run starts a component that runs until ctx is cancelled; an early exit is an error.
// What components say as they stop after ctx is cancelled is not (the scheduler, for
// one, reports "finished without leader elect").
func (c *Cluster) run(ctx context.Context, name string, f func() error) {
	c.wg.Add(1)
	labelled(ctx, name, func(context.Context) {
		go func() {
			defer c.wg.Done()
			if err := f(); err != nil && ctx.Err() == nil {
				c.errMu.Lock()
				c.errs = append(c.errs, fmt.Errorf("%s: %w", name, err))
				c.errMu.Unlock()
			}
		}()
	})
}

// labelled runs f with the profiler label component=name, which every goroutine it
// starts inherits: a CPU profile of a process running the cluster (ferry scale
// --cpuprofile) tells each component's share (go tool pprof -tags).
func labelled(ctx context.Context, name string, f func(context.Context)) {
	pprof.Do(ctx, pprof.Labels("component", name), f)
}

func (c *Cluster) firstError() error {
	c.errMu.Lock()
	defer c.errMu.Unlock()
	return errors.Join(c.errs...)
}

func (c *Cluster) logWriter(extra io.Writer) (io.Writer, func(), error) {
	if c.removeDir {
		if extra == nil {
			return io.Discard, func() {}, nil
		}
		return extra, func() {}, nil
	}
	f, err := os.OpenFile(filepath.Join(c.dir, "control-plane.log"), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("data directory %s is not usable: %w", c.dir, err)
	}
	if extra == nil {
		return f, func() { f.Close() }, nil
	}
	return io.MultiWriter(f, extra), func() { f.Close() }, nil
}

func prepareDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data directory %s is not usable: %w", dir, err)
	}
	probe := filepath.Join(dir, ".write-test")
	if err := os.WriteFile(probe, nil, 0o600); err != nil {
		return fmt.Errorf("data directory %s is not writable: %w", dir, err)
	}
	return os.Remove(probe)
}

// NetworkPlan is the program node's network of the cluster kept in dataDir: a test
// that reaches a ClusterIP through that cluster's node finds the namespace by it.
func NetworkPlan(dataDir string) clusternet.Plan {
	return clusternet.PlanFor(filepath.Join(dataDir, "programs"))
}
