package proxy

// TLS: the HTTPS listener serves a KIngress's spec.tls, as Knative's ingresses do.
//
// Each spec.tls entry names hosts and a Secret (secretNamespace, default the
// KIngress's, and secretName) of type kubernetes.io/tls: tls.crt and tls.key. The TLS
// reconciler reads those Secrets from the cache, parses each pair once per change and
// publishes a host → certificate map through an atomic pointer; the HTTPS listener
// picks the certificate by SNI at each handshake (net/http negotiates HTTP/2 or
// HTTP/1.1 by ALPN), so a renewed Secret is served from the next handshake on, without
// a restart. A Secret that is missing or does not hold a valid pair gives its hosts no
// certificate (a Warning Event on the KIngress says why): they keep being served over
// plain HTTP, and are not redirected. httpOption Redirected answers plain HTTP on the
// external listener with 301 to https, only for hosts that have a certificate.

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/gateway/routing"
	"github.com/ferry-serving/ferry/internal/watches"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// HostTLS is what the gateway does with TLS for one host.
type HostTLS struct {
	Cert *tls.Certificate
	// Redirect: the ingress says httpOption Redirected.
	Redirect bool
}

// ingressTLS is what one KIngress contributes.
type ingressTLS struct {
	created time.Time
	hosts   map[string]*HostTLS
}

// TLSStore holds the certificates by host. Writers rebuild the map under mu; the
// handshake and the redirect check read it with one atomic load.
type TLSStore struct {
	mu        sync.Mutex
	ingresses map[types.NamespacedName]ingressTLS
	hosts     atomic.Pointer[map[string]*HostTLS]
	// refused counts a handshake refused, by reason (nil: not counted).
	refused func(reason string)
}

// The reasons a handshake is refused, as ferry_gateway_tls_handshakes_refused_total
// labels them.
const (
	refusedNoServerName  = "no_server_name"
	refusedNoCertificate = "no_certificate"
)

func NewTLSStore(refused func(reason string)) *TLSStore {
	s := &TLSStore{ingresses: map[types.NamespacedName]ingressTLS{}, refused: refused}
	s.hosts.Store(&map[string]*HostTLS{})
	return s
}

// Set replaces what the ingress key contributes; nil hosts forget it.
func (s *TLSStore) Set(key types.NamespacedName, created time.Time, hosts map[string]*HostTLS) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if hosts == nil {
		delete(s.ingresses, key)
	} else {
		s.ingresses[key] = ingressTLS{created: created, hosts: hosts}
	}
	// A host two ingresses name goes to the oldest, ties by namespace/name: the rule
	// that decides which ingress routes it.
	keys := make([]types.NamespacedName, 0, len(s.ingresses))
	for k := range s.ingresses {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b types.NamespacedName) int {
		if c := s.ingresses[a].created.Compare(s.ingresses[b].created); c != 0 {
			return c
		}
		return cmp.Or(strings.Compare(a.Namespace, b.Namespace), strings.Compare(a.Name, b.Name))
	})
	all := map[string]*HostTLS{}
	for _, k := range keys {
		for h, t := range s.ingresses[k].hosts {
			if _, taken := all[h]; !taken {
				all[h] = t
			}
		}
	}
	s.hosts.Store(&all)
}

func (s *TLSStore) lookup(host string) *HostTLS { return (*s.hosts.Load())[host] }

// GetCertificate is the HTTPS listener's tls.Config.GetCertificate: the certificate
// of the host the client names by SNI.
func (s *TLSStore) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	host, ok := routing.CanonicalHost(hello.ServerName)
	if !ok {
		s.refuse(refusedNoServerName)
		return nil, fmt.Errorf("ferry: no certificate without a server name (SNI)")
	}
	if t := s.lookup(host); t != nil && t.Cert != nil {
		return t.Cert, nil
	}
	s.refuse(refusedNoCertificate)
	return nil, fmt.Errorf("ferry: no certificate for %q", host)
}

func (s *TLSStore) refuse(reason string) {
	if s.refused != nil {
		s.refused(reason)
	}
}

// Redirecting wraps the external plain-HTTP handler: a request for a host whose
// ingress says Redirected, and that has a certificate, gets 301 to the same URL over
// https. httpsPort is the HTTPS listener's port: a client that named a port in Host
// talks to the gateway directly and is sent to that port; one that named none came
// through port 80 and goes to 443.
func (s *TLSStore) Redirecting(next http.Handler, httpsPort string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, ok := routing.CanonicalHost(r.Host)
		if t := s.lookup(host); !ok || t == nil || !t.Redirect || t.Cert == nil {
			next.ServeHTTP(w, r)
			return
		}
		target := host
		if _, _, err := net.SplitHostPort(r.Host); err == nil && httpsPort != "443" {
			target = net.JoinHostPort(host, httpsPort)
		}
		http.Redirect(w, r, "https://"+target+r.URL.RequestURI(), http.StatusMovedPermanently)
	})
}

// parseTLSSecret returns the certificate a kubernetes.io/tls Secret holds.
func parseTLSSecret(s *corev1.Secret) (*tls.Certificate, error) {
	crt, key := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
	if len(crt) == 0 || len(key) == 0 {
		return nil, fmt.Errorf("Secret %s/%s has no %s or no %s", s.Namespace, s.Name, corev1.TLSCertKey, corev1.TLSPrivateKeyKey)
	}
	cert, err := tls.X509KeyPair(crt, key)
	if err != nil {
		return nil, fmt.Errorf("Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
	return &cert, nil
}

// tlsSecretIndex indexes KIngresses by the Secrets their spec.tls names, so that a
// Secret's change wakes them.
const tlsSecretIndex = "ferry.gateway.tlsSecrets"

func tlsSecrets(o client.Object) []string {
	ing := o.(*v1alpha1.Ingress)
	var keys []string
	for _, t := range ing.Spec.TLS {
		keys = append(keys, cmp.Or(t.SecretNamespace, ing.Namespace)+"/"+t.SecretName)
	}
	return keys
}

// tlsReconciler loads one KIngress's certificates into the store.
type tlsReconciler struct {
	client   client.Client
	store    *TLSStore
	recorder events.EventRecorder
	// reported is the last problem reported per ingress, so that one problem makes
	// one Event.
	reported sync.Map
}

func (r *tlsReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ing := &v1alpha1.Ingress{}
	if err := r.client.Get(ctx, req.NamespacedName, ing); err != nil || !routing.ServedHere(ing) {
		if err != nil && !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		r.store.Set(req.NamespacedName, time.Time{}, nil)
		r.reported.Delete(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	hosts := map[string]*HostTLS{}
	var problems []string
	for _, t := range ing.Spec.TLS {
		secret := &corev1.Secret{}
		key := types.NamespacedName{Namespace: cmp.Or(t.SecretNamespace, ing.Namespace), Name: t.SecretName}
		var cert *tls.Certificate
		err := r.client.Get(ctx, key, secret)
		switch {
		case apierrors.IsNotFound(err):
			err = fmt.Errorf("Secret %s not found", key)
		case err != nil:
			return reconcile.Result{}, err
		default:
			cert, err = parseTLSSecret(secret)
		}
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		for _, h := range t.Hosts {
			if host, ok := routing.CanonicalHost(h); ok {
				hosts[host] = &HostTLS{Cert: cert, Redirect: ing.Spec.HTTPOption == v1alpha1.HTTPOptionRedirected}
			}
		}
	}
	r.store.Set(req.NamespacedName, ing.CreationTimestamp.Time, hosts)
	problem := strings.Join(problems, "; ")
	if old, _ := r.reported.Swap(req.NamespacedName, problem); problem != "" && old != problem {
		r.recorder.Eventf(ing, nil, corev1.EventTypeWarning, v1alpha1.ReasonInvalidSecret, "ServeTLS",
			"%s: its hosts are served over plain HTTP only", problem)
	}
	return reconcile.Result{}, nil
}

// ingressesOfSecret maps a Secret to the KIngresses whose spec.tls names it.
func (r *tlsReconciler) ingressesOfSecret(ctx context.Context, o client.Object) []reconcile.Request {
	list := &v1alpha1.IngressList{}
	if err := r.client.List(ctx, list, client.MatchingFields{tlsSecretIndex: o.GetNamespace() + "/" + o.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, ing := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ing.Namespace, Name: ing.Name}})
	}
	return reqs
}

// SetupTLS registers the TLS reconciler: KIngresses, and the Secrets they name.
func SetupTLS(mgr ctrl.Manager, store *TLSStore) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.Ingress{}, tlsSecretIndex, tlsSecrets); err != nil {
		return fmt.Errorf("indexing KIngresses by TLS Secret: %w", err)
	}
	r := &tlsReconciler{client: mgr.GetClient(), store: store, recorder: mgr.GetEventRecorder("ferry-gateway")}
	ctl := watches.Controller{
		Name: "gateway-tls",
		Watches: []watches.Watch{
			{Object: &v1alpha1.Ingress{}, Handler: watches.Enqueue()},
			{Object: &corev1.Secret{}, Handler: handler.EnqueueRequestsFromMapFunc(r.ingressesOfSecret)},
		},
		Reconciler:   r,
		EveryReplica: true,
	}
	if err := ctl.Register(mgr, 1); err != nil {
		return fmt.Errorf("setting up the TLS reconciler: %w", err)
	}
	return nil
}
