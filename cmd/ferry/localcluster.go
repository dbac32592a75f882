//go:build !nolocalcluster

package main

import (
	"context"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/spf13/cobra"

	"github.com/ferry-serving/ferry/internal/localcluster"
	"github.com/ferry-serving/ferry/internal/programs"
)

// withLocalCluster says whether this binary links the local cluster: kube-apiserver,
// kube-controller-manager, kube-scheduler, etcd and kwok, most of its size. Only
// `ferry up` and `ferry scale` without --kubeconfig use it, and only this file imports
// it, so -tags nolocalcluster builds the ferry of the container images without it.
const withLocalCluster = true

// localClusterGCPercent is the Go collector's GOGC for a process that runs the local
// cluster. The API server and etcd allocate for every write, and at 100 the collector
// took a fifth of the CPU of a burst; at 200 a burst of 500 Services is Ready in 26 s
// instead of 32, for 1.7 GiB of memory instead of 1.3 (docs/scale.md, fifth pass).
// 300 bought nothing more.
const localClusterGCPercent = 200

// localClusterMemoryShare caps what that lets the heap grow to, as a soft limit on the
// share of the memory the process may use (its cgroup's limit in a container, else the
// machine's): past it the collector runs more often again, so that a burst of
// thousands does not run out of memory where GOGC 100 would not have.
const localClusterMemoryShare = 0.6

// localClusterCommands are the commands ferry up runs of its own binary: kube-proxy,
// in the program node's network namespace (internal/localcluster).
func localClusterCommands() []*cobra.Command {
	return []*cobra.Command{localcluster.KubeProxyCommand()}
}

func startLocalCluster(ctx context.Context, opts localClusterOptions) (localCluster, error) {
	tuneCollector()
	var c *localcluster.Cluster
	var err error
	// The label tells the control plane's CPU from Ferry's in a profile (go tool
	// pprof -tags): goroutines inherit it.
	pprof.Do(ctx, pprof.Labels("component", "control-plane"), func(ctx context.Context) {
		var lo localcluster.Options
		lo, err = clusterOptions(opts)
		if err == nil {
			c, err = localcluster.Start(ctx, lo)
		}
	})
	if err != nil {
		return nil, err
	}
	return c, nil
}

// programsMode says how the node of local programs runs pods for --program-isolation
// (auto, runc or none): processes when as plain processes, with why not isolated and
// what does not hold then; or why it cannot run at all.
func programsMode(isolation string) (processes bool, notIsolated error, caveats string, err error) {
	m, err := programs.ChooseMode(programs.Isolation(isolation), "runc")
	return m.Processes, m.NotIsolated, programs.ProcessesCaveats, err
}

// clusterOptions are the local cluster's options, with a node of local programs when
// opts.programs asks for one. ko:// packages build in the working
// directory, as ko builds them where it runs; the built programs are kept in the data
// directory.
func clusterOptions(opts localClusterOptions) (localcluster.Options, error) {
	lo := localcluster.Options{DataDir: opts.dataDir, APIServerPort: opts.port, Log: opts.log, ProgramProcesses: opts.programProcesses}
	if !opts.programs {
		return lo, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return lo, err
	}
	cacheDir := filepath.Join(opts.dataDir, "programs", "built")
	if opts.dataDir == "" {
		cacheDir = filepath.Join(os.TempDir(), "ferry-programs-built")
	}
	lo.Programs, err = programs.ParseImages(opts.localImages, wd, cacheDir)
	return lo, err
}

// tuneCollector applies localClusterGCPercent and localClusterMemoryShare, unless the
// environment tunes the collector itself (GOGC, GOMEMLIMIT, or automemlimit's
// AUTOMEMLIMIT for the share). automemlimit reads the cgroup's limit: a share of the
// machine's memory would be no limit at all in a container given less of it.
func tuneCollector() {
	_, gogc := os.LookupEnv("GOGC")
	_, limit := os.LookupEnv("GOMEMLIMIT")
	if gogc || limit {
		return
	}
	debug.SetGCPercent(localClusterGCPercent)
	// Without a readable limit the collector keeps GOGC alone, as before the share.
	_, _ = memlimit.Set(memlimit.WithRatio(localClusterMemoryShare),
		memlimit.WithProvider(memlimit.ApplyFallback(memlimit.FromCgroup, memlimit.FromSystem)))
}
