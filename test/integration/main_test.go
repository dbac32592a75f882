// Package integration holds the tests that need a real API server: one test binary
// that starts Ferry's local cluster (etcd, kube-apiserver, controller-manager,
// scheduler, kwok) once in TestMain and shares it, because building and starting the
// control plane is what costs. Each test works in a namespace of its own.
package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	autoscalingv1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	networkingv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	servingv1beta1 "github.com/ferry-serving/ferry/api/serving/v1beta1"
	"github.com/ferry-serving/ferry/internal/admission"
	ferryconfig "github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/localcluster"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

var (
	// testCluster is the local cluster every test in this package shares.
	testCluster *localcluster.Cluster
	// testConfig is an admin config for testCluster; copy it before changing it.
	testConfig *rest.Config
	// testScheme knows Kubernetes' and Ferry's kinds.
	testScheme = runtime.NewScheme()
	// testClient reads and writes straight through the API server (no cache).
	testClient client.Client

	namespaceCount atomic.Int64

	// testAdmissionConfig is the config-defaults and config-features that the admission
	// webhooks read (nil: Knative's defaults). Tests that change it must restore it.
	testAdmissionConfig atomic.Pointer[ferryconfig.Config]
)

func init() {
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, servingv1.AddToScheme, servingv1beta1.AddToScheme, networkingv1alpha1.AddToScheme, autoscalingv1alpha1.AddToScheme} {
		if err := add(testScheme); err != nil {
			panic(err)
		}
	}
}

func TestMain(m *testing.M) {
	if dir := os.Getenv(faultClusterDirEnv); dir != "" {
		os.Exit(runFaultCluster(dir))
	}
	if phase := os.Getenv(restartPhaseEnv); phase != "" {
		if err := restartPhase(phase, os.Getenv(restartDirEnv)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var err error
	testCluster, err = localcluster.Start(ctx, localcluster.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting the local cluster:", err)
		return 1
	}
	defer func() {
		if err := testCluster.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the local cluster:", err)
		}
	}()
	testConfig = testCluster.RESTConfig()
	if testClient, err = client.New(testConfig, client.Options{Scheme: testScheme}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Every test goes through Ferry's admission webhooks, as with ferry up, reading the
	// ConfigMaps in ferry-system (unless a test sets testAdmissionConfig).
	store := ferryconfig.NewStore(kubernetes.NewForConfigOrDie(testConfig), ferryconfig.StoreOptions{})
	go func() { _ = store.Start(ctx) }()
	store.WaitForSync(ctx)
	admissionConfig := func() *ferryconfig.Config {
		if c := testAdmissionConfig.Load(); c != nil {
			return c
		}
		return store.Load()
	}
	if _, err := admission.Start(ctx, testConfig, admission.Options{Config: admissionConfig}); err != nil {
		fmt.Fprintln(os.Stderr, "starting the admission webhooks:", err)
		return 1
	}
	return m.Run()
}

// testNamespace creates a namespace for one test, named after it, and deletes it when
// the test ends.
func testNamespace(t testing.TB) string {
	t.Helper()
	name := strings.ToLower(t.Name())
	name = strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, name)
	if len(name) > 50 {
		name = name[:50]
	}
	name = fmt.Sprintf("%s-%d", strings.Trim(name, "-"), namespaceCount.Add(1))
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := testClient.Create(context.Background(), ns); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() { _ = testClient.Delete(context.Background(), ns) })
	return name
}

// awaitNamespaceGone makes the end of a test that made hundreds of objects in ns wait
// (up to three minutes) until the namespace is deleted. Left to the namespace
// controller and the garbage collector, which took over three minutes on a loaded
// machine, the objects loaded the API server (and the controllers of tests that watch
// every namespace) long after the test that made them.
func awaitNamespaceGone(t *testing.T, ns string) {
	t.Cleanup(func() {
		ctx := context.Background()
		start := time.Now()
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		_ = testClient.Delete(ctx, obj)
		for time.Since(start) < 3*time.Minute {
			if err := testClient.Get(ctx, client.ObjectKeyFromObject(obj), obj); apierrors.IsNotFound(err) {
				t.Logf("namespace %s deleted in %v", ns, time.Since(start).Round(time.Second))
				return
			}
			time.Sleep(time.Second)
		}
		t.Logf("namespace %s still there after %v; going on", ns, time.Since(start).Round(time.Second))
	})
}

func clientFromKubeconfig(path string) (client.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: testScheme})
}

// newTestManager returns a controller manager on cfg for one test, which sees only the
// objects in namespaces (every namespace when none is given, for a test that makes its
// namespaces as it goes). Tests run the same controllers in managers of their own, so
// controller names need not be unique; and the namespaces keep them apart: a test's
// reconcilers and gateway must not write another test's objects (its KIngresses'
// status, say, which says what its gateway has programmed).
func newTestManager(t testing.TB, cfg *rest.Config, namespaces ...string) ctrl.Manager {
	t.Helper()
	skipNameValidation := true
	var cacheOpts cache.Options
	if len(namespaces) > 0 {
		cacheOpts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			cacheOpts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 testScheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: &skipNameValidation},
		Cache:                  cacheOpts,
	})
	if err != nil {
		t.Fatal(err)
	}
	return mgr
}

// runTestManager starts mgr until the test ends and waits for its caches.
func runTestManager(t testing.TB, mgr ctrl.Manager) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		t.Fatal("cache did not sync")
	}
}
