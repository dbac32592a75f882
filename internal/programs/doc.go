// Package programs is a node of the local cluster whose pods really run: `ferry up`
// runs a user's program behind Ferry, where every other pod is simulated by kwok.
//
// Which pods: those with an image that Images runs, a ko://IMPORT/PATH image (built
// with the go command in ferry up's directory, once per import path, and run at
// /ko-app/<name> as ko's images do) or an image mapped by --local-image to an
// executable. A kube-scheduler filter in internal/localcluster sends those pods to this
// node, NodeName, and every other pod to kwok's, so nothing simulated today moves.
//
// How: virtual-kubelet serves the Node, its Lease, pod sync and the kubelet API
// (kubectl logs, exec, attach, port-forward: exec.go), to the API server's client
// certificate alone; this package is its provider. Each pod gets a network namespace of
// its own with an IP from the node's /24, joined to the node's namespace that
// internal/clusternet makes (network.go), where kube-proxy's rules lead ClusterIPs to
// their endpoints; its resolv.conf names the cluster's DNS (resolvconf.go). The
// gateway dials podIP:port as on a cluster, and two pods of one Revision may both
// listen on :8080, as Knative's test images and many apps do whatever PORT says. Each
// container is a runc container (spec.go, runc.go): its own mount, PID, IPC and UTS
// namespaces, a read-only root holding only the host's system directories, the
// program, a private /dev, a writable /tmp, the pod's volumes at their mountPath
// (volumes.go), the user, memory and CPU limits of its spec, and cgroups mounted
// read-only.
//
// Whether a pod runs isolated or as plain processes (below) is its runtime's business
// alone (runtime.go: isolated.go, processes.go): the pod's runner is handed one and
// does the same with either.
//
// What a kubelet does for a pod, this node does too (pod.go, container.go): the env
// and envFrom that virtual-kubelet resolves, command and args with $(VAR), init
// containers one after another to completion before the containers, readiness,
// liveness and startup probes with the kubelet's own probers (probe.go), restarts with
// the CrashLoopBackOff back-off, exit codes and the log's last lines as the termination
// message, the status a kubelet reports (podstatus.go), logs in the CRI format read by
// the kubelet's reader (logs.go), and on deletion (terminate.go) the preStop sleep,
// SIGTERM, then SIGKILL. Ferry being the gateway too, a
// leaving pod's drain ends as soon as the gateway has no request in flight to it
// (Node.DrainWith) rather than at the end of the 310 s preStop sleep, as Knative's
// queue-proxy ends its own wait once drained. Until a container's first readiness
// success, the probe runs every 25 ms, as Knative's queue-proxy probes a new pod
// (every 50 ms there): Ferry has no queue-proxy.
//
// Isolation needs Linux, root, runc, iproute2 and nftables (Debian's packages);
// Supported says what is missing. Without them (macOS, not root), or when ferry up is asked to
// (--program-isolation=none, ChooseMode), the node runs each container as a plain
// process of the host instead (processes.go): every pod at 127.0.0.1, its serving
// container with a free port of its own in PORT, recorded on the pod for the gateway
// (v1.ServingPortAnnotationKey); logs, probes, restarts, the drain and deletion as
// above. A pod with volumes waits with NeedsIsolation for good; the user, limits and a
// read-only root are not applied (an Event says so). ProcessesCaveats is what ferry up
// prints.
package programs
