//go:build nolocalcluster

package main

import (
	"context"

	"github.com/spf13/cobra"
)

const withLocalCluster = false

func startLocalCluster(context.Context, localClusterOptions) (localCluster, error) {
	return nil, errNoLocalCluster
}

func programsMode(string) (bool, error, string, error) { return false, nil, "", errNoLocalCluster }

func localClusterCommands() []*cobra.Command { return nil }
