package route

import (
	"context"
	"errors"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/child"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/index"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
	"github.com/ferry-serving/ferry/internal/reconciler/route/resources"
)

// reconcilePlaceholders makes the Route's placeholder Services exist as desired, as
// Knative's reconcilePlaceholderServices does: the Route's own and, when hosts is not
// nil, one per tag of hosts (named hosts.ServiceName); then it deletes the Route's other
// placeholder Services, those of tags no longer in its traffic. With hosts nil (no valid
// hosts, or traffic not resolved) the tags' Services are left as they are, as the
// KIngress is.
//
// It returns the tags ("" for the Route itself) that a placeholder Service's
// visibility label makes cluster-local, and the first problem to show on IngressReady
// (a name taken, a write refused). Any other error is returned as err: a visibility
// not read must not publish a private tag, so the caller writes nothing.
func (r *Reconciler) reconcilePlaceholders(ctx context.Context, w child.Writer, route *v1.Route, hosts *resources.Hosts) (local map[string]bool, shown error, err error) {
	names := map[string]string{"": route.Name}
	if hosts != nil {
		for _, tag := range hosts.Tags() {
			names[tag] = hosts.ServiceName(tag)
		}
	}
	have := map[string]*corev1.Service{}
	for _, tag := range slices.Sorted(maps.Keys(names)) {
		svc, err := child.Ensure(ctx, w, route, "placeholder Service", resources.MakePlaceholderService(route, names[tag], r.GatewayHost), updatePlaceholder)
		if err != nil {
			var notOwned *child.NotOwnedError
			if _, refused := refusal.As(err); !refused && !errors.As(err, &notOwned) {
				return nil, nil, err
			}
			if shown == nil {
				shown = err
			}
		}
		// A refused write returns the Service as it is, or as it would have been
		// created; a name taken returns nil: its labels are not the Route's to read.
		if svc != nil {
			have[tag] = svc
		}
	}
	if hosts != nil {
		wanted := map[string]bool{}
		for _, n := range names {
			wanted[n] = true
		}
		if err := r.deleteOrphanPlaceholders(ctx, route, wanted); err != nil {
			return nil, nil, err
		}
	}
	return resources.ClusterLocalTags(have), shown, nil
}

// deleteOrphanPlaceholders deletes the Route's placeholder Services that no tag names
// any more (a tag removed, tag-template changed), as Knative's deleteOrphanedServices
// does: those labelled with the Route (found through the cache's index, not a scan of
// the namespace's Services) and controlled by it.
func (r *Reconciler) deleteOrphanPlaceholders(ctx context.Context, route *v1.Route, wanted map[string]bool) error {
	list := &corev1.ServiceList{}
	if err := r.Client.List(ctx, list, client.InNamespace(route.Namespace), client.MatchingFields{index.ServicesByRoute: route.Name}); err != nil {
		return err
	}
	for i := range list.Items {
		svc := &list.Items[i]
		if wanted[svc.Name] || !metav1.IsControlledBy(svc, route) || svc.DeletionTimestamp != nil {
			continue
		}
		if err := r.Client.Delete(ctx, svc, client.Preconditions{UID: &svc.UID}); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
