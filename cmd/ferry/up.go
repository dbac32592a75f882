package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ferry-serving/ferry/internal/localcluster"
	"github.com/spf13/cobra"
)

func newUpCommand() *cobra.Command {
	var dataDir string
	var port int
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Run a local Kubernetes control plane with Ferry inside, until Ctrl-C",
		Long: `Run etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (simulated
pods on one fake node) in this process, with Ferry's CRDs installed, and write a
kubeconfig so that kubectl and kn work against it. Objects persist in the data
directory across restarts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			start := time.Now()
			if dataDir == "" {
				home, err := os.UserHomeDir()
				if err != nil {
					return fmt.Errorf("no --data-dir given and no home directory: %w", err)
				}
				dataDir = filepath.Join(home, ".ferry")
			}
			ctx := cmd.Context()
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "Starting the local cluster in %s ...\n", dataDir)
			cluster, err := localcluster.Start(ctx, localcluster.Options{DataDir: dataDir, APIServerPort: port})
			if err != nil {
				return err
			}
			fmt.Fprintf(out, "Ready in %.1fs. Logs: %s\n\n  export KUBECONFIG=%s\n  kubectl get ksvc\n\nCtrl-C stops it.\n",
				time.Since(start).Seconds(), filepath.Join(dataDir, "control-plane.log"), cluster.KubeconfigPath())
			<-ctx.Done()
			fmt.Fprintln(out, "Stopping ...")
			return cluster.Stop()
		},
	}
	cmd.Flags().StringVar(&dataDir, "data-dir", "", "where the cluster keeps its state and kubeconfig (default ~/.ferry)")
	cmd.Flags().IntVar(&port, "port", 0, "kube-apiserver port on 127.0.0.1 (default: a free one)")
	return cmd
}
