package programs

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/virtual-kubelet/virtual-kubelet/errdefs"
	"github.com/virtual-kubelet/virtual-kubelet/node"
	vkapi "github.com/virtual-kubelet/virtual-kubelet/node/api"
	"github.com/virtual-kubelet/virtual-kubelet/node/nodeutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/cri-client/pkg/logs"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/ferry-serving/ferry/internal/clusternet"
)

// NodeName is the node whose pods run programs.
const NodeName = "ferry-programs"

// nodeIP is the node's address: the API server reaches its kubelet API (kubectl logs)
// there, on loopback.
const nodeIP = "127.0.0.1"

// Options configure the node.
type Options struct {
	// Client acts for the node: pods, their status, the Node and its Lease, Events, and
	// the ConfigMaps, Secrets and tokens of the pods' volumes.
	Client kubernetes.Interface
	Images *Images
	// Dir keeps the pods' files, logs and the containers' state; a start removes what an
	// earlier run of the same Dir left running.
	Dir string
	// Runc is the runc command; empty looks it up on PATH.
	Runc string
	// Processes runs each container as a plain process of the host instead of in a
	// runc container, every pod at 127.0.0.1 with a PORT of its own: the fallback where
	// runc cannot run (ChooseMode). See ProcessesCaveats for what does not hold.
	Processes bool
	// Network is the node's network, made (clusternet.SetUp) before the node starts:
	// each pod's namespace joins it. Required unless Processes.
	Network *clusternet.Plan
	// Log gets a line for each pod once it is first ready: how long each step of its
	// start took. Nil discards them.
	Log io.Writer
	// ClientCAFile holds the CA of the API server's client certificate
	// (--kubelet-client-certificate): the kubelet API (logs, exec, attach,
	// port-forward) serves no client without a certificate it signed.
	ClientCAFile string
}

// Node is a running node of programs.
type Node struct {
	ctx    context.Context
	client kubernetes.Interface
	images *Images
	dir    string
	// runtime runs the pods' containers: isolated, or as plain processes.
	runtime runtime
	vk      *nodeutil.Node
	events  record.EventRecorder
	log     io.Writer // nil discards
	// env resolves each container's environment as it starts (env.go).
	env envSources

	mu       sync.Mutex
	pods     map[types.NamespacedName]*podRunner
	notifyFn func(*corev1.Pod)
	inFlight atomic.Pointer[func(ip string) int64]
}

// Supported says why the node cannot isolate pods in runc containers on this machine,
// or nil: it needs Linux, root (network namespaces, cgroups), runc, and what the pods'
// cluster network needs (clusternet.Supported: ip, nft). Without them it
// can still run pods as plain processes (ChooseMode).
func Supported(runcPath string) error {
	if goruntime.GOOS != "linux" {
		return fmt.Errorf("isolating programs in runc containers needs Linux (this is %s)", goruntime.GOOS)
	}
	if os.Geteuid() != 0 {
		return errors.New("isolating programs in runc containers needs root: each pod gets a network namespace and cgroups (run ferry up with sudo)")
	}
	if _, err := exec.LookPath(runcPath); err != nil {
		return fmt.Errorf("isolating programs needs runc (apt-get install runc): %w", err)
	}
	return clusternet.Supported()
}

// Start registers the node and runs it until ctx ends, when it stops every pod's
// containers before Done closes.
func Start(ctx context.Context, opts Options) (*Node, error) {
	runcPath := opts.Runc
	if runcPath == "" {
		runcPath = "runc"
	}
	support := Supported(runcPath)
	if opts.Processes {
		support = ProcessesSupported()
	}
	if support == nil && !opts.Processes && opts.Network == nil {
		support = errors.New("isolated pods need the node's network (Options.Network)")
	}
	if support != nil {
		return nil, support
	}
	n := &Node{ctx: ctx, client: opts.Client, images: opts.Images, dir: opts.Dir, pods: map[types.NamespacedName]*podRunner{}, log: opts.Log}
	if err := os.MkdirAll(filepath.Join(opts.Dir, "pods"), 0o700); err != nil {
		return nil, err
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	cert, key, err := certutil.GenerateSelfSignedCertKey(nodeIP, []net.IP{net.ParseIP(nodeIP)}, []string{NodeName})
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(cert, key)
	if err != nil {
		return nil, err
	}
	clientCA, err := os.ReadFile(opts.ClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("the kubelet API's client CA: %w", err)
	}
	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(clientCA) {
		return nil, fmt.Errorf("the kubelet API's client CA %s holds no certificate", opts.ClientCAFile)
	}
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: opts.Client.CoreV1().Events("")})
	n.events = broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: NodeName})
	if opts.Processes {
		n.runtime = newProcesses(opts.Client, n.events)
	} else if n.runtime, err = newIsolated(ctx, &runc{binary: runcPath, root: filepath.Join(opts.Dir, "runc")}, *opts.Network, opts.Client); err != nil {
		broadcaster.Shutdown()
		return nil, err
	}
	_ = os.RemoveAll(filepath.Join(opts.Dir, "pods"))
	mux := http.NewServeMux()
	n.vk, err = nodeutil.NewNode(NodeName, func(cfg nodeutil.ProviderConfig) (nodeutil.Provider, node.NodeProvider, error) {
		describeNode(cfg.Node, port, opts.Processes)
		n.env = envSources{client: opts.Client, services: cfg.Services, allocatable: nodeCapacity()}
		return (*provider)(n), nil, nil
	}, nodeutil.WithClient(opts.Client), nodeutil.AttachProviderRoutes(mux),
		func(cfg *nodeutil.NodeConfig) error {
			// Only the API server, by its client certificate, as a kubelet with
			// --client-ca-file serves it: the CA is its alone, so the certificate is
			// the whole authorization.
			cfg.HTTPListenAddr = net.JoinHostPort(nodeIP, strconv.Itoa(port))
			cfg.Handler = mux
			cfg.TLSConfig = &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12,
				ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs}
			cfg.EventRecorder = n.events
			cfg.NumWorkers = 4
			// The node resolves env when a container starts, when the pod has its
			// address (env.go).
			cfg.SkipDownwardAPIResolution = true
			cfg.PodControllerConfigOpts = append(cfg.PodControllerConfigOpts, podQueues, statusRetries)
			return nil
		})
	if err != nil {
		n.runtime.close()
		return nil, err
	}
	go func() {
		_ = n.vk.Run(ctx)
		broadcaster.Shutdown()
	}()
	if err := n.vk.WaitReady(ctx, time.Minute); err != nil {
		n.runtime.close()
		return nil, fmt.Errorf("the program node: %w", err)
	}
	return n, nil
}

// Done closes once the node has stopped every pod.
func (n *Node) Done() <-chan struct{} { return n.vk.Done() }

// Stop waits, after ctx ended, for every pod's containers to stop.
func (n *Node) Stop() {
	<-n.vk.Done()
	n.mu.Lock()
	runners := make([]*podRunner, 0, len(n.pods))
	for _, r := range n.pods {
		runners = append(runners, r)
	}
	n.mu.Unlock()
	for _, r := range runners {
		r.cancel()
		<-r.done
	}
	n.runtime.close()
}

// DrainWith tells the node how many requests the gateway has in flight to a pod's
// address, so that a pod leaves as soon as its last request is answered rather than
// at the end of its preStop sleep. Without it, the whole sleep is waited.
func (n *Node) DrainWith(inFlight func(ip string) int64) { n.inFlight.Store(&inFlight) }

// minDrain is how long a leaving pod keeps serving in any case: for the gateways to see
// its deletion, after which they send it nothing new.
const minDrain = time.Second

// drain waits out a leaving pod's preStop sleep, or less once no request is in flight
// to it, and returns by deadline.
func (n *Node) drain(ctx context.Context, ip string, sleepFor time.Duration, deadline time.Time) {
	end := time.Now().Add(sleepFor)
	if end.After(deadline) {
		end = deadline
	}
	sleep(ctx, min(minDrain, time.Until(end)))
	for time.Now().Before(end) {
		if f := n.inFlight.Load(); f != nil && (*f)(ip) == 0 {
			return
		}
		if !sleep(ctx, min(100*time.Millisecond, time.Until(end))) {
			return
		}
	}
}

func (n *Node) notify(p *corev1.Pod) {
	n.mu.Lock()
	f := n.notifyFn
	n.mu.Unlock()
	if f != nil {
		f(p)
	}
}

// forget removes a pod whose containers have all stopped from the API server, as the
// kubelet does: virtual-kubelet would wait for the end of its grace period, which the
// drain leaves minutes away.
func (n *Node) forget(ctx context.Context, pod *corev1.Pod) {
	err := n.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		GracePeriodSeconds: ptr(int64(0)), Preconditions: &metav1.Preconditions{UID: &pod.UID}})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		n.event(pod, corev1.EventTypeWarning, "FailedDelete", "removing the stopped pod: "+err.Error())
	}
}

func (n *Node) event(pod *corev1.Pod, kind, reason, message string) {
	n.events.Event(pod, kind, reason, message)
}

func describeNode(node *corev1.Node, port int, processes bool) {
	capacity := nodeCapacity()
	node.Labels["type"] = "ferry-programs"
	node.Labels["kubernetes.io/os"] = "linux"
	node.Status.Capacity, node.Status.Allocatable = capacity, capacity
	// No Hostname address: the API server would prefer it, and nothing resolves it.
	node.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: nodeIP}}
	node.Status.DaemonEndpoints.KubeletEndpoint.Port = int32(port)
	node.Status.NodeInfo = corev1.NodeSystemInfo{OperatingSystem: "linux", Architecture: goruntime.GOARCH,
		KubeletVersion: "ferry-programs", ContainerRuntimeVersion: "runc"}
	if processes {
		// Not isolated: kubectl get node -o wide and describe say so.
		node.Labels["programs.ferry.dev/isolation"] = "none"
		node.Status.NodeInfo.ContainerRuntimeVersion = "processes (not isolated)"
	}
}

// nodeCapacity is the node's capacity and allocatable: the machine's CPUs, and more
// memory and pods than a laptop's programs take.
func nodeCapacity() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(goruntime.NumCPU()), resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse("64Gi"),
		corev1.ResourcePods:   resource.MustParse("250"),
	}
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(nodeIP, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// provider is the Node as virtual-kubelet sees it: the pod lifecycle, and the kubelet
// API that kubectl logs goes through.
type provider Node

var _ nodeutil.Provider = (*provider)(nil)

func key(namespace, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: namespace, Name: name}
}

func (p *provider) CreatePod(_ context.Context, pod *corev1.Pod) error {
	n := (*Node)(p)
	n.mu.Lock()
	defer n.mu.Unlock()
	k := key(pod.Namespace, pod.Name)
	if r := n.pods[k]; r != nil && r.pod.UID == pod.UID {
		return nil
	}
	r := newPodRunner(n, n.runtime, pod)
	n.pods[k] = r
	go r.run()
	return nil
}

// UpdatePod takes nothing: what may change in a running pod's spec (an image, a
// deadline, tolerations) is not something a Revision's pods change.
func (p *provider) UpdatePod(context.Context, *corev1.Pod) error { return nil }

// DeletePod starts the pod's termination; its terminal status follows by NotifyPods.
func (p *provider) DeletePod(_ context.Context, pod *corev1.Pod) error {
	n := (*Node)(p)
	n.mu.Lock()
	r := n.pods[key(pod.Namespace, pod.Name)]
	n.mu.Unlock()
	if r == nil {
		return errdefs.NotFoundf("pod %s/%s is not on this node", pod.Namespace, pod.Name)
	}
	r.mu.Lock()
	r.pod.DeletionGracePeriodSeconds = pod.DeletionGracePeriodSeconds
	r.mu.Unlock()
	r.cancel()
	go func() {
		<-r.done
		n.mu.Lock()
		if n.pods[key(pod.Namespace, pod.Name)] == r {
			delete(n.pods, key(pod.Namespace, pod.Name))
		}
		n.mu.Unlock()
	}()
	return nil
}

func (p *provider) runner(namespace, name string) (*podRunner, error) {
	n := (*Node)(p)
	n.mu.Lock()
	defer n.mu.Unlock()
	r := n.pods[key(namespace, name)]
	if r == nil {
		return nil, errdefs.NotFoundf("pod %s/%s is not on this node", namespace, name)
	}
	return r, nil
}

func (p *provider) GetPod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	r, err := p.runner(namespace, name)
	if err != nil {
		return nil, err
	}
	return r.snapshot(), nil
}

func (p *provider) GetPodStatus(ctx context.Context, namespace, name string) (*corev1.PodStatus, error) {
	pod, err := p.GetPod(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return &pod.Status, nil
}

func (p *provider) GetPods(context.Context) ([]*corev1.Pod, error) {
	n := (*Node)(p)
	n.mu.Lock()
	runners := make([]*podRunner, 0, len(n.pods))
	for _, r := range n.pods {
		runners = append(runners, r)
	}
	n.mu.Unlock()
	pods := make([]*corev1.Pod, 0, len(runners))
	for _, r := range runners {
		pods = append(pods, r.snapshot())
	}
	return pods, nil
}

// NotifyPods takes the callback by which pod status changes reach the API server.
func (p *provider) NotifyPods(_ context.Context, f func(*corev1.Pod)) {
	n := (*Node)(p)
	n.mu.Lock()
	n.notifyFn = f
	n.mu.Unlock()
}

// GetContainerLogs serves kubectl logs from the container's log file, read as the
// kubelet reads it.
func (p *provider) GetContainerLogs(ctx context.Context, namespace, podName, containerName string, opts vkapi.ContainerLogOpts) (io.ReadCloser, error) {
	r, err := p.runner(namespace, podName)
	if err != nil {
		return nil, err
	}
	path, running, err := r.containerLog(containerName, opts.Previous)
	if err != nil {
		return nil, errdefs.AsNotFound(err)
	}
	lo := &logs.LogOptions{Follow: opts.Follow, Timestamp: opts.Timestamps}
	if opts.Tail > 0 {
		lo.TailLines = ptr(int64(opts.Tail))
	}
	if opts.LimitBytes > 0 {
		lo.LimitBytes = ptr(int64(opts.LimitBytes))
	}
	switch {
	case !opts.SinceTime.IsZero():
		lo.Since = opts.SinceTime
	case opts.SinceSeconds > 0:
		lo.Since = time.Now().Add(-time.Duration(opts.SinceSeconds) * time.Second)
	}
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(readLogs(ctx, path, lo, running, pw))
	}()
	return pr, nil
}

var errNotServed = errdefs.InvalidInput("not served by Ferry's program node")

func (p *provider) GetStatsSummary(context.Context) (*statsv1alpha1.Summary, error) {
	return nil, errNotServed
}

func (p *provider) GetMetricsResource(context.Context) ([]*dto.MetricFamily, error) {
	return nil, errNotServed
}
