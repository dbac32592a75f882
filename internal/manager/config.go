package manager

import (
	"context"
	"fmt"

	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/ferry-serving/ferry/internal/config"
)

// addConfigStore adds to mgr a Store of Knative's ConfigMaps in ferry-system. The
// manager starts it with its caches, on every replica, and starts the controllers and
// webhooks once it has loaded the ConfigMaps. A bad value is reported with a Warning
// Event on its ConfigMap, from the "ferry-config" component, when report is set
// (the log line is written either way). Its wait for the ConfigMaps ends when stopping
// does (see stoppableCache).
func addConfigStore(mgr ctrl.Manager, stopping context.Context, report bool) (*config.Store, error) {
	cs, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("a client for the ConfigMaps: %w", err)
	}
	opts := config.StoreOptions{Logger: mgr.GetLogger().WithName("config")}
	if report {
		opts.Recorder = mgr.GetEventRecorder("ferry-config")
	}
	store := config.NewStore(cs, opts)
	if err := mgr.Add(stoppableStore{Store: store, stopping: stopping}); err != nil {
		return nil, fmt.Errorf("adding the config store: %w", err)
	}
	return store, nil
}

// stoppableStore is the Store as the manager starts it, one of its caches.
type stoppableStore struct {
	*config.Store
	stopping context.Context
}

func (s stoppableStore) GetCache() cache.Cache {
	return &stoppableCache{Cache: s.Store.GetCache(), stopping: s.stopping}
}
