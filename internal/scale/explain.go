package scale

// Explaining the stuck Services with internal/explain, from one list per kind:
// reading each chain on its own would cost a dozen requests per stuck Service.

import (
	"context"
	"errors"
	"fmt"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/explain"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// explainStuck reads the stuck Services' objects and explains each.
func (r *runner) explainStuck(ctx context.Context, res *Result, store cache.Store) error {
	var stuck []int
	for i, s := range res.Samples {
		if s.Stuck {
			stuck = append(stuck, i)
		}
	}
	if len(stuck) == 0 {
		return nil
	}
	snap, err := r.readRun(ctx, r.o.RunID, r.scope())
	errs := []error{err}
	for _, i := range stuck {
		s := &res.Samples[i]
		ns := r.nsOf(i)
		// After a failed list, the watch's copy is the next best thing.
		if obj, ok, _ := store.GetByKey(ns + "/" + s.Name); ok {
			snap.Add(obj.(*v1.Service))
		}
		chain, err := explain.Read(ctx, snap, explain.Target{Kind: explain.KindService, Namespace: ns, Name: s.Name})
		errs = append(errs, err)
		chain.CreateError = s.Error
		chain.Deadline = r.o.TimeoutPerService
		chain.ReadyAfter = s.Ready
		chain.Probed = r.o.GatewayURL != "" && s.Ready > 0
		chain.LastAnswer = s.LastAnswer
		if chain.Probed && s.Routed == 0 && chain.LastAnswer == "" {
			chain.LastAnswer = "(no answer recorded)"
		}
		e := explain.Explain(chain)
		s.Explanation = &e
	}
	return errors.Join(errs...)
}

// readRun lists the objects labelled runLabel in ns ("": the cluster), and the
// KIngresses there, which do not carry the label: one list per kind, for
// explain.Read to build every stuck Service's chain from.
func (r *runner) readRun(ctx context.Context, runLabel, ns string) (*explain.Snapshot, error) {
	sel := client.MatchingLabels{RunLabel: runLabel}
	lists := []struct {
		l   client.ObjectList
		all bool
	}{{&v1.ServiceList{}, false}, {&v1.ConfigurationList{}, false}, {&v1.RevisionList{}, false}, {&v1.RouteList{}, false},
		{&netv1alpha1.IngressList{}, true}, {&appsv1.DeploymentList{}, false}, {&corev1.PodList{}, false}}
	snap := &explain.Snapshot{}
	var errs []error
	for _, l := range lists {
		opts := []client.ListOption{client.InNamespace(ns)}
		switch {
		case !l.all:
			opts = append(opts, sel)
		case ns == metav1.NamespaceAll:
			opts = append(opts, client.HasLabels{v1.ServiceLabelKey})
		}
		err := r.c.List(ctx, l.l, opts...)
		if err == nil {
			err = snap.AddList(l.l)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("listing %T: %w", l.l, err))
		}
	}
	return snap, errors.Join(errs...)
}
