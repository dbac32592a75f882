//go:build !nolocalcluster

package main

import (
	"context"
	"os"
	"runtime/debug"

	"github.com/ferry-serving/ferry/internal/localcluster"
)

// withLocalCluster says whether this binary links the local cluster: kube-apiserver,
// kube-controller-manager, kube-scheduler, etcd and kwok, most of its size. Only
// `ferry up` and `ferry scale` without --kubeconfig use it, and only this file imports
// it, so -tags nolocalcluster builds the ferry of the container images without it.
const withLocalCluster = true

// localClusterGCPercent is the Go collector's GOGC for a process that runs the local
// cluster, unless the environment sets GOGC. The API server and etcd allocate for
// every write, and at 100 the collector took a fifth of the CPU of a burst; at 200 a
// burst of 500 Services is Ready in 26 s instead of 32, for 1.7 GiB of memory instead
// of 1.3 (docs/scale.md, fifth pass). 300 bought nothing more.
const localClusterGCPercent = 200

func startLocalCluster(ctx context.Context, opts localClusterOptions) (localCluster, error) {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(localClusterGCPercent)
	}
	return localcluster.Start(ctx, localcluster.Options{DataDir: opts.dataDir, APIServerPort: opts.port, Log: opts.log})
}
