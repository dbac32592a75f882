package reconciler

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/internal/config"
)

// configChanges is a controller-runtime source that, after each configuration change
// that matters to a controller, enqueues every object of the kind it reconciles (read
// from the manager's cache): reconciles are level-based, so a new domain reaches every
// Route by reconciling them all.
type configChanges struct {
	name string
	// register subscribes to configuration changes (config.Store.OnChange).
	register func(func(old, new *config.Config))
	// matters says whether a change concerns the controller.
	matters func(old, new *config.Config) bool
	// list returns every object to reconcile.
	list func(ctx context.Context) ([]reconcile.Request, error)
	// onError reports a failed list.
	onError func(error)
}

func (s *configChanges) Start(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	s.register(func(old, new *config.Config) {
		if ctx.Err() != nil || !s.matters(old, new) {
			return
		}
		reqs, err := s.list(ctx)
		if err != nil {
			if s.onError != nil {
				s.onError(err)
			}
			return
		}
		for _, r := range reqs {
			q.Add(r)
		}
	})
	return nil
}

func (s *configChanges) String() string { return fmt.Sprintf("config changes (%s)", s.name) }

// routingChanged: config-domain or config-network changed what makes Route hosts, or
// config-features what makes their KIngress paths.
func routingChanged(old, new *config.Config) bool {
	if old.Domain != new.Domain && !sameDomains(old.Domain, new.Domain) {
		return true
	}
	if old.Features.TagHeaderBasedRouting != new.Features.TagHeaderBasedRouting {
		return true
	}
	o, n := old.Network, new.Network
	return o.DomainTemplate != n.DomainTemplate || o.TagTemplate != n.TagTemplate || o.DefaultExternalScheme != n.DefaultExternalScheme ||
		o.ExternalDomainTLS != n.ExternalDomainTLS || o.HTTPProtocol != n.HTTPProtocol || o.CertificateClass != n.CertificateClass
}

// domainMappingChanged: autocreate-cluster-domain-claims decides whether an unclaimed
// domain gets its claim, default-external-scheme makes the URL, external-domain-tls,
// certificate-class and http-protocol its Certificate and KIngress.
func domainMappingChanged(old, new *config.Config) bool {
	return old.Network.AutocreateClusterDomainClaims != new.Network.AutocreateClusterDomainClaims ||
		old.Network.DefaultExternalScheme != new.Network.DefaultExternalScheme ||
		old.Network.ExternalDomainTLS != new.Network.ExternalDomainTLS ||
		old.Network.CertificateClass != new.Network.CertificateClass ||
		old.Network.HTTPProtocol != new.Network.HTTPProtocol
}

func sameDomains(a, b *config.Domain) bool {
	if len(a.Domains) != len(b.Domains) {
		return false
	}
	for k, va := range a.Domains {
		vb, ok := b.Domains[k]
		if !ok || va.Type != vb.Type || len(va.Selector) != len(vb.Selector) {
			return false
		}
		for lk, lv := range va.Selector {
			if vb.Selector[lk] != lv {
				return false
			}
		}
	}
	return true
}

// gcChanged: config-gc changed.
func gcChanged(old, new *config.Config) bool { return *old.GC != *new.GC }

// logURLChanged: config-observability changed the Revisions' status.logUrl.
func logURLChanged(old, new *config.Config) bool {
	return old.Observability.RevisionURLTemplate != new.Observability.RevisionURLTemplate
}

// autoscalerChanged: config-autoscaler changed what PodAutoscalers decide with.
func autoscalerChanged(old, new *config.Config) bool { return *old.Autoscaler != *new.Autoscaler }

// every lists every object of a kind from the cache (newList makes its list) as
// reconcile requests.
func every(c client.Reader, newList func() client.ObjectList) func(context.Context) ([]reconcile.Request, error) {
	return func(ctx context.Context) ([]reconcile.Request, error) {
		list := newList()
		if err := c.List(ctx, list); err != nil {
			return nil, err
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			return nil, err
		}
		reqs := make([]reconcile.Request, 0, len(items))
		for _, o := range items {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(o.(client.Object))})
		}
		return reqs, nil
	}
}
