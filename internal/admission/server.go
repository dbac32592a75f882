package admission

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"runtime/pprof"
	"strings"
	"sync/atomic"
	"time"

	"github.com/ferry-serving/ferry/internal/backpressure"
	"github.com/ferry-serving/ferry/internal/config"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// Names of what Ferry registers and keeps in a cluster.
const (
	MutatingWebhookName   = "webhook.serving.ferry.dev"
	ValidatingWebhookName = "validation.webhook.serving.ferry.dev"
	// HoldWebhookName is the back-pressure webhook, in the validating configuration.
	HoldWebhookName = "backpressure.webhook.serving.ferry.dev"
	// ServiceName is the Service in front of the controller pods' webhook port.
	ServiceName = "ferry-webhook"
	// CertSecretName holds the CA and serving certificate in the system namespace.
	CertSecretName = "ferry-webhook-certs"
	// DefaultClusterAddr is where the controller pods serve the webhooks.
	DefaultClusterAddr = ":8443"
	// resyncPeriod: how often a cluster webhook re-reads its Secret and re-checks the
	// registrations' caBundle (another replica may have rotated the certificate, or an
	// apply may have reset a configuration).
	resyncPeriod = 5 * time.Minute
)

// Options configure the admission webhooks.
type Options struct {
	// Config returns the current config-defaults and config-features; nil means
	// config.Default(). It is called once per request.
	Config func() *config.Config
	// InCluster serves behind the Service ferry-webhook in Namespace, with the
	// certificate kept in the Secret ferry-webhook-certs. Otherwise (ferry up, tests)
	// the webhooks are registered by URL on 127.0.0.1 with an in-memory CA.
	InCluster bool
	// Namespace is the system namespace (default ferry-system).
	Namespace string
	// Addr is where to listen: default 127.0.0.1:0 (a free port), or :8443 InCluster.
	Addr string
	// Backlog, if set, is the back-pressure webhook's: it holds Service creates while
	// too many Services are in progress (package backpressure). Without it the webhook
	// admits at once. The manager sets it from InProgressLimit.
	Backlog *backpressure.Backlog
	// InProgressLimit is the Backlog's limit: 0 is backpressure.DefaultLimit; a
	// negative number never holds (and the autoscaler never postpones scaling to
	// zero for a burst).
	InProgressLimit int
	// ControllerUser, if set, is a username whose requests on Configurations, Routes
	// and Revisions skip both webhooks (matchConditions): Ferry's controller derives
	// them from a Service or a Configuration that was admitted already, so the calls
	// would only cost the API server and the webhook a round trip per child. InCluster,
	// it is found with a SelfSubjectReview when the controller runs as a service
	// account; `ferry up` gives its in-process controller a user of its own.
	ControllerUser string
}

// Server serves the two webhooks and keeps their registrations current.
type Server struct {
	opts   Options
	client kubernetes.Interface
	ln     net.Listener
	srv    *http.Server
	cert   atomic.Pointer[tls.Certificate]
	ca     atomic.Pointer[[]byte]
	done   chan error
}

// Start serves the webhooks and registers them; it returns once the API server sends
// Ferry's serving.knative.dev requests through them. Serving stops when ctx ends.
func Start(ctx context.Context, cfg *rest.Config, opts Options) (*Server, error) {
	if opts.Namespace == "" {
		opts.Namespace = config.SystemNamespace
	}
	if opts.Addr == "" {
		opts.Addr = "127.0.0.1:0"
		if opts.InCluster {
			opts.Addr = DefaultClusterAddr
		}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	s := &Server{opts: opts, client: client, done: make(chan error, 1)}
	if opts.InCluster {
		if err := s.loadClusterCerts(ctx); err != nil {
			return nil, err
		}
		if s.opts.ControllerUser == "" {
			s.opts.ControllerUser = s.serviceAccountName(ctx)
		}
	} else {
		b, err := newCertBundle([]string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
		if err != nil {
			return nil, err
		}
		if err := s.setBundle(b); err != nil {
			return nil, err
		}
	}

	s.ln, err = net.Listen("tcp", opts.Addr)
	if err != nil {
		return nil, fmt.Errorf("admission webhooks: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(MutatePath, &admission.Webhook{Handler: &Mutator{Config: opts.Config}})
	mux.Handle(ValidatePath, &admission.Webhook{Handler: &Validator{Config: opts.Config, Client: client}})
	mux.Handle(HoldPath, &admission.Webhook{Handler: &Holder{Config: opts.Config, Backlog: opts.Backlog}})
	s.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{
			MinVersion:     tls.VersionTLS12,
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return s.cert.Load(), nil },
		},
	}
	// The label tells admission's CPU in a profile (go tool pprof -tags): the
	// connections' goroutines inherit it.
	pprof.Do(ctx, pprof.Labels("component", "ferry", "ferry", "admission"), func(context.Context) {
		go func() {
			err := s.srv.ServeTLS(s.ln, "", "")
			if errors.Is(err, http.ErrServerClosed) {
				err = nil
			}
			s.done <- err
		}()
	})
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = s.srv.Shutdown(shutdown)
	}()

	if err := s.Register(ctx); err != nil {
		_ = s.srv.Close()
		return nil, err
	}
	if opts.InCluster {
		go s.resync(ctx)
	}
	return s, nil
}

// URL is the local base URL (https://127.0.0.1:PORT) of the webhooks.
func (s *Server) URL() string { return "https://" + s.ln.Addr().String() }

// CABundle is the PEM the API server trusts for the webhooks.
func (s *Server) CABundle() []byte { return *s.ca.Load() }

// Wait blocks until the server stopped (its context ended) and returns its error.
func (s *Server) Wait() error { return <-s.done }

func (s *Server) setBundle(b *certBundle) error {
	kp, err := b.keyPair()
	if err != nil {
		return err
	}
	ca := b.CA
	s.cert.Store(kp)
	s.ca.Store(&ca)
	return nil
}

func (s *Server) clientConfig(path string) admissionregv1.WebhookClientConfig {
	cc := admissionregv1.WebhookClientConfig{CABundle: s.CABundle()}
	if s.opts.InCluster {
		port := int32(443)
		cc.Service = &admissionregv1.ServiceReference{Namespace: s.opts.Namespace, Name: ServiceName, Path: &path, Port: &port}
	} else {
		u := s.URL() + path
		cc.URL = &u
	}
	return cc
}

// WebhookConfigurations are Ferry's two registrations: every create and update of the
// four serving.knative.dev/v1 kinds and of v1beta1 DomainMappings (not their status), failurePolicy Fail, no side
// effects (so dry runs are admitted too). controllerUser, if set, lets that user's
// requests on the kinds Ferry's controller derives (Configurations, Routes, Revisions)
// through without a call; Services always go through. The validating configuration also
// holds the back-pressure webhook: Service creates only, with the longest timeout the
// API server allows, and failurePolicy Ignore, so that a controller that is down or
// slow never blocks a create.
func WebhookConfigurations(mutate, validate, hold admissionregv1.WebhookClientConfig, controllerUser string) (*admissionregv1.MutatingWebhookConfiguration, *admissionregv1.ValidatingWebhookConfiguration) {
	fail, ignore := admissionregv1.Fail, admissionregv1.Ignore
	none := admissionregv1.SideEffectClassNone
	equivalent := admissionregv1.Equivalent
	never := admissionregv1.NeverReinvocationPolicy
	scope := admissionregv1.NamespacedScope
	timeout, holdTimeout := int32(10), int32(holdTimeout/time.Second)
	rules := []admissionregv1.RuleWithOperations{{
		Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
		Rule: admissionregv1.Rule{
			APIGroups:   []string{"serving.knative.dev"},
			APIVersions: []string{"v1"},
			Resources:   []string{"services", "configurations", "revisions", "routes"},
			Scope:       &scope,
		},
	}, {
		Operations: []admissionregv1.OperationType{admissionregv1.Create, admissionregv1.Update},
		Rule: admissionregv1.Rule{
			APIGroups:   []string{"serving.knative.dev"},
			APIVersions: []string{"v1beta1"},
			Resources:   []string{"domainmappings"},
			Scope:       &scope,
		},
	}}
	var conditions []admissionregv1.MatchCondition
	if controllerUser != "" {
		conditions = []admissionregv1.MatchCondition{{
			Name:       "not-ferry-controller-children",
			Expression: fmt.Sprintf("!(request.resource.resource in ['configurations', 'routes', 'revisions'] && request.userInfo.username == %s)", celString(controllerUser)),
		}}
	}
	labels := map[string]string{"app.kubernetes.io/name": "ferry", "app.kubernetes.io/component": "webhook"}
	mwc := &admissionregv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: MutatingWebhookName, Labels: labels},
		Webhooks: []admissionregv1.MutatingWebhook{{
			Name:                    MutatingWebhookName,
			ClientConfig:            mutate,
			Rules:                   rules,
			FailurePolicy:           &fail,
			MatchPolicy:             &equivalent,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
			ReinvocationPolicy:      &never,
			MatchConditions:         conditions,
		}},
	}
	vwc := &admissionregv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ValidatingWebhookName, Labels: labels},
		Webhooks: []admissionregv1.ValidatingWebhook{{
			Name:                    ValidatingWebhookName,
			ClientConfig:            validate,
			Rules:                   rules,
			FailurePolicy:           &fail,
			MatchPolicy:             &equivalent,
			SideEffects:             &none,
			TimeoutSeconds:          &timeout,
			AdmissionReviewVersions: []string{"v1"},
			MatchConditions:         conditions,
		}, {
			Name:         HoldWebhookName,
			ClientConfig: hold,
			Rules: []admissionregv1.RuleWithOperations{{
				Operations: []admissionregv1.OperationType{admissionregv1.Create},
				Rule: admissionregv1.Rule{
					APIGroups:   []string{"serving.knative.dev"},
					APIVersions: []string{"v1"},
					Resources:   []string{"services"},
					Scope:       &scope,
				},
			}},
			FailurePolicy:           &ignore,
			MatchPolicy:             &equivalent,
			SideEffects:             &none,
			TimeoutSeconds:          &holdTimeout,
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	return mwc, vwc
}

func celString(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

// serviceAccountName asks the API server who this process is; a service account's
// username is returned so that its requests on the children it derives skip admission.
func (s *Server) serviceAccountName(ctx context.Context) string {
	r, err := s.client.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		ctrl.Log.WithName("admission").Info("cannot tell the controller's identity; its Revisions go through admission", "error", err.Error())
		return ""
	}
	if u := r.Status.UserInfo.Username; strings.HasPrefix(u, "system:serviceaccount:") {
		return u
	}
	return ""
}

// loadClusterCerts reads the certificate Secret, creating it or renewing its
// certificate as needed (as Knative's webhook keeps its own certificate).
func (s *Server) loadClusterCerts(ctx context.Context) error {
	secrets := s.client.CoreV1().Secrets(s.opts.Namespace)
	for attempt := 0; attempt < 5; attempt++ {
		sec, err := secrets.Get(ctx, CertSecretName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			b, err := s.newClusterBundle()
			if err != nil {
				return err
			}
			sec = &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: CertSecretName, Namespace: s.opts.Namespace},
				Type:       corev1.SecretTypeTLS,
				Data:       map[string][]byte{"ca.crt": b.CA, corev1.TLSCertKey: b.Cert, corev1.TLSPrivateKeyKey: b.Key},
			}
			if _, err := secrets.Create(ctx, sec, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
				continue // another replica made it: use theirs
			} else if err != nil {
				return fmt.Errorf("creating Secret %s/%s: %w", s.opts.Namespace, CertSecretName, err)
			}
			return s.setBundle(b)
		case err != nil:
			return fmt.Errorf("reading Secret %s/%s: %w", s.opts.Namespace, CertSecretName, err)
		}
		b := &certBundle{CA: sec.Data["ca.crt"], Cert: sec.Data[corev1.TLSCertKey], Key: sec.Data[corev1.TLSPrivateKeyKey]}
		if !b.expiresSoon(time.Now()) {
			if _, err := b.keyPair(); err == nil {
				return s.setBundle(b)
			}
		}
		// Renew. Keep trusting the old CA too, so that replicas still serving the old
		// certificate are accepted until they re-read the Secret.
		nb, err := s.newClusterBundle()
		if err != nil {
			return err
		}
		nb.CA = append(append([]byte{}, nb.CA...), firstCert(b.CA)...)
		sec.Data = map[string][]byte{"ca.crt": nb.CA, corev1.TLSCertKey: nb.Cert, corev1.TLSPrivateKeyKey: nb.Key}
		if _, err := secrets.Update(ctx, sec, metav1.UpdateOptions{}); apierrors.IsConflict(err) {
			continue
		} else if err != nil {
			return fmt.Errorf("renewing Secret %s/%s: %w", s.opts.Namespace, CertSecretName, err)
		}
		return s.setBundle(nb)
	}
	return fmt.Errorf("Secret %s/%s keeps changing under us", s.opts.Namespace, CertSecretName)
}

func (s *Server) newClusterBundle() (*certBundle, error) {
	host := ServiceName + "." + s.opts.Namespace + ".svc"
	return newCertBundle([]string{host, host + ".cluster.local", ServiceName + "." + s.opts.Namespace}, nil)
}

// firstCert returns the first PEM block of a bundle.
func firstCert(bundle []byte) []byte {
	if i := bytes.Index(bundle, []byte("-----END CERTIFICATE-----")); i >= 0 {
		return append(bytes.TrimSpace(bundle[:i+len("-----END CERTIFICATE-----")]), '\n')
	}
	return nil
}

// resync re-reads the Secret and re-registers now and then (see resyncPeriod).
func (s *Server) resync(ctx context.Context) {
	log := ctrl.Log.WithName("admission")
	t := time.NewTicker(resyncPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := s.loadClusterCerts(ctx); err != nil {
			log.Error(err, "refreshing the webhook certificate")
			continue
		}
		if err := s.Register(ctx); err != nil {
			log.Error(err, "refreshing the webhook registrations")
		}
	}
}

// Runner runs the webhooks inside a controller-runtime manager, on every replica
// (admission is not leader-elected).
type Runner struct {
	cfg   *rest.Config
	opts  Options
	ready chan struct{}
}

// NewRunner returns a manager Runnable for the webhooks.
func NewRunner(cfg *rest.Config, opts Options) *Runner {
	return &Runner{cfg: cfg, opts: opts, ready: make(chan struct{})}
}

// Ready is closed once the webhooks are registered.
func (r *Runner) Ready() <-chan struct{} { return r.ready }

// NeedLeaderElection: every replica serves admission.
func (r *Runner) NeedLeaderElection() bool { return false }

// Start implements manager.Runnable.
func (r *Runner) Start(ctx context.Context) error {
	s, err := Start(ctx, r.cfg, r.opts)
	if err != nil {
		return err
	}
	close(r.ready)
	<-ctx.Done()
	return s.Wait()
}
