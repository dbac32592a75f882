//go:build nolocalcluster

package main

import "context"

const withLocalCluster = false

func startLocalCluster(context.Context, localClusterOptions) (localCluster, error) {
	return nil, errNoLocalCluster
}

func programsMode(string) (bool, error, string, error) { return false, nil, "", errNoLocalCluster }
