package main

import (
	"context"
	"errors"
	"io"

	"k8s.io/client-go/rest"
)

// localCluster is what the commands use of internal/localcluster's Cluster; naming it
// here keeps the package out of binaries built with -tags nolocalcluster.
type localCluster interface {
	RESTConfig() *rest.Config
	// ControllerRESTConfig is for Ferry's in-process controller: a user of its own,
	// ControllerUser, whose derived objects skip the webhooks (users' writes do not).
	ControllerRESTConfig() *rest.Config
	ControllerUser() string
	KubeconfigPath() string
	// DrainWith tells the node of local programs, if there is one, how many requests
	// the gateway has in flight to a pod's IP.
	DrainWith(inFlight func(ip string) int64)
	// PodHostAddr is where the program node's pods reach the host, "" when they share
	// its network or there is no such node.
	PodHostAddr() string
	// ServeToPods makes a Service without a selector lead to port on PodHostAddr.
	ServeToPods(ctx context.Context, namespace, name string, port int) error
	Stop() error
}

type localClusterOptions struct {
	dataDir string    // empty: a temporary directory that Stop removes
	port    int       // the kube-apiserver's on 127.0.0.1; 0: a free one
	log     io.Writer // the control plane's logs, besides control-plane.log in dataDir
	// programs adds a node that runs the pods of ko:// images, and of the images of
	// localImages (--local-image's IMAGE=EXECUTABLE pairs), as processes.
	localImages []string
	programs    bool
	// programProcesses runs that node's pods as plain processes, without isolation.
	programProcesses bool
}

// errNoLocalCluster is what ferry up and ferry scale without --kubeconfig say in a
// binary built without the local cluster.
var errNoLocalCluster = errors.New("this ferry is built without the local cluster (-tags nolocalcluster, as in Ferry's container images); `make build` builds one with it")
