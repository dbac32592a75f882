package integration

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

const systemNamespace = "ferry-system"

// gatewayLeaseNamespace is where config/deploy's gateway keeps its replica Leases.
const gatewayLeaseNamespace = "ferry-gateway-replicas"

// installKinds are what TestInstall applies from config/; skippedKinds need a network
// the test cluster does not have (a Service in front of pods): webhook configurations
// pointing at it would refuse every other test's writes. A kind in neither list fails
// the test, so that a new kind in config/ is decided on.
var (
	installKinds = []string{"Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole",
		"ClusterRoleBinding", "Role", "RoleBinding", "ConfigMap"}
	skippedKinds = []string{"Deployment", "Service", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"}
)

// install is what `kustomize build config/` gives, as TestInstall uses it.
type install struct {
	objects []*unstructured.Unstructured
	// serviceAccount is the ServiceAccount each Deployment runs as.
	serviceAccount map[string]string
}

// buildInstall builds config/ with kustomize as `kubectl apply -k` does: in kustomize's
// legacy order, Namespace and CRDs first.
func buildInstall(t *testing.T) install {
	t.Helper()
	in := install{serviceAccount: map[string]string{}}
	accounts := map[string]bool{}
	for _, obj := range kustomize(t, "../../config") {
		m := obj.Object
		switch kind := obj.GetKind(); {
		case slices.Contains(installKinds, kind):
			in.objects = append(in.objects, obj)
			if kind == "ServiceAccount" {
				accounts[obj.GetName()] = true
			}
		case kind == "Deployment":
			sa, _, _ := unstructured.NestedString(m, "spec", "template", "spec", "serviceAccountName")
			in.serviceAccount[obj.GetName()] = sa
		case !slices.Contains(skippedKinds, kind):
			t.Fatalf("config/ has a %s (%s), which TestInstall neither applies nor knows to skip", kind, obj.GetName())
		}
	}
	for _, d := range []string{"ferry-controller", "ferry-gateway"} {
		if sa := in.serviceAccount[d]; !accounts[sa] {
			t.Fatalf("the Deployment %s runs as ServiceAccount %q, which config/ does not define", d, sa)
		}
	}
	return in
}

// kustomize builds dir as `kubectl apply -k` does: in kustomize's legacy order,
// Namespace and CRDs first.
func kustomize(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	opts := krusty.MakeDefaultOptions()
	opts.Reorder = krusty.ReorderOptionLegacy
	resources, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var objs []*unstructured.Unstructured
	for _, r := range resources.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
	return objs
}

// applyInstall server-side applies the objects, as `kubectl apply --server-side`
// (field manager kubectl, no forced conflicts: the CRDs must apply cleanly over the
// ones the test cluster installed). When the test ends it deletes the RBAC objects and
// ServiceAccounts, the leader election Lease and the ConfigMaps it created, and keeps
// the Namespace and CRDs, which every test uses.
func applyInstall(t *testing.T, in install) {
	t.Helper()
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(testConfig)
	if err != nil {
		t.Fatal(err)
	}
	var undo []func() error
	t.Cleanup(func() {
		for _, del := range undo {
			if err := del(); err != nil && !apierrors.IsNotFound(err) {
				t.Errorf("cleaning up the install: %v", err)
			}
		}
	})
	for _, obj := range in.objects {
		gvk := obj.GroupVersionKind()
		mapping, err := testClient.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			t.Fatal(err)
		}
		res := dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace())
		_, err = res.Get(ctx, obj.GetName(), metav1.GetOptions{})
		existed := err == nil
		if err := serverSideApply(dyn, obj); err != nil {
			t.Fatalf("kubectl apply --server-side: %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		kind, name := obj.GetKind(), obj.GetName()
		if keep := kind == "Namespace" || kind == "CustomResourceDefinition" || kind == "ConfigMap" && existed; !keep {
			undo = append(undo, func() error { return res.Delete(ctx, name, metav1.DeleteOptions{}) })
		}
	}
	undo = append(undo, func() error {
		return kubernetes.NewForConfigOrDie(testConfig).CoordinationV1().Leases(systemNamespace).Delete(ctx, "ferry-controller", metav1.DeleteOptions{})
	})
}

// identity is one ServiceAccount's access to the test cluster: a kubeconfig holding
// only its token (no client certificate) and clients built from that kubeconfig.
type identity struct {
	name   string
	path   string
	cs     kubernetes.Interface
	client client.Client
}

// serviceAccountKubeconfig writes a kubeconfig for the ServiceAccount sa in
// ferry-system, with a token from the TokenRequest API (as the kubelet mounts one in
// the component's pod).
func serviceAccountKubeconfig(t *testing.T, sa string) *identity {
	t.Helper()
	tr, err := kubernetes.NewForConfigOrDie(testConfig).CoreV1().ServiceAccounts(systemNamespace).CreateToken(context.Background(), sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("a token for ServiceAccount %s: %v", sa, err)
	}
	ca := testConfig.CAData
	if len(ca) == 0 {
		if ca, err = os.ReadFile(testConfig.CAFile); err != nil {
			t.Fatal(err)
		}
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["ferry"] = &clientcmdapi.Cluster{Server: testConfig.Host, CertificateAuthorityData: ca}
	kc.AuthInfos[sa] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	kc.Contexts[sa] = &clientcmdapi.Context{Cluster: "ferry", AuthInfo: sa}
	kc.CurrentContext = sa
	path := filepath.Join(t.TempDir(), sa+".kubeconfig")
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	id := &identity{name: "system:serviceaccount:" + systemNamespace + ":" + sa, path: path}
	if id.cs, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if id.client, err = client.New(cfg, client.Options{Scheme: testScheme}); err != nil {
		t.Fatal(err)
	}
	return id
}

// accessCheck is one request made with an identity's token.
type accessCheck struct {
	what string
	do   func(context.Context, *identity) error
}

// checkAccess waits until the identity may make each allowed request (NotFound counts:
// the API server authorizes before it looks), then expects the API server to refuse
// each refused one with Forbidden.
func checkAccess(t *testing.T, id *identity, allowed, refused []accessCheck) {
	t.Helper()
	ctx := context.Background()
	for _, c := range allowed {
		eventually(t, 10*time.Second, func() (bool, string) {
			err := c.do(ctx, id)
			return err == nil || apierrors.IsNotFound(err), fmt.Sprintf("%s may not %s: %v", id.name, c.what, err)
		})
	}
	for _, c := range refused {
		if err := c.do(ctx, id); !apierrors.IsForbidden(err) {
			t.Errorf("%s may %s (want Forbidden, got %v)", id.name, c.what, err)
		}
	}
}

// loopbackAddrs returns n distinct loopback addresses that nothing listens on now.
func loopbackAddrs(t *testing.T, n int) []string {
	t.Helper()
	var addrs []string
	for range n {
		// Held open until all are chosen, so that the n ports differ.
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		addrs = append(addrs, ln.Addr().String())
	}
	return addrs
}

// controllerMay are requests of `ferry controller`'s code paths (docs/rbac.md): at least
// one for each of its bindings, and each webhook rule, which the test cannot exercise
// by running --webhook-addr. Writes are dry runs.
var controllerMay = []accessCheck{
	{"list Pods in every namespace", func(ctx context.Context, id *identity) error {
		_, err := id.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}},
	{"list ConfigMaps in ferry-system", func(ctx context.Context, id *identity) error {
		_, err := id.cs.CoreV1().ConfigMaps(systemNamespace).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}},
	{"get the Lease ferry-controller", func(ctx context.Context, id *identity) error {
		_, err := id.cs.CoordinationV1().Leases(systemNamespace).Get(ctx, "ferry-controller", metav1.GetOptions{})
		return err
	}},
	{"get the Secret ferry-webhook-certs", func(ctx context.Context, id *identity) error {
		_, err := id.cs.CoreV1().Secrets(systemNamespace).Get(ctx, "ferry-webhook-certs", metav1.GetOptions{})
		return err
	}},
	{"create the Secret ferry-webhook-certs", func(ctx context.Context, id *identity) error {
		sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "ferry-webhook-certs"}}
		_, err := id.cs.CoreV1().Secrets(systemNamespace).Create(ctx, sec, dryRun)
		return err
	}},
	// The test binary registered both webhook configurations (by URL), under the names
	// a cluster's controller writes the caBundle of.
	{"update the MutatingWebhookConfiguration webhook.serving.ferry.dev", func(ctx context.Context, id *identity) error {
		return updateAsIs(ctx, id, &admissionregv1.MutatingWebhookConfiguration{}, types.NamespacedName{Name: "webhook.serving.ferry.dev"})
	}},
	{"update the ValidatingWebhookConfiguration validation.webhook.serving.ferry.dev", func(ctx context.Context, id *identity) error {
		return updateAsIs(ctx, id, &admissionregv1.ValidatingWebhookConfiguration{}, types.NamespacedName{Name: "validation.webhook.serving.ferry.dev"})
	}},
	// Admission's Pod dry run (features.knative.dev/podspec-dryrun).
	{"create a Pod as a dry run in default", func(ctx context.Context, id *identity) error {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "dry-run-validation-"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.com/c"}}}}
		_, err := id.cs.CoreV1().Pods("default").Create(ctx, pod, dryRun)
		return err
	}},
	{"ask who it is (SelfSubjectReview)", func(ctx context.Context, id *identity) error {
		r, err := id.cs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
		if err == nil && r.Status.UserInfo.Username != id.name {
			return fmt.Errorf("the API server says it is %q", r.Status.UserInfo.Username)
		}
		return err
	}},
}

// gatewayMay is one request of `ferry gateway`'s for each of its bindings.
var gatewayMay = []accessCheck{
	{"list EndpointSlices in every namespace", func(ctx context.Context, id *identity) error {
		_, err := id.cs.DiscoveryV1().EndpointSlices("").List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}},
	{"list pods in every namespace", func(ctx context.Context, id *identity) error {
		_, err := id.cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}},
	{"list ConfigMaps in ferry-system", func(ctx context.Context, id *identity) error {
		_, err := id.cs.CoreV1().ConfigMaps(systemNamespace).List(ctx, metav1.ListOptions{Limit: 1})
		return err
	}},
	{"create a Lease in " + gatewayLeaseNamespace, func(ctx context.Context, id *identity) error {
		_, err := id.cs.CoordinationV1().Leases(gatewayLeaseNamespace).Create(ctx,
			&coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{GenerateName: "ferry-gateway-"}}, dryRun)
		return err
	}},
}

// dryRun makes the requests that might be allowed harmless; the API server authorizes
// a dry run as the real request.
var dryRun = metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}

// controllerMayNot are requests the controller's code never makes and that would widen
// what its token gives: reading Secrets, granting rights, deleting what garbage
// collection deletes, changing its own configuration.
func controllerMayNot(ns string) []accessCheck {
	return []accessCheck{
		{"list Secrets in " + ns, func(ctx context.Context, id *identity) error {
			_, err := id.cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
			return err
		}},
		{"get a Secret in ferry-system other than ferry-webhook-certs", func(ctx context.Context, id *identity) error {
			_, err := id.cs.CoreV1().Secrets(systemNamespace).Get(ctx, "ferry-other-secret", metav1.GetOptions{})
			return err
		}},
		{"get a MutatingWebhookConfiguration other than Ferry's", func(ctx context.Context, id *identity) error {
			_, err := id.cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Get(ctx, "not-ferry", metav1.GetOptions{})
			return err
		}},
		{"create a ClusterRoleBinding to cluster-admin", func(ctx context.Context, id *identity) error {
			b := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "not-ferry"}, Subjects: saSubject(),
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"}}
			_, err := id.cs.RbacV1().ClusterRoleBindings().Create(ctx, b, dryRun)
			return err
		}},
		{"create a RoleBinding in " + ns, func(ctx context.Context, id *identity) error {
			b := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "not-ferry"}, Subjects: saSubject(),
				RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "admin"}}
			_, err := id.cs.RbacV1().RoleBindings(ns).Create(ctx, b, dryRun)
			return err
		}},
		{"delete Deployments in " + ns, func(ctx context.Context, id *identity) error {
			return id.cs.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{DryRun: dryRun.DryRun}, metav1.ListOptions{})
		}},
		{"update a ConfigMap in ferry-system", func(ctx context.Context, id *identity) error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config-domain"}}
			_, err := id.cs.CoreV1().ConfigMaps(systemNamespace).Update(ctx, cm, metav1.UpdateOptions{DryRun: dryRun.DryRun})
			return err
		}},
	}
}

// gatewayMayNot: the gateway only reads what it routes, writes KIngress status and
// keeps its replica Lease in a namespace of their own.
func gatewayMayNot(ns, route string) []accessCheck {
	return []accessCheck{
		{"create a Deployment in " + ns, func(ctx context.Context, id *identity) error {
			d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "not-ferry"}}
			_, err := id.cs.AppsV1().Deployments(ns).Create(ctx, d, dryRun)
			return err
		}},
		{"update the Route " + route, func(ctx context.Context, id *identity) error {
			return updateAsIs(ctx, id, &v1.Route{}, types.NamespacedName{Namespace: ns, Name: route})
		}},
		{"update the KIngress " + route + " (not its status)", func(ctx context.Context, id *identity) error {
			return updateAsIs(ctx, id, &netv1alpha1.Ingress{}, types.NamespacedName{Namespace: ns, Name: route})
		}},
		{"list Secrets in every namespace", func(ctx context.Context, id *identity) error {
			_, err := id.cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
			return err
		}},
		// It reads them (config-observability), and may not change them.
		{"create a ConfigMap in ferry-system", func(ctx context.Context, id *identity) error {
			_, err := id.cs.CoreV1().ConfigMaps(systemNamespace).Create(ctx,
				&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "config-observability-not-ferry"}}, dryRun)
			return err
		}},
		{"create a Lease in " + ns + " (its replica Leases live in " + gatewayLeaseNamespace + ")", func(ctx context.Context, id *identity) error {
			_, err := id.cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "not-ferry"}}, dryRun)
			return err
		}},
		{"patch the controller's leader election Lease in ferry-system", func(ctx context.Context, id *identity) error {
			_, err := id.cs.CoordinationV1().Leases(systemNamespace).Patch(ctx, "ferry-controller", types.MergePatchType,
				[]byte(`{"spec":{"holderIdentity":"not-ferry"}}`), metav1.PatchOptions{DryRun: dryRun.DryRun})
			return err
		}},
		{"create an Event in " + ns, func(ctx context.Context, id *identity) error {
			ev := &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "not-ferry"}, EventTime: metav1.NowMicro(),
				Reason: "Test", Action: "Test", Type: corev1.EventTypeNormal, ReportingController: "not-ferry", ReportingInstance: "not-ferry",
				Regarding: corev1.ObjectReference{Kind: "Namespace", Name: ns}}
			_, err := id.cs.EventsV1().Events(ns).Create(ctx, ev, dryRun)
			return err
		}},
	}
}

// updateAsIs reads an object as the admin and writes it back unchanged (a dry run)
// with the identity's token. The object must exist: the admin's NotFound is not
// wrapped, so that it does not pass for the API server authorizing the identity.
func updateAsIs(ctx context.Context, id *identity, obj client.Object, key types.NamespacedName) error {
	if err := testClient.Get(ctx, key, obj); err != nil {
		return fmt.Errorf("reading %T %s as the admin: %v", obj, key, err)
	}
	return id.client.Update(ctx, obj, client.DryRunAll)
}

func saSubject() []rbacv1.Subject {
	return []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: systemNamespace, Name: "ferry-controller"}}
}
