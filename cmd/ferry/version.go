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
			fmt.Fprintf(cmd.OutOrStdout(), "ferry %s (Knative Serving v1 API; embedded Kubernetes v1.37.2)\n", version.Version)
		},
	}
}
