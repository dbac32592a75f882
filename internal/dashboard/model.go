package dashboard

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/api/scheme"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
)

// kind is one kind the dashboard keeps, with its list type for the probe.
type kind struct {
	obj  client.Object
	list client.ObjectList
	// cluster is a cluster-scoped kind: not watched when the dashboard is scoped
	// to a namespace (whose users may not list it).
	cluster bool
}

// watched are the kinds the dashboard keeps: the Knative objects it lists, and what
// explain reads along a Service's chain, so that the explain line of every Service
// comes from memory. One informer (one list and one watch) each.
var watched = []kind{
	{obj: &v1.Service{}, list: &v1.ServiceList{}},
	{obj: &v1.Configuration{}, list: &v1.ConfigurationList{}},
	{obj: &v1.Revision{}, list: &v1.RevisionList{}},
	{obj: &v1.Route{}, list: &v1.RouteList{}},
	{obj: &v1beta1.DomainMapping{}, list: &v1beta1.DomainMappingList{}},
	{obj: &netv1alpha1.Ingress{}, list: &netv1alpha1.IngressList{}},
	{obj: &netv1alpha1.ClusterDomainClaim{}, list: &netv1alpha1.ClusterDomainClaimList{}, cluster: true},
	{obj: &appsv1.Deployment{}, list: &appsv1.DeploymentList{}},
	{obj: &appsv1.ReplicaSet{}, list: &appsv1.ReplicaSetList{}},
	{obj: &corev1.Pod{}, list: &corev1.PodList{}},
	{obj: &corev1.Event{}, list: &corev1.EventList{}},
}

// eventObjectName is the index explain's Event reads use (the API server's field
// selector involvedObject.name, answered from the cache).
const eventObjectName = "involvedObject.name"

// historyLength bounds each Service's traffic history: a rollout of a hundred steps
// fits several times over.
const historyLength = 500

// Model is the dashboard's view of the cluster: an informer cache of the watched
// kinds, and what the cache cannot tell afterwards, each Service's traffic split over
// time since the dashboard started.
type Model struct {
	cache  cache.Cache
	direct client.Reader
	// namespace, when set, is the only one watched; kinds are the kinds watched.
	namespace string
	kinds     []kind
	changes   *notifier

	mu      sync.Mutex
	traffic map[types.NamespacedName][]Split
	// reachErr is the API server's answer while the cache cannot sync (expired or
	// forbidden credentials): every page shows it.
	reachErr string
	synced   bool
}

// Split is a Service's status.traffic at one moment.
type Split struct {
	At      time.Time     `json:"at"`
	Targets []SplitTarget `json:"targets"`
}

// SplitTarget is one target's share; a Revision named twice (a tag and the default
// route) adds up in the chart but is listed once per target.
type SplitTarget struct {
	Revision string `json:"revision"`
	Tag      string `json:"tag,omitempty"`
	Percent  int64  `json:"percent"`
	URL      string `json:"url,omitempty"`
}

// NewModel builds the cache on cfg, of every namespace or of namespace alone;
// nothing is read before Start.
func NewModel(cfg *rest.Config, namespace string) (*Model, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.UserAgent = "ferry-dashboard"
	s := scheme.New()
	// What explain reads of a Revision's workload is labelled with it; the rest of
	// the cluster's Deployments, ReplicaSets and Pods are none of the dashboard's.
	ofRevisions := labels.NewSelector()
	req, err := labels.NewRequirement(v1.RevisionLabelKey, selection.Exists, nil)
	if err != nil {
		return nil, err
	}
	ofRevisions = ofRevisions.Add(*req)
	mapper, err := restMapper(s)
	if err != nil {
		return nil, err
	}
	var namespaces map[string]cache.Config
	kinds := watched
	if namespace != "" {
		namespaces = map[string]cache.Config{namespace: {}}
		kinds = slices.DeleteFunc(slices.Clone(watched), func(k kind) bool { return k.cluster })
	}
	c, err := cache.New(cfg, cache.Options{
		Scheme:            s,
		DefaultNamespaces: namespaces,
		Mapper:            mapper,
		DefaultTransform:  cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Pod{}:        {Label: ofRevisions},
			&appsv1.ReplicaSet{}: {Label: ofRevisions},
		},
		// An informer for a kind nobody asked for would be a watch the docs do not
		// count: every kind is started in Start.
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	direct, err := client.New(cfg, client.Options{Scheme: s, Mapper: mapper})
	if err != nil {
		return nil, fmt.Errorf("dashboard: %w", err)
	}
	return &Model{cache: c, direct: direct, namespace: namespace, kinds: kinds, changes: newNotifier(),
		traffic: map[types.NamespacedName][]Split{}}, nil
}

// restMapper knows the watched kinds without asking the API server: discovery with
// expired or forbidden credentials would fail before any page could say why, and
// the kinds are fixed.
func restMapper(s *runtime.Scheme) (meta.RESTMapper, error) {
	m := meta.NewDefaultRESTMapper(nil)
	for _, k := range watched {
		gvk, err := apiutil.GVKForObject(k.obj, s)
		if err != nil {
			return nil, err
		}
		scope := meta.RESTScopeNamespace
		if k.cluster {
			scope = meta.RESTScopeRoot
		}
		m.Add(gvk, scope)
		// A cache scoped to a namespace asks the scope of the list type too.
		m.Add(gvk.GroupVersion().WithKind(gvk.Kind+"List"), scope)
	}
	return m, nil
}

// Start runs the informers until ctx ends. Until they sync, it asks the API server
// for Services every few seconds, so that pages can show why they cannot.
func (m *Model) Start(ctx context.Context) error {
	if err := m.cache.IndexField(ctx, &corev1.Event{}, eventObjectName, func(o client.Object) []string {
		return []string{o.(*corev1.Event).InvolvedObject.Name}
	}); err != nil {
		return err
	}
	for _, k := range m.kinds {
		obj := k.obj
		inf, err := m.cache.GetInformer(ctx, obj)
		if err != nil {
			return err
		}
		h := toolscache.ResourceEventHandlerFuncs{
			AddFunc:    func(any) { m.changes.bump() },
			UpdateFunc: func(_, _ any) { m.changes.bump() },
			DeleteFunc: func(any) { m.changes.bump() },
		}
		if _, ok := obj.(*v1.Service); ok {
			h.AddFunc = func(o any) { m.recordTraffic(o); m.changes.bump() }
			h.UpdateFunc = func(_, o any) { m.recordTraffic(o); m.changes.bump() }
			h.DeleteFunc = func(o any) { m.forget(o); m.changes.bump() }
		}
		if _, err := inf.AddEventHandler(h); err != nil {
			return err
		}
	}
	go m.probeUntilSynced(ctx)
	return m.cache.Start(ctx)
}

func (m *Model) probeUntilSynced(ctx context.Context) {
	synced := make(chan struct{})
	go func() {
		if m.cache.WaitForCacheSync(ctx) {
			close(synced)
		}
	}()
	t := time.NewTicker(3 * time.Second)
	defer t.Stop()
	for {
		err := m.probe(ctx)
		m.mu.Lock()
		m.reachErr = ""
		if err != nil {
			m.reachErr = err.Error()
		}
		m.mu.Unlock()
		m.changes.bump()
		select {
		case <-ctx.Done():
			return
		case <-synced:
			m.mu.Lock()
			m.synced, m.reachErr = true, ""
			m.mu.Unlock()
			m.changes.bump()
			return
		case <-t.C:
		}
	}
}

// probe lists one object of each watched kind: the first refusal is why the cache
// does not sync (a user may list Services but not Pods, say).
func (m *Model) probe(ctx context.Context) error {
	for _, k := range m.kinds {
		if err := m.direct.List(ctx, k.list.DeepCopyObject().(client.ObjectList), client.InNamespace(m.namespace), client.Limit(1)); err != nil {
			return err
		}
	}
	return nil
}

// State says whether pages can be drawn: the cache has synced, or why not (the API
// server's message, or "" while it is still listing).
func (m *Model) State() (synced bool, reachErr string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.synced, m.reachErr
}

// Reader reads the watched kinds from memory.
func (m *Model) Reader() client.Reader { return m.cache }

// Changed returns a channel that closes at the next change of any watched object.
func (m *Model) Changed() <-chan struct{} { return m.changes.wait() }

// recordTraffic appends svc's status.traffic to its history when it differs from
// the last recorded.
func (m *Model) recordTraffic(o any) {
	svc, ok := o.(*v1.Service)
	if !ok {
		return
	}
	targets := make([]SplitTarget, 0, len(svc.Status.Traffic))
	for _, t := range svc.Status.Traffic {
		st := SplitTarget{Revision: t.RevisionName, Tag: t.Tag, URL: t.URL}
		if t.Percent != nil {
			st.Percent = *t.Percent
		}
		targets = append(targets, st)
	}
	key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	m.mu.Lock()
	defer m.mu.Unlock()
	h := m.traffic[key]
	if len(h) > 0 && slices.Equal(h[len(h)-1].Targets, targets) {
		return
	}
	h = append(h, Split{At: time.Now(), Targets: targets})
	if len(h) > historyLength {
		h = slices.Delete(h, 0, len(h)-historyLength)
	}
	m.traffic[key] = h
}

// Traffic is the Service's traffic history since the dashboard started.
func (m *Model) Traffic(key types.NamespacedName) []Split {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.traffic[key])
}

// forget drops a deleted Service's history: a Service created again under the name
// starts a new one.
func (m *Model) forget(o any) {
	if tomb, ok := o.(toolscache.DeletedFinalStateUnknown); ok {
		o = tomb.Obj
	}
	svc, ok := o.(*v1.Service)
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.traffic, types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name})
}

// notifier wakes every waiter at once: each wait gets the channel the next bump
// closes.
type notifier struct {
	mu sync.Mutex
	ch chan struct{}
}

func newNotifier() *notifier { return &notifier{ch: make(chan struct{})} }

func (n *notifier) wait() <-chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.ch
}

func (n *notifier) bump() {
	n.mu.Lock()
	defer n.mu.Unlock()
	close(n.ch)
	n.ch = make(chan struct{})
}
