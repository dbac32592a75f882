package manager

import "k8s.io/client-go/rest"

// withoutCompression is cfg with gzip off. An informer lists through a watch
// (WatchList), and the API server then compresses that watch for its whole life, one
// gzip flush per event: at a burst of 500 Services, about 2 ms of the API server's
// CPU and 0.5 ms of Ferry's per Service (docs/scale.md), to save bandwidth between a
// controller and its API server, which a cluster's control plane is not short of.
func withoutCompression(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.DisableCompression = true
	return cfg
}
