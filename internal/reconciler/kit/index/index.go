// Package index names the cache indexes that Ferry's reconcilers look children up by.
// Without them a label-selector List from controller-runtime's cache scans every
// object of the kind in the namespace, so each reconcile cost grew with the number of
// Services and a scale run with its square.
package index

import (
	"context"
	"slices"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Index names, for client.MatchingFields.
const (
	// RevisionsByConfiguration keys Revisions by their configuration label.
	RevisionsByConfiguration = "ferry.index.revision.configuration"
	// PodsByRevision keys Pods by their revision label.
	PodsByRevision = "ferry.index.pod.revision"
	// RoutesByRevision keys Routes by the Revisions their status.traffic sends
	// traffic to.
	RoutesByRevision = "ferry.index.route.revision"
	// ServicesByRoute keys Kubernetes Services by their route label: a Route's
	// placeholder Services.
	ServicesByRoute = "ferry.index.service.route"
)

// Register adds the indexes to a manager's cache; call it once per manager.
func Register(ctx context.Context, indexer client.FieldIndexer) error {
	if err := indexer.IndexField(ctx, &v1.Revision{}, RevisionsByConfiguration, byLabel(v1.ConfigurationLabelKey)); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &corev1.Pod{}, PodsByRevision, byLabel(v1.RevisionLabelKey)); err != nil {
		return err
	}
	if err := indexer.IndexField(ctx, &corev1.Service{}, ServicesByRoute, byLabel(v1.RouteLabelKey)); err != nil {
		return err
	}
	return indexer.IndexField(ctx, &v1.Route{}, RoutesByRevision, func(o client.Object) []string {
		if rt, ok := o.(*v1.Route); ok {
			return RoutedRevisions(rt)
		}
		return nil
	})
}

// RoutedRevisions are the Revisions a Route's status.traffic names, each once, in
// order: its keys in RoutesByRevision.
func RoutedRevisions(rt *v1.Route) []string {
	var names []string
	for _, t := range rt.Status.Traffic {
		if t.RevisionName != "" && !slices.Contains(names, t.RevisionName) {
			names = append(names, t.RevisionName)
		}
	}
	return names
}

func byLabel(key string) client.IndexerFunc {
	return func(o client.Object) []string {
		if v, ok := o.GetLabels()[key]; ok {
			return []string{v}
		}
		return nil
	}
}
