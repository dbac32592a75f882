package integration

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// TestCRDsServed checks that kubectl finds Ferry's kinds the way it finds Knative's:
// by resource, short name and category.
func TestCRDsServed(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(testConfig)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		groupVersion string
		kind         string
		shortNames   []string
	}{
		"services":       {"serving.knative.dev/v1", "Service", []string{"kservice", "ksvc"}},
		"configurations": {"serving.knative.dev/v1", "Configuration", []string{"config", "cfg"}},
		"revisions":      {"serving.knative.dev/v1", "Revision", []string{"rev"}},
		"routes":         {"serving.knative.dev/v1", "Route", []string{"rt"}},
		"ingresses":      {"networking.internal.knative.dev/v1alpha1", "Ingress", []string{"kingress", "king"}},
	}
	for resource, w := range want {
		list, err := dc.ServerResourcesForGroupVersion(w.groupVersion)
		if err != nil {
			t.Fatalf("%s not served: %v", w.groupVersion, err)
		}
		found := false
		for _, r := range list.APIResources {
			if r.Name != resource {
				continue
			}
			found = true
			if r.Kind != w.kind || !r.Namespaced {
				t.Errorf("%s: kind %s namespaced %v, want %s namespaced", resource, r.Kind, r.Namespaced, w.kind)
			}
			if strings.Join(r.ShortNames, ",") != strings.Join(w.shortNames, ",") {
				t.Errorf("%s: short names %v, want %v", resource, r.ShortNames, w.shortNames)
			}
			if w.groupVersion == "serving.knative.dev/v1" && strings.Join(r.Categories, ",") != "all,knative,serving" {
				t.Errorf("%s: categories %v, want all,knative,serving", resource, r.Categories)
			}
		}
		if !found {
			t.Errorf("%s is not served in %s", resource, w.groupVersion)
		}
	}
}

// TestSamplesAccepted applies every sample manifest, as a newcomer would with kubectl.
func TestSamplesAccepted(t *testing.T) {
	ns := testNamespace(t)
	files, err := filepath.Glob("../../config/samples/*.yaml")
	if err != nil || len(files) < 4 {
		t.Fatalf("want at least 4 samples, found %v (%v)", files, err)
	}
	for _, f := range files {
		for _, obj := range readManifests(t, f) {
			obj.SetNamespace(ns)
			if err := testClient.Create(context.Background(), obj); err != nil {
				t.Errorf("%s: %s %s refused: %v", filepath.Base(f), obj.GetKind(), obj.GetName(), err)
			}
		}
	}
}

// TestDefaultsAtAdmission checks the defaults that the schema applies, which a user
// sees in `kubectl get -o yaml` before any controller runs.
func TestDefaultsAtAdmission(t *testing.T) {
	ns := testNamespace(t)
	obj := manifest(t, `
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: defaults}
spec:
  template:
    spec:
      containers: [{image: example.com/app}]`)
	obj.SetNamespace(ns)
	if err := testClient.Create(context.Background(), obj); err != nil {
		t.Fatal(err)
	}
	timeout, _, _ := unstructured.NestedInt64(obj.Object, "spec", "template", "spec", "timeoutSeconds")
	cc, found, _ := unstructured.NestedInt64(obj.Object, "spec", "template", "spec", "containerConcurrency")
	if timeout != 300 || !found || cc != 0 {
		t.Errorf("timeoutSeconds=%d containerConcurrency=%d (set %v), want 300 and 0", timeout, cc, found)
	}
}

// TestInvalidRejected checks that each kind of bad input is refused at admission with
// a message that names the offending field.
func TestInvalidRejected(t *testing.T) {
	ns := testNamespace(t)
	const svc = "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: bad}\n"
	const route = "apiVersion: serving.knative.dev/v1\nkind: Route\nmetadata: {name: bad}\n"
	const container = "  template:\n    spec:\n      containers: [{image: example.com/app}]\n"
	cases := []struct {
		name, manifest string
		want           []string // every one must appear in the error
	}{
		{"percent over 100", svc + "spec:\n" + container + "  traffic: [{latestRevision: true, percent: 101}]", []string{"spec.traffic[0].percent", "100"}},
		{"negative percent", svc + "spec:\n" + container + "  traffic: [{latestRevision: true, percent: -1}, {revisionName: bad-1, percent: 101}]", []string{"spec.traffic[0].percent"}},
		{"percents not summing to 100", svc + "spec:\n" + container + "  traffic: [{latestRevision: true, percent: 50}, {revisionName: bad-1, percent: 40}]", []string{"spec.traffic", "sum to 100"}},
		{"configurationName in a Service", svc + "spec:\n" + container + "  traffic: [{configurationName: other, percent: 100}]", []string{"spec.traffic", "configurationName"}},
		{"latestRevision true with revisionName", svc + "spec:\n" + container + "  traffic: [{revisionName: bad-1, latestRevision: true, percent: 100}]", []string{"spec.traffic", "latestRevision", "revisionName"}},
		{"latestRevision false without revisionName", svc + "spec:\n" + container + "  traffic: [{latestRevision: false, percent: 100}]", []string{"spec.traffic[0].latestRevision", "when latestRevision is false"}},
		{"duplicate tags", svc + "spec:\n" + container + "  traffic: [{tag: a, latestRevision: true, percent: 50}, {tag: a, revisionName: bad-1, percent: 50}]", []string{"spec.traffic[1].tag", "Multiple definitions"}},
		{"tag not DNS-1035", svc + "spec:\n" + container + "  traffic: [{tag: 1Bad_Tag, latestRevision: true, percent: 100}]", []string{"spec.traffic[0].tag"}},
		{"url in spec", svc + "spec:\n" + container + "  traffic: [{latestRevision: true, percent: 100, url: 'http://x'}]", []string{"spec.traffic", "url"}},
		{"timeoutSeconds over 600", svc + "spec:\n  template:\n    spec:\n      timeoutSeconds: 601\n      containers: [{image: example.com/app}]", []string{"spec.template.spec.timeoutSeconds", "600"}},
		{"negative containerConcurrency", svc + "spec:\n  template:\n    spec:\n      containerConcurrency: -1\n      containers: [{image: example.com/app}]", []string{"spec.template.spec.containerConcurrency"}},
		{"no containers", svc + "spec:\n  template:\n    spec: {}", []string{"spec.template.spec.containers"}},
		{"container without image", svc + "spec:\n  template:\n    spec:\n      containers: [{name: app}]", []string{"spec.template.spec", "image"}},
		{"route target with both names", route + "spec:\n  traffic: [{revisionName: a, configurationName: b, percent: 100}]", []string{"spec.traffic[0].configurationName", "expected exactly one, got both"}},
		{"route target with neither name", route + "spec:\n  traffic: [{percent: 100}]", []string{"spec.traffic[0].configurationName", "expected exactly one, got neither"}},
		{"route percents not summing to 100", route + "spec:\n  traffic: [{configurationName: a, percent: 30}]", []string{"spec.traffic", "sum to 100"}},
		{"unknown field in traffic", route + "spec:\n  traffic: [{configurationName: a, percent: 100, weight: 3}]", []string{"weight"}},
		{"revision timeout over 600", "apiVersion: serving.knative.dev/v1\nkind: Revision\nmetadata: {name: bad}\nspec:\n  timeoutSeconds: 900\n  containers: [{image: example.com/app}]", []string{"spec.timeoutSeconds"}},
		{"ingress visibility", "apiVersion: networking.internal.knative.dev/v1alpha1\nkind: Ingress\nmetadata: {name: bad}\nspec:\n  rules: [{hosts: [a.example.com], visibility: Everywhere, http: {paths: [{splits: []}]}}]", []string{"spec.rules[0].visibility"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			obj := manifest(t, tc.manifest)
			obj.SetNamespace(ns)
			err := testClient.Create(context.Background(), obj, client.FieldValidation("Strict"))
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.manifest)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q: %v", w, err)
				}
			}
		})
	}
}

// TestRevisionSpecImmutable checks that a Revision, once created, cannot change.
func TestRevisionSpecImmutable(t *testing.T) {
	ns := testNamespace(t)
	obj := manifest(t, "apiVersion: serving.knative.dev/v1\nkind: Revision\nmetadata: {name: frozen}\nspec:\n  containers: [{image: example.com/app:v1}]")
	obj.SetNamespace(ns)
	ctx := context.Background()
	if err := testClient.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(obj.Object, "spec", "containers")
	containers[0].(map[string]any)["image"] = "example.com/app:v2"
	_ = unstructured.SetNestedSlice(obj.Object, containers, "spec", "containers")
	err := testClient.Update(ctx, obj)
	if err == nil || !strings.Contains(err.Error(), "spec") || !strings.Contains(err.Error(), "immutable") {
		t.Fatalf("changing a Revision's spec: got %v, want an error saying spec is immutable", err)
	}
	// Labels and annotations are not the spec: Ferry's controllers change them.
	if err := testClient.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
		t.Fatal(err)
	}
	obj.SetLabels(map[string]string{"serving.knative.dev/routingState": "active"})
	if err := testClient.Update(ctx, obj); err != nil {
		t.Fatalf("changing a Revision's labels: %v", err)
	}
}

// TestTableColumns checks what `kubectl get` prints: Knative's columns, read from the
// API server's Table output.
func TestTableColumns(t *testing.T) {
	ns := testNamespace(t)
	for _, f := range []string{"hello-world.yaml", "pinned-revision.yaml"} {
		for _, obj := range readManifests(t, "../../config/samples/"+f) {
			obj.SetNamespace(ns)
			if err := testClient.Create(context.Background(), obj); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := map[string][]string{
		"services":       {"Name", "URL", "LatestCreated", "LatestReady", "Ready", "Reason"},
		"configurations": {"Name", "LatestCreated", "LatestReady", "Ready", "Reason"},
		"routes":         {"Name", "URL", "Ready", "Reason"},
		"revisions":      {"Name", "Config Name", "Generation", "Ready", "Reason", "Actual Replicas", "Desired Replicas"},
	}
	cfg := rest.CopyConfig(testConfig)
	raw, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for resource, columns := range want {
		var table metav1.Table
		req, _ := http.NewRequest(http.MethodGet, cfg.Host+"/apis/serving.knative.dev/v1/namespaces/"+ns+"/"+resource, nil)
		req.Header.Set("Accept", "application/json;as=Table;g=meta.k8s.io;v=v1")
		res, err := raw.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		err = json.NewDecoder(res.Body).Decode(&table)
		res.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range table.ColumnDefinitions {
			if c.Priority == 0 {
				got = append(got, c.Name)
			}
		}
		if strings.Join(got, "|") != strings.Join(columns, "|") {
			t.Errorf("%s columns: %v, want %v", resource, got, columns)
		}
		if resource != "revisions" && len(table.Rows) == 0 {
			t.Errorf("%s: no rows", resource)
		}
	}
}

// TestDeploymentBecomesAvailable checks the simulated data plane that the reconcilers
// rely on: a Deployment gets Pods from kwok that become Ready.
func TestDeploymentBecomesAvailable(t *testing.T) {
	ns := testNamespace(t)
	ctx := context.Background()
	replicas := int32(3)
	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "example.com/web"}}},
			},
		},
	}
	if err := testClient.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		if err := testClient.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return false, err
		}
		return d.Status.AvailableReplicas == replicas, nil
	})
	if err != nil {
		t.Fatalf("deployment not available: %v; status %+v", err, d.Status)
	}
	var pods corev1.PodList
	if err := testClient.List(ctx, &pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
			t.Errorf("pod %s: phase %s ip %q, want Running with an IP", p.Name, p.Status.Phase, p.Status.PodIP)
		}
	}
}

func readManifests(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range strings.Split(string(raw), "\n---") {
		if strings.TrimSpace(doc) == "" {
			continue
		}
		out = append(out, manifest(t, doc))
	}
	return out
}

func manifest(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		t.Fatalf("bad test manifest: %v\n%s", err, doc)
	}
	return obj
}

// manifestFromString is manifest for code without a *testing.T; doc must be valid.
func manifestFromString(doc string) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
		panic(err)
	}
	return obj
}
