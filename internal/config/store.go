package config

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/workqueue"
	crcache "sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/ferry-serving/ferry/api/duck"
)

// maxEventMessage bounds the parse error in an Event (the API server refuses an Event
// note over 1 kB).
const maxEventMessage = 800

// Names are the ConfigMaps a Store watches.
var Names = []string{DomainConfigName, NetworkConfigName, DefaultsConfigName, GCConfigName, DeploymentConfigName, FeaturesConfigName,
	AutoscalerConfigName, CertManagerConfigName, ObservabilityConfigName}

// StoreOptions configure a Store.
type StoreOptions struct {
	// Namespace holds the ConfigMaps (default SystemNamespace).
	Namespace string
	// Recorder records the Warning Event on a ConfigMap with a bad value (none if nil).
	Recorder events.EventRecorder
	// Logger logs loads and bad values (discarded if zero).
	Logger logr.Logger
}

// Store watches Ferry's nine ConfigMaps (Names) and hands out the current
// configuration as an immutable snapshot (Load). It is a controller-runtime Runnable
// that runs on every replica, leader or not.
//
// Rules, per ConfigMap: a missing one means its defaults; a value that does not parse
// is reported (an error log line and a Warning Event on the ConfigMap naming the key)
// and the ConfigMap's last good value stays in force (its defaults if it never had
// one); deleting it brings back its defaults. A key Ferry takes but does not act on,
// set to anything but Knative's default, is reported too (NoEffect), once per change.
//
// It watches with a client-go informer restricted to its namespace
// (informers.WithNamespace), not through the manager's cache: the manager's cache
// stays as it is (no ConfigMap informer in it, cluster-wide or not), a namespaced Role
// is all the RBAC it needs, it runs the same under any manager (tests build their
// own), and it can be unit-tested with a fake clientset. To the manager it presents a
// cache (GetCache), so the manager starts it with its caches and starts the
// controllers only once the first snapshot is loaded: no Route is reconciled with a
// domain the ConfigMaps are about to change.
type Store struct {
	client    kubernetes.Interface
	namespace string
	recorder  events.EventRecorder
	log       logr.Logger

	current atomic.Pointer[Config]
	loaded  chan struct{}

	mu          sync.Mutex
	subscribers []func(old, new *Config)

	// Owned by the goroutine of Start: the parts as parsed, and as last published.
	parts, published Config
	// seen is the data last handled of each ConfigMap present.
	seen map[string]map[string]string
}

// NewStore returns a Store reading through client. Until it has started and loaded the
// ConfigMaps, Load returns the defaults.
func NewStore(client kubernetes.Interface, opts StoreOptions) *Store {
	if opts.Namespace == "" {
		opts.Namespace = SystemNamespace
	}
	s := &Store{client: client, namespace: opts.Namespace, recorder: opts.Recorder,
		log: opts.Logger, loaded: make(chan struct{}), parts: *Default(), seen: map[string]map[string]string{}}
	s.published = s.parts
	first := s.parts // a copy: the Store's goroutine changes parts and published
	s.current.Store(&first)
	return s
}

// Load returns the current configuration. Never modify it.
func (s *Store) Load() *Config { return s.current.Load() }

// OnChange registers f to run after every change of the configuration, with the
// snapshots before and after. f runs on the Store's goroutine, one call at a time, and
// must be quick (enqueue work, do not do it).
func (s *Store) OnChange(f func(old, new *Config)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.subscribers = append(s.subscribers, f)
}

// HasSynced reports whether the first snapshot has been loaded.
func (s *Store) HasSynced() bool {
	select {
	case <-s.loaded:
		return true
	default:
		return false
	}
}

// WaitForSync waits until the first snapshot is loaded, or ctx is done (false).
func (s *Store) WaitForSync(ctx context.Context) bool {
	select {
	case <-s.loaded:
		return true
	case <-ctx.Done():
		return false
	}
}

// NeedLeaderElection is false: every replica needs the configuration.
func (s *Store) NeedLeaderElection() bool { return false }

// GetCache makes the manager treat the Store as one of its caches: it is started
// before the controllers, which wait for its WaitForCacheSync. Only WaitForCacheSync
// may be called on the result.
func (s *Store) GetCache() crcache.Cache { return syncOnly{s: s} }

// syncOnly is the face the Store shows the manager's start sequence.
type syncOnly struct {
	crcache.Cache // nil: nothing but WaitForCacheSync is called
	s             *Store
}

func (c syncOnly) WaitForCacheSync(ctx context.Context) bool { return c.s.WaitForSync(ctx) }

// Start watches the ConfigMaps until ctx is done.
func (s *Store) Start(ctx context.Context) error {
	factory := informers.NewSharedInformerFactoryWithOptions(s.client, 0, informers.WithNamespace(s.namespace))
	cms := factory.Core().V1().ConfigMaps()
	informer := cms.Informer()
	if err := informer.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		s.log.Error(err, "Cannot watch the ConfigMaps", "namespace", s.namespace)
	}); err != nil {
		return err
	}
	queue := workqueue.NewTyped[string]()
	enqueue := func(obj any) {
		key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
		if err != nil {
			return
		}
		if _, name, err := cache.SplitMetaNamespaceKey(key); err == nil && watched(name) {
			queue.Add(name)
		}
	}
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
		DeleteFunc: enqueue,
	}); err != nil {
		return err
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	go func() {
		<-ctx.Done()
		queue.ShutDown()
	}()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		return nil // ctx is done
	}
	lister := cms.Lister().ConfigMaps(s.namespace)
	for _, name := range Names {
		s.sync(lister.Get(name))
	}
	s.publish()
	close(s.loaded)
	for {
		name, shutdown := queue.Get()
		if shutdown {
			return nil
		}
		cm, err := lister.Get(name)
		if apierrors.IsNotFound(err) {
			s.absent(name)
		} else {
			s.sync(cm, err)
		}
		s.publish()
		queue.Done(name)
	}
}

// absent takes in a ConfigMap that does not exist (any more): its defaults apply.
func (s *Store) absent(name string) {
	if _, ok := s.seen[name]; ok {
		s.log.Info("ConfigMap deleted: its defaults apply", "configmap", s.namespace+"/"+name)
	}
	delete(s.seen, name)
	setDefaults(&s.parts, name)
}

func watched(name string) bool {
	for _, n := range Names {
		if n == name {
			return true
		}
	}
	return false
}

// sync takes in one ConfigMap as the lister returned it. Data already handled (a
// relist, a change of labels) is not parsed or reported again.
func (s *Store) sync(cm *corev1.ConfigMap, err error) {
	if err != nil {
		if !apierrors.IsNotFound(err) {
			s.log.Error(err, "Reading a ConfigMap")
		}
		return // absent at start: the defaults are in place
	}
	key := s.namespace + "/" + cm.Name
	if seen, ok := s.seen[cm.Name]; ok && maps.Equal(seen, cm.Data) {
		return
	}
	s.seen[cm.Name] = maps.Clone(cm.Data)
	if err := parseInto(&s.parts, cm); err != nil {
		s.log.Error(err, "Invalid configuration: the last good one stays in force", "configmap", key)
		if s.recorder != nil {
			msg := err.Error()
			if len(msg) > maxEventMessage {
				msg = msg[:maxEventMessage] + "..."
			}
			s.recorder.Eventf(cm, nil, corev1.EventTypeWarning, duck.ReasonInvalidConfig, "LoadConfig",
				"Invalid %s, the last good configuration stays in force: %s", cm.Name, msg)
		}
		return
	}
	s.log.Info("Loaded configuration", "configmap", key, "resourceVersion", cm.ResourceVersion)
	if lines := NoEffect(cm.Name, cm.Data); len(lines) > 0 {
		msg := strings.Join(lines, "; ")
		s.log.Info("Keys Ferry does not act on", "configmap", key, "keys", msg)
		if s.recorder != nil {
			if len(msg) > maxEventMessage {
				msg = msg[:maxEventMessage] + "..."
			}
			s.recorder.Eventf(cm, nil, corev1.EventTypeWarning, duck.ReasonNoEffect, "LoadConfig", "%s", msg)
		}
	}
}

// publish makes the parts the current snapshot, if any changed, and tells the
// subscribers.
func (s *Store) publish() {
	if s.parts == s.published {
		return
	}
	old := s.current.Load()
	s.published = s.parts
	cfg := s.parts // a copy: later syncs do not touch what was published
	s.current.Store(&cfg)
	s.mu.Lock()
	subs := append([]func(old, new *Config){}, s.subscribers...)
	s.mu.Unlock()
	for _, f := range subs {
		f(old, &cfg)
	}
}

// parseInto parses cm and sets its part of c, leaving c alone on an error.
func parseInto(c *Config, cm *corev1.ConfigMap) error {
	var err error
	switch cm.Name {
	case DomainConfigName:
		var v *Domain
		if v, err = NewDomainFromConfigMap(cm); err == nil {
			c.Domain = v
		}
	case NetworkConfigName:
		var v *Network
		if v, err = NewNetworkFromConfigMap(cm); err == nil {
			c.Network = v
		}
	case DefaultsConfigName:
		var v *Defaults
		if v, err = NewDefaultsFromConfigMap(cm); err == nil {
			c.Defaults = v
		}
	case GCConfigName:
		var v *GC
		if v, err = NewGCFromConfigMap(cm); err == nil {
			c.GC = v
		}
	case DeploymentConfigName:
		var v *Deployment
		if v, err = NewDeploymentFromConfigMap(cm); err == nil {
			c.Deployment = v
		}
	case FeaturesConfigName:
		var v *Features
		if v, err = NewFeaturesFromConfigMap(cm); err == nil {
			c.Features = v
		}
	case AutoscalerConfigName:
		var v *Autoscaler
		if v, err = NewAutoscalerFromConfigMap(cm); err == nil {
			c.Autoscaler = v
		}
	case CertManagerConfigName:
		var v *CertManager
		if v, err = NewCertManagerFromConfigMap(cm); err == nil {
			c.CertManager = v
		}
	case ObservabilityConfigName:
		var v *Observability
		if v, err = NewObservabilityFromConfigMap(cm); err == nil {
			c.Observability = v
		}
	default:
		err = fmt.Errorf("%s is not a ConfigMap Ferry reads", cm.Name)
	}
	return err
}

func setDefaults(c *Config, name string) {
	d := Default()
	switch name {
	case DomainConfigName:
		c.Domain = d.Domain
	case NetworkConfigName:
		c.Network = d.Network
	case DefaultsConfigName:
		c.Defaults = d.Defaults
	case GCConfigName:
		c.GC = d.GC
	case DeploymentConfigName:
		c.Deployment = d.Deployment
	case FeaturesConfigName:
		c.Features = d.Features
	case AutoscalerConfigName:
		c.Autoscaler = d.Autoscaler
	case CertManagerConfigName:
		c.CertManager = d.CertManager
	case ObservabilityConfigName:
		c.Observability = d.Observability
	}
}
