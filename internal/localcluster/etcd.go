package localcluster

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// singleMemberCatchUpEntries is how many applied writes the local etcd keeps in
// memory after each in-memory snapshot (taken every 100): enough for its own raft
// progress, with no follower to catch up.
const singleMemberCatchUpEntries = 100

// startEtcd runs a single-member etcd on loopback ports and returns its client URL.
func startEtcd(dir string, logs io.Writer) (string, func(), error) {
	clientURL, err := freeLoopbackURL()
	if err != nil {
		return "", nil, err
	}
	peerURL, err := freeLoopbackURL()
	if err != nil {
		return "", nil, err
	}
	cfg := embed.NewConfig()
	cfg.Name = "ferry"
	cfg.Dir = dir
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.New(zapcore.NewCore(
		zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(logs), zapcore.WarnLevel)))
	// The local cluster serves one developer or one test run: etcd's defaults for
	// durability across machine crashes only cost latency here.
	cfg.UnsafeNoFsync = true
	cfg.QuotaBackendBytes = 8 << 30
	// etcd keeps the last SnapshotCatchUpEntries writes in memory (5,000 by default)
	// for a follower that falls behind; a single member has none. Every write is a
	// whole object, so the default holds ~13 MB the process cannot give back, and
	// fills it over the first half hour of a soak: memory that grows as if leaked.
	cfg.SnapshotCatchUpEntries = singleMemberCatchUpEntries

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return "", nil, fmt.Errorf("starting etcd in %s: %w", dir, err)
	}
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		e.Close()
		return "", nil, fmt.Errorf("etcd: %w", err)
	case <-time.After(30 * time.Second):
		e.Close()
		return "", nil, fmt.Errorf("etcd in %s was not ready after 30s", dir)
	}
	return clientURL.String(), e.Close, nil
}

// freeLoopbackURL picks a free port on 127.0.0.1. Another process may take it before
// etcd binds it; Start then fails with a clear error rather than misbehaving.
func freeLoopbackURL() (*url.URL, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return &url.URL{Scheme: "http", Host: ln.Addr().String()}, nil
}
