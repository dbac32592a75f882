package soak

import (
	"context"
	"fmt"
	"time"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// watchAll follows the run's Services, Configurations, Routes and Revisions: their
// readiness into the readiness log, the Routes' traffic into the traffic log, the
// pods each Revision asks for, and the zero Service's pods coming and going.
func (r *run) watchAll(ctx context.Context) error {
	kinds := []struct {
		list    func() client.ObjectList
		example runtime.Object
		on      func(obj any, gone bool)
	}{
		{func() client.ObjectList { return &v1.ServiceList{} }, &v1.Service{}, func(obj any, gone bool) {
			s := obj.(*v1.Service)
			r.readiness.sighted("Service/"+s.Name, s.Generation, s.IsReady(), readyReason(&s.Status.Status), gone)
		}},
		{func() client.ObjectList { return &v1.ConfigurationList{} }, &v1.Configuration{}, func(obj any, gone bool) {
			c := obj.(*v1.Configuration)
			r.readiness.sighted("Configuration/"+c.Name, c.Generation, c.IsReady(), readyReason(&c.Status.Status), gone)
		}},
		{func() client.ObjectList { return &v1.RouteList{} }, &v1.Route{}, func(obj any, gone bool) {
			rt := obj.(*v1.Route)
			r.readiness.sighted("Route/"+rt.Name, rt.Generation, rt.IsReady(), readyReason(&rt.Status.Status), gone)
			if gone {
				r.traffic.gone(time.Now(), rt.Name)
			} else {
				r.traffic.observe(time.Now(), rt)
			}
		}},
		{func() client.ObjectList { return &v1.RevisionList{} }, &v1.Revision{}, func(obj any, gone bool) {
			rev := obj.(*v1.Revision)
			if gone {
				return
			}
			if rev.Status.DesiredReplicas != nil {
				r.pods.observe(time.Now(), rev.Name, *rev.Status.DesiredReplicas)
			}
			if rev.Labels[v1.ServiceLabelKey] == zero && rev.Status.ActualReplicas != nil {
				r.zeroReplicas(rev.Name, *rev.Status.ActualReplicas)
			}
		}},
	}
	var synced []cache.InformerSynced
	for _, k := range kinds {
		inf := r.informer(k.list, k.example, k.on)
		synced = append(synced, inf.HasSynced)
		go inf.RunWithContext(ctx)
	}
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		return fmt.Errorf("watching the soak's objects: %w", ctx.Err())
	}
	return nil
}

func (r *run) informer(newList func() client.ObjectList, example runtime.Object, on func(obj any, gone bool)) cache.SharedIndexInformer {
	ns := r.o.Namespace
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l := newList()
			return l, r.c.List(ctx, l, &client.ListOptions{Namespace: ns, Raw: &opts})
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return r.c.Watch(ctx, newList(), &client.ListOptions{Namespace: ns, Raw: &opts})
		},
	}
	inf := cache.NewSharedIndexInformer(lw, example, 0, cache.Indexers{})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { on(obj, false) },
		UpdateFunc: func(_, obj any) { on(obj, false) },
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			on(obj, true)
		},
	})
	return inf
}

// sighted feeds the readiness log from a watch.
func (l *readinessLog) sighted(object string, generation int64, ready bool, reason string, gone bool) {
	now := time.Now()
	if gone {
		l.deletedAt(now, object)
		return
	}
	l.observe(now, object, generation, ready, reason)
}

// readyReason is the Ready condition's reason and message, or why there is none.
func readyReason(s *duck.Status) string {
	c := s.GetCondition(duck.ConditionReady)
	if c == nil {
		return "no Ready condition yet"
	}
	return fmt.Sprintf("Ready=%s %s: %s", c.Status, c.Reason, c.Message)
}
