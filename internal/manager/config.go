package manager

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/ferry-serving/ferry/internal/config"
)

// addConfigStore adds to mgr a Store of Knative's ConfigMaps in ferry-system. The
// manager starts it with its caches, on every replica, and starts the controllers and
// webhooks once it has loaded the ConfigMaps. A bad value is reported with a Warning
// Event on its ConfigMap, from the "ferry-config" component.
func addConfigStore(mgr ctrl.Manager) (*config.Store, error) {
	cs, err := kubernetes.NewForConfigAndClient(mgr.GetConfig(), mgr.GetHTTPClient())
	if err != nil {
		return nil, fmt.Errorf("a client for the ConfigMaps: %w", err)
	}
	store := config.NewStore(cs, config.StoreOptions{
		Recorder: mgr.GetEventRecorder("ferry-config"),
		Logger:   mgr.GetLogger().WithName("config"),
	})
	if err := mgr.Add(store); err != nil {
		return nil, fmt.Errorf("adding the config store: %w", err)
	}
	return store, nil
}
