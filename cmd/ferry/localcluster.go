//go:build !nolocalcluster

package main

import (
	"context"

	"github.com/ferry-serving/ferry/internal/localcluster"
)

// withLocalCluster says whether this binary links the local cluster: kube-apiserver,
// kube-controller-manager, kube-scheduler, etcd and kwok, most of its size. Only
// `ferry up` and `ferry scale` without --kubeconfig use it, and only this file imports
// it, so -tags nolocalcluster builds the ferry of the container images without it.
const withLocalCluster = true

func startLocalCluster(ctx context.Context, opts localClusterOptions) (localCluster, error) {
	return localcluster.Start(ctx, localcluster.Options{DataDir: opts.dataDir, APIServerPort: opts.port, Log: opts.log})
}
