package routing

import (
	"context"
	"fmt"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Warm says whether the table serves every KIngress of this gateway class that c (the
// API server) holds, each at least at the generation c shows; once it has, it stays
// warm. A replica that takes requests before it is warm answers 404 for hosts the
// others serve, or an older Revision than a Ready status promises: a restarted or
// added replica must not be Ready until then (its /readyz), or a load balancer sends
// it traffic it cannot route. KIngresses created or changed afterwards do not count: a
// burst of new ones must not take serving replicas out of rotation (the others wait
// for it to serve those through its Lease's record).
func (p *Programmer) Warm(ctx context.Context, c client.Reader) error {
	if p.warm.Load() {
		return nil
	}
	list := &v1alpha1.IngressList{}
	if err := c.List(ctx, list); err != nil {
		return err
	}
	waiting, first := 0, ""
	for i := range list.Items {
		ing := &list.Items[i]
		if !ServedHere(ing) || ing.DeletionTimestamp != nil {
			continue
		}
		key := types.NamespacedName{Namespace: ing.Namespace, Name: ing.Name}
		if ci := p.compiled(key); ci == nil || ci.uid != ing.UID || ci.generation < ing.Generation {
			if waiting++; first == "" {
				first = key.String()
			}
		}
	}
	if waiting > 0 {
		return fmt.Errorf("%d of %d KIngresses not programmed yet (%s, ...)", waiting, len(list.Items), first)
	}
	p.warm.Store(true)
	return nil
}
