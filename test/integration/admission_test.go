package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/admission"
	ferryconfig "github.com/ferry-serving/ferry/internal/config"
	admissionregv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAdmissionRegistered checks the two webhook configurations TestMain registered.
func TestAdmissionRegistered(t *testing.T) {
	ctx := context.Background()
	var m admissionregv1.MutatingWebhookConfiguration
	if err := testClient.Get(ctx, client.ObjectKey{Name: admission.MutatingWebhookName}, &m); err != nil {
		t.Fatal(err)
	}
	var v admissionregv1.ValidatingWebhookConfiguration
	if err := testClient.Get(ctx, client.ObjectKey{Name: admission.ValidatingWebhookName}, &v); err != nil {
		t.Fatal(err)
	}
	for _, w := range []struct {
		name    string
		policy  *admissionregv1.FailurePolicyType
		effects *admissionregv1.SideEffectClass
		cc      admissionregv1.WebhookClientConfig
	}{{m.Webhooks[0].Name, m.Webhooks[0].FailurePolicy, m.Webhooks[0].SideEffects, m.Webhooks[0].ClientConfig},
		{v.Webhooks[0].Name, v.Webhooks[0].FailurePolicy, v.Webhooks[0].SideEffects, v.Webhooks[0].ClientConfig}} {
		if *w.policy != admissionregv1.Fail || *w.effects != admissionregv1.SideEffectClassNone || w.cc.URL == nil || len(w.cc.CABundle) == 0 {
			t.Errorf("%s: failurePolicy %s sideEffects %s url %v caBundle %d bytes", w.name, *w.policy, *w.effects, w.cc.URL, len(w.cc.CABundle))
		}
	}
}

// TestAdmissionDefaultsAndUser checks Knative's defaults and the creator/lastModifier
// annotations, set from the user who sent each request.
func TestAdmissionDefaultsAndUser(t *testing.T) {
	ns := testNamespace(t)
	ctx := context.Background()
	alice, bob := impersonating(t, "alice"), impersonating(t, "bob")

	obj := manifest(t, `
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: who}
spec:
  template:
    spec:
      containers: [{image: example.com/app}]`)
	obj.SetNamespace(ns)
	if err := alice.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	svc := &servingv1.Service{}
	if err := testClient.Get(ctx, client.ObjectKeyFromObject(obj), svc); err != nil {
		t.Fatal(err)
	}
	if a := svc.Annotations; a[servingv1.CreatorAnnotation] != "alice" || a[servingv1.LastModifierAnnotation] != "alice" {
		t.Errorf("annotations after alice's create: %v", a)
	}
	c := svc.Spec.Template.Spec.Containers[0]
	if c.Name != "user-container" || c.ReadinessProbe == nil || c.ReadinessProbe.TCPSocket == nil || c.ReadinessProbe.SuccessThreshold != 1 {
		t.Errorf("container not defaulted as Knative does: %+v", c)
	}
	if rs := svc.Spec.Template.Spec; rs.EnableServiceLinks == nil || *rs.EnableServiceLinks || *rs.TimeoutSeconds != 300 {
		t.Errorf("enableServiceLinks %v timeoutSeconds %v", rs.EnableServiceLinks, rs.TimeoutSeconds)
	}
	if tt := svc.Spec.Traffic; len(tt) != 1 || *tt[0].Percent != 100 || !*tt[0].LatestRevision {
		t.Errorf("traffic %+v", tt)
	}

	// bob changes the template: he becomes the last modifier, alice stays the creator.
	svc.Spec.Template.Spec.Containers[0].Image = "example.com/app:v2"
	if err := bob.Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
	if a := svc.Annotations; a[servingv1.CreatorAnnotation] != "alice" || a[servingv1.LastModifierAnnotation] != "bob" {
		t.Errorf("annotations after bob's update: %v", a)
	}
	// nobody may rewrite the creator.
	svc.Annotations[servingv1.CreatorAnnotation] = "bob"
	err := bob.Update(ctx, svc)
	if err == nil || !strings.Contains(err.Error(), "annotation value is immutable: metadata.annotations.serving.knative.dev/creator") {
		t.Errorf("rewriting the creator: %v", err)
	}
}

// TestAdmissionDryRun checks that a server-side dry run is admitted and refused like a
// real request (the webhooks declare no side effects), and stores nothing.
func TestAdmissionDryRun(t *testing.T) {
	ns := testNamespace(t)
	ctx := context.Background()
	bad := manifest(t, `
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: dry}
spec:
  template:
    spec:
      nodeSelector: {disk: ssd}
      containers: [{image: example.com/app}]`)
	bad.SetNamespace(ns)
	err := testClient.Create(ctx, bad, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "must not set the field(s): spec.template.spec.nodeSelector") {
		t.Fatalf("dry run of a nodeSelector: %v", err)
	}
	good := manifest(t, "apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: dry}\nspec:\n  template:\n    spec:\n      containers: [{image: example.com/app}]")
	good.SetNamespace(ns)
	if err := testClient.Create(ctx, good, client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := unstructured.NestedMap(good.Object, "spec", "template", "spec", "containers"); found {
		t.Log("defaulted:", good.Object["spec"])
	}
	if err := testClient.Get(ctx, client.ObjectKeyFromObject(good), &servingv1.Service{}); err == nil {
		t.Error("a dry run stored the Service")
	}

	// As in Knative, a dry run also has the API server judge the Pod the Revision would
	// run: a request above its limit passes Knative's rules but not the Pod's.
	pod := manifest(t, `
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: dry-pod}
spec:
  template:
    spec:
      containers:
      - image: example.com/app
        resources: {requests: {cpu: "2"}, limits: {cpu: "1"}}`)
	pod.SetNamespace(ns)
	err = testClient.Create(ctx, pod, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "validation callback failed: dry run failed with") || !strings.Contains(err.Error(), "spec.template") {
		t.Errorf("dry run of a Pod the API server refuses: %v", err)
	}
}

// TestAdmissionPodSpecDryRunAnnotation: features.knative.dev/podspec-dryrun "enabled"
// or "strict" on a Service has admission create its Pod as a dry run on every create
// and update that changes the template, as Knative did up to v1.19: a container name
// Kubernetes refuses is refused at once, not at the Deployment.
func TestAdmissionPodSpecDryRunAnnotation(t *testing.T) {
	ns := testNamespace(t)
	ctx := context.Background()
	svc := func(name, annotation, container string) *unstructured.Unstructured {
		o := manifest(t, fmt.Sprintf(`
apiVersion: serving.knative.dev/v1
kind: Service
metadata:
  name: %s
  annotations: {features.knative.dev/podspec-dryrun: %q}
spec:
  template:
    spec:
      containers: [{name: %q, image: example.com/app}]`, name, annotation, container))
		o.SetNamespace(ns)
		return o
	}
	refused := func(what string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s: admitted", what)
			return
		}
		for _, want := range []string{"validation callback failed: dry run failed with", "&InvalidValue", "spec.template"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v; want it to contain %q", what, err, want)
			}
		}
	}
	for _, mode := range []string{"enabled", "strict"} {
		refused("a create with "+mode, testClient.Create(ctx, svc("bad-"+mode, mode, "&InvalidValue")))
		if err := testClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bad-" + mode}, &servingv1.Service{}); err == nil {
			t.Errorf("the refused Service bad-%s was stored", mode)
		}
	}

	// An update that brings the bad name in is refused too.
	good := svc("good", "enabled", "app")
	if err := testClient.Create(ctx, good); err != nil {
		t.Fatal(err)
	}
	if err := unstructured.SetNestedSlice(good.Object, []any{map[string]any{"name": "&InvalidValue", "image": "example.com/app"}},
		"spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	refused("an update with enabled", testClient.Update(ctx, good))

	// Without the annotation (kubernetes.podspec-dryrun is Allowed by default) the
	// check is not made, as in Knative: the Service is admitted.
	plain := svc("plain", "", "&InvalidValue")
	if err := testClient.Create(ctx, plain); err != nil {
		t.Errorf("without the annotation: %v", err)
	}
}

// TestAdmissionFeatureFlags flips config-features and config-defaults through the
// getter the webhooks read, as a change to the ConfigMaps would.
func TestAdmissionFeatureFlags(t *testing.T) {
	ns := testNamespace(t)
	ctx := context.Background()
	doc := `
apiVersion: serving.knative.dev/v1
kind: Service
metadata: {name: flags-NAME}
spec:
  template:
    spec:
      timeoutSeconds: 900
      nodeSelector: {disk: ssd}
      containers: [{image: example.com/app}]`
	create := func(name string) error {
		obj := manifest(t, strings.Replace(doc, "NAME", name, 1))
		obj.SetNamespace(ns)
		return testClient.Create(ctx, obj)
	}
	err := create("off")
	for _, w := range []string{"must not set the field(s): spec.template.spec.nodeSelector", "expected 0 <= 900 <= 600: spec.template.spec.timeoutSeconds"} {
		if err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("with Knative's defaults: %v, want %q", err, w)
		}
	}

	cfg := ferryconfig.Default()
	cfg.Features.PodSpecNodeSelector = ferryconfig.Enabled
	cfg.Defaults.MaxRevisionTimeoutSeconds = 1200
	cfg.Defaults.RevisionTimeoutSeconds = 600
	testAdmissionConfig.Store(cfg)
	t.Cleanup(func() { testAdmissionConfig.Store(nil) })
	if err := create("on"); err != nil {
		t.Fatalf("with the flag on and a higher maximum: %v", err)
	}

	// the default timeout follows config-defaults too.
	obj := manifest(t, "apiVersion: serving.knative.dev/v1\nkind: Configuration\nmetadata: {name: cfgdefault}\nspec:\n  template:\n    spec:\n      containers: [{image: example.com/app}]")
	obj.SetNamespace(ns)
	if err := testClient.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedInt64(obj.Object, "spec", "template", "spec", "timeoutSeconds"); got != 600 {
		t.Errorf("timeoutSeconds defaulted to %d, want config-defaults' 600", got)
	}
}

// impersonating returns a client that acts as user (the admin may impersonate).
func impersonating(t *testing.T, user string) client.Client {
	t.Helper()
	cfg := rest.CopyConfig(testConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters"}}
	c, err := client.New(cfg, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
