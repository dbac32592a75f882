package scale

// The watches that follow the run's Services and, for the phases, their children:
// the run times what the watches see, so waiting adds no requests.

import (
	"context"
	"fmt"
	"time"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// watchServices runs an informer on the Services in ns ("": all namespaces) that
// match sel, calling f on every add and update, and returns once it has synced.
func (r *runner) watchServices(ctx context.Context, ns string, sel labels.Set, f func(*v1.Service)) (cache.SharedIndexInformer, error) {
	inf, err := r.watch(ctx, ns, nil, func() client.ObjectList { return &v1.ServiceList{} }, &v1.Service{}, sel.AsSelector().String(), func(obj any) {
		if svc, ok := obj.(*v1.Service); ok {
			f(svc)
		}
	})
	if err != nil {
		return nil, err
	}
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return nil, fmt.Errorf("the watch on Services in %s did not sync: %w", r.where(ns), context.Cause(ctx))
	}
	return inf, nil
}

// watchChildren watches the objects the run's Services own, down to the pods, and
// records the milestones they reach. KIngresses do not carry the run's label; all
// of the namespace's Knative ones are watched (with several namespaces: the
// cluster's, those outside the run's namespaces dropped as they arrive).
func (r *runner) watchChildren(ctx context.Context) error {
	run := labels.Set{RunLabel: r.o.RunID}.AsSelector().String()
	var only map[string]bool
	if r.scope() == metav1.NamespaceAll {
		only = r.inRun
	}
	kinds := []struct {
		newList  func() client.ObjectList
		example  runtime.Object
		selector string
		only     map[string]bool
	}{
		{func() client.ObjectList { return &v1.ConfigurationList{} }, &v1.Configuration{}, run, nil},
		{func() client.ObjectList { return &v1.RouteList{} }, &v1.Route{}, run, nil},
		{func() client.ObjectList { return &v1.RevisionList{} }, &v1.Revision{}, run, nil},
		{func() client.ObjectList { return &appsv1.DeploymentList{} }, &appsv1.Deployment{}, run, nil},
		{func() client.ObjectList { return &corev1.PodList{} }, &corev1.Pod{}, run, nil},
		{func() client.ObjectList { return &netv1alpha1.IngressList{} }, &netv1alpha1.Ingress{}, v1.ServiceLabelKey, only},
	}
	var synced []cache.InformerSynced
	for _, k := range kinds {
		inf, err := r.watch(ctx, r.scope(), k.only, k.newList, k.example, k.selector, r.reach)
		if err != nil {
			return err
		}
		synced = append(synced, inf.HasSynced)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("the watches in %s did not sync: %w", r.where(r.scope()), context.Cause(ctx))
	}
	return nil
}

// reach records the milestones obj shows, the first time each is seen.
func (r *runner) reach(obj any) {
	now := time.Now()
	name, reached := milestonesOf(obj)
	if len(reached) == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	i, ok := r.index[name]
	if !ok || namespaceOf(obj) != r.nsOf(i) {
		return
	}
	for _, m := range reached {
		if r.reached[i][m].IsZero() {
			r.reached[i][m] = now
		}
	}
}

// watch runs an informer on one kind in ns ("": all namespaces), calling f on every
// add and update. With only, objects outside those namespaces are dropped before
// they reach the cache. Managed fields are dropped from its cache.
func (r *runner) watch(ctx context.Context, ns string, only map[string]bool, newList func() client.ObjectList, example runtime.Object, selector string, f func(any)) (cache.SharedIndexInformer, error) {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			opts.LabelSelector = selector
			l := newList()
			if err := r.c.List(ctx, l, &client.ListOptions{Namespace: ns, Raw: &opts}); err != nil || only == nil {
				return l, err
			}
			return l, filterList(l, only)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			opts.LabelSelector = selector
			w, err := r.c.Watch(ctx, newList(), &client.ListOptions{Namespace: ns, Raw: &opts})
			if err != nil || only == nil {
				return w, err
			}
			return filterWatch(w, only), nil
		},
	}
	inf := cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{})
	if err := inf.SetTransform(func(obj any) (any, error) {
		if o, ok := obj.(metav1.Object); ok {
			o.SetManagedFields(nil)
		}
		return obj, nil
	}); err != nil {
		return nil, err
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    f,
		UpdateFunc: func(_, obj any) { f(obj) },
	}); err != nil {
		return nil, err
	}
	go inf.RunWithContext(ctx)
	return inf, nil
}
