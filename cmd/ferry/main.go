// Command ferry runs Ferry: a Knative Serving v1 control plane.
//
//	ferry up          a local cluster with Ferry inside, for trying it out
//	ferry controller  Ferry's reconcilers against a cluster
//	ferry gateway     Ferry's gateway against a cluster
//	ferry dashboard   a web dashboard for the cluster of a kubeconfig (ferry up serves one)
//	ferry explain     why a Knative object is not Ready or routed (also kubectl ferry explain)
//	ferry load        steady load against a local gateway, with latency percentiles
//	ferry version
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := &cobra.Command{
		Use:           "ferry",
		Short:         "Ferry serves Knative Services: a Knative Serving v1 control plane",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newUpCommand(), newControllerCommand(), newGatewayCommand(), newScaleCommand(), newSoakCommand(), newVersionCommand())
	root.AddCommand(newExplainCommand(), newLoadCommand(), newDashboardCommand())
	root.AddCommand(localClusterCommands()...)
	asKubectlPlugin(root)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "ferry:", err)
		os.Exit(1)
	}
}
