package main

import (
	"fmt"

	"github.com/ferry-serving/ferry/internal/version"
	"github.com/spf13/cobra"
)

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print Ferry's version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			embedded := "; embedded Kubernetes v1.37.2"
			if !withLocalCluster {
				embedded = ""
			}
			fmt.Fprintf(cmd.OutOrStdout(), "ferry %s (Knative Serving v1 API%s)\n", version.Version, embedded)
		},
	}
}
