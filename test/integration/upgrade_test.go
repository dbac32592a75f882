package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler"
)

// Upgrade safety: the objects a released Ferry wrote (Knative objects with their
// labels, annotations and status, and the children it made) are recorded in
// testdata/upgrade, one file per version. A later Ferry must adopt them as they are:
// no new Revision, no traffic change, no Deployment rollout, nothing un-Ready.
//
// FERRY_RECORD_UPGRADE=<name> records this version's objects into
// testdata/upgrade/<name>.yaml instead of checking (run it when a release is cut).
const (
	recordUpgradeEnv = "FERRY_RECORD_UPGRADE"
	upgradeDir       = "testdata/upgrade"
	// fixtureNamespace is where fixtures are recorded; replay puts the objects in a
	// namespace of the test's, replacing this string wherever it occurs (hosts too).
	fixtureNamespace = "ferry-upgrade-fixture"
)

// upgradeKinds are the kinds recorded, in the order replay creates them: owners
// before what they own, so that owner UIDs can be rewritten.
var upgradeKinds = []schema.GroupVersionKind{
	v1.SchemeGroupVersion.WithKind("Service"),
	v1.SchemeGroupVersion.WithKind("Configuration"),
	v1.SchemeGroupVersion.WithKind("Revision"),
	v1.SchemeGroupVersion.WithKind("Route"),
	netv1alpha1.SchemeGroupVersion.WithKind("Ingress"),
	appsv1.SchemeGroupVersion.WithKind("Deployment"),
	corev1.SchemeGroupVersion.WithKind("Service"),
}

func TestUpgradeAdoptsRecordedObjects(t *testing.T) {
	if name := os.Getenv(recordUpgradeEnv); name != "" {
		recordUpgradeFixture(t, name)
		return
	}
	files, err := filepath.Glob(filepath.Join(upgradeDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no upgrade fixtures in %s: %v", upgradeDir, err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			ns := testNamespace(t)
			dumpOnFailure(t, testClient, ns)
			objs := replayFixture(t, file, ns)
			// Replay creates the Deployments anew; on a real upgrade their pods are
			// already running when the new Ferry starts.
			waitDeploymentsAvailable(t, ns)
			before := snapshot(t, ns)
			f := startFerry(t, ns, reconciler.Options{})
			// Ferry's reconcilers are running: give them time to act on every object,
			// then compare. Anything they would change, they change within this.
			time.Sleep(5 * time.Second)
			after := snapshot(t, ns)
			compareSnapshots(t, before, after)
			t.Logf("%d objects adopted; Ferry's writes meanwhile: %v", len(objs), f.writes.kinds(ns))
		})
	}
}

func waitDeploymentsAvailable(t *testing.T, ns string) {
	t.Helper()
	eventually(t, readyTimeout, func() (bool, string) {
		ds := &appsv1.DeploymentList{}
		if err := testClient.List(context.Background(), ds, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, d := range ds.Items {
			if d.Status.ObservedGeneration != d.Generation || d.Status.AvailableReplicas != *d.Spec.Replicas {
				return false, fmt.Sprintf("Deployment %s: %d of %d available", d.Name, d.Status.AvailableReplicas, *d.Spec.Replicas)
			}
		}
		return true, ""
	})
}

// upgradeSnapshot is what a user would notice change across an upgrade.
type upgradeSnapshot struct {
	revisions   []string
	generations map[string]int64
	traffic     map[string][]v1.TrafficTarget
	templates   map[string]corev1.PodTemplateSpec
	notReady    []string
}

func snapshot(t *testing.T, ns string) upgradeSnapshot {
	t.Helper()
	ctx := context.Background()
	s := upgradeSnapshot{generations: map[string]int64{}, traffic: map[string][]v1.TrafficTarget{},
		templates: map[string]corev1.PodTemplateSpec{}}
	lists := []client.ObjectList{&v1.ServiceList{}, &v1.ConfigurationList{}, &v1.RevisionList{}, &v1.RouteList{},
		&netv1alpha1.IngressList{}, &appsv1.DeploymentList{}}
	for _, l := range lists {
		if err := testClient.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
	}
	for _, svc := range lists[0].(*v1.ServiceList).Items {
		s.generations["Service/"+svc.Name] = svc.Generation
		if !svc.IsReady() {
			s.notReady = append(s.notReady, "Service/"+svc.Name)
		}
	}
	for _, c := range lists[1].(*v1.ConfigurationList).Items {
		s.generations["Configuration/"+c.Name] = c.Generation
	}
	for _, r := range lists[2].(*v1.RevisionList).Items {
		s.revisions = append(s.revisions, r.Name)
		if !r.IsReady() {
			s.notReady = append(s.notReady, "Revision/"+r.Name)
		}
	}
	slices.Sort(s.revisions)
	for _, r := range lists[3].(*v1.RouteList).Items {
		s.generations["Route/"+r.Name] = r.Generation
		s.traffic[r.Name] = r.Status.Traffic
		if !r.IsReady() {
			s.notReady = append(s.notReady, "Route/"+r.Name)
		}
	}
	for _, ing := range lists[4].(*netv1alpha1.IngressList).Items {
		s.generations["Ingress/"+ing.Name] = ing.Generation
	}
	for _, d := range lists[5].(*appsv1.DeploymentList).Items {
		s.generations["Deployment/"+d.Name] = d.Generation
		s.templates[d.Name] = d.Spec.Template
	}
	return s
}

func compareSnapshots(t *testing.T, before, after upgradeSnapshot) {
	t.Helper()
	if len(before.notReady) > 0 {
		t.Errorf("not Ready as replayed (a broken fixture): %v", before.notReady)
	}
	if len(after.notReady) > 0 {
		t.Errorf("not Ready after the upgrade: %v", after.notReady)
	}
	if !slices.Equal(before.revisions, after.revisions) {
		t.Errorf("Revisions changed: %v → %v", before.revisions, after.revisions)
	}
	for k, g := range before.generations {
		if after.generations[k] != g {
			t.Errorf("%s: spec changed (generation %d → %d)", k, g, after.generations[k])
		}
	}
	for name, tr := range before.traffic {
		if !equality.Semantic.DeepEqual(tr, after.traffic[name]) {
			t.Errorf("Route %s: traffic changed:\n%v\n→\n%v", name, tr, after.traffic[name])
		}
	}
	for name, tmpl := range before.templates {
		if !equality.Semantic.DeepEqual(tmpl, after.templates[name]) {
			t.Errorf("Deployment %s: pod template changed (a rollout)", name)
		}
	}
}

// replayFixture creates the recorded objects in ns as they were: owners first, their
// UIDs rewritten in what they own (owner references, labels), status restored.
func replayFixture(t *testing.T, file, ns string) []*unstructured.Unstructured {
	t.Helper()
	ctx := context.Background()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(strings.ReplaceAll(string(raw), fixtureNamespace, ns), "\n---\n")
	var created []*unstructured.Unstructured
	for i := 0; i < len(docs); i++ {
		if strings.TrimSpace(docs[i]) == "" {
			continue
		}
		obj := manifest(t, docs[i])
		oldUID := string(obj.GetUID())
		status, hasStatus := obj.Object["status"]
		obj.SetUID("")
		if err := testClient.Create(ctx, obj); err != nil {
			t.Fatalf("replaying %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
		if hasStatus && obj.GetKind() != "Deployment" && obj.GroupVersionKind() != corev1.SchemeGroupVersion.WithKind("Service") {
			obj.Object["status"] = status
			if err := testClient.Status().Update(ctx, obj); err != nil {
				t.Fatalf("restoring the status of %s %s: %v", obj.GetKind(), obj.GetName(), err)
			}
		}
		for j := i + 1; j < len(docs); j++ {
			docs[j] = strings.ReplaceAll(docs[j], oldUID, string(obj.GetUID()))
		}
		created = append(created, obj)
	}
	return created
}

// recordUpgradeFixture runs this Ferry on a Service, a Service with tagged traffic,
// and a Route splitting traffic between two Configurations, and records every object
// in its namespace. Each object is recorded at generation 1 (created once, never
// changed), because replay can only create objects at generation 1.
func recordUpgradeFixture(t *testing.T, name string) {
	ctx := context.Background()
	c := testClient
	_ = c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fixtureNamespace}})
	t.Cleanup(func() { _ = c.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fixtureNamespace}}) })
	ns := fixtureNamespace
	startFerry(t, ns, reconciler.Options{})

	for _, path := range []string{"../../config/samples/hello-world.yaml", "../../config/samples/traffic-split.yaml"} {
		for _, obj := range readManifests(t, path) {
			obj.SetNamespace(ns)
			if err := c.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			waitCondition(t, c, &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: obj.GetName()}}, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
		}
	}
	for _, color := range []string{"blue", "green"} {
		cfg := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: color}}
		cfg.Spec.Template.Spec.Containers = []corev1.Container{{Image: "ghcr.io/knative/helloworld-go:latest",
			Env: []corev1.EnvVar{{Name: "TARGET", Value: color}}}}
		if err := c.Create(ctx, cfg); err != nil {
			t.Fatal(err)
		}
		waitCondition(t, c, cfg, v1.ConfigurationConditionReady, corev1.ConditionTrue, "", readyTimeout)
	}
	rt := &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "blue-green"}}
	rt.Spec.Traffic = []v1.TrafficTarget{
		{Tag: "blue", RevisionName: "blue-00001", Percent: ptr[int64](50)},
		{Tag: "green", ConfigurationName: "green", Percent: ptr[int64](50)},
	}
	if err := c.Create(ctx, rt); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, rt, v1.RouteConditionReady, corev1.ConditionTrue, "", readyTimeout)
	time.Sleep(3 * time.Second) // let every child settle (Deployment status, placeholders)

	var out []string
	for _, gvk := range upgradeKinds {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		slices.SortFunc(list.Items, func(a, b unstructured.Unstructured) int { return strings.Compare(a.GetName(), b.GetName()) })
		for _, obj := range list.Items {
			if obj.GetGeneration() > 1 {
				t.Fatalf("%s %s is at generation %d: replay cannot recreate it", gvk.Kind, obj.GetName(), obj.GetGeneration())
			}
			forFixture(&obj)
			data, err := yaml.Marshal(obj.Object)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, string(data))
		}
	}
	file := filepath.Join(upgradeDir, name+".yaml")
	header := fmt.Sprintf("# Objects Ferry %s wrote, recorded by %s=%s (test/integration/upgrade_test.go).\n", name, recordUpgradeEnv, name)
	if err := os.MkdirAll(upgradeDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, []byte(header+strings.Join(out, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d objects in %s", len(out), file)
}

// forFixture drops what the API server and other controllers set, keeping what Ferry
// wrote: metadata the user or Ferry set, the spec, and Ferry's status (a Deployment's
// and a Service's status belong to Kubernetes).
func forFixture(obj *unstructured.Unstructured) {
	for _, f := range []string{"resourceVersion", "creationTimestamp", "managedFields", "generation", "selfLink"} {
		unstructured.RemoveNestedField(obj.Object, "metadata", f)
	}
	switch obj.GroupVersionKind() {
	case appsv1.SchemeGroupVersion.WithKind("Deployment"):
		unstructured.RemoveNestedField(obj.Object, "status")
		unstructured.RemoveNestedField(obj.Object, "metadata", "annotations", "deployment.kubernetes.io/revision")
	case corev1.SchemeGroupVersion.WithKind("Service"):
		unstructured.RemoveNestedField(obj.Object, "status")
		// An allocated cluster IP is the API server's; a headless Service's "None" is Ferry's.
		if ip, _, _ := unstructured.NestedString(obj.Object, "spec", "clusterIP"); ip != corev1.ClusterIPNone {
			unstructured.RemoveNestedField(obj.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(obj.Object, "spec", "clusterIPs")
		}
	}
	if a := obj.GetAnnotations(); len(a) == 0 {
		unstructured.RemoveNestedField(obj.Object, "metadata", "annotations")
	}
	// Round-trip through JSON so that the YAML has no Go-specific types.
	data, _ := json.Marshal(obj.Object)
	_ = json.Unmarshal(data, &obj.Object)
}
