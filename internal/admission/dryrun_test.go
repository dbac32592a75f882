package admission

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/ferry-serving/ferry/internal/config"
)

func TestDryRunModeOf(t *testing.T) {
	annotated := func(v string) map[string]string { return map[string]string{"features.knative.dev/podspec-dryrun": v} }
	tests := []struct {
		flag        config.Flag
		annotations map[string]string
		request     bool
		want        dryRunMode
	}{
		{config.Allowed, nil, false, dryRunOff},
		{config.Allowed, nil, true, dryRunRequest},
		{config.Allowed, annotated("enabled"), false, dryRunEnabled},
		{config.Allowed, annotated("enabled"), true, dryRunEnabled},
		{config.Allowed, annotated("strict"), false, dryRunStrict},
		{config.Allowed, annotated("Enabled"), false, dryRunOff}, // Knative compares as written
		{config.Allowed, annotated("disabled"), true, dryRunRequest},
		{config.Enabled, nil, false, dryRunEnabled},
		{config.Enabled, annotated("strict"), false, dryRunStrict},
		{config.Enabled, annotated("disabled"), false, dryRunEnabled},
		{config.Disabled, annotated("strict"), true, dryRunOff},
	}
	for _, tc := range tests {
		f := config.DefaultFeatures()
		f.PodSpecDryRun = tc.flag
		if got := dryRunModeOf(f, tc.annotations, tc.request); got != tc.want {
			t.Errorf("flag %s, annotations %v, dry-run request %v: mode %d, want %d", tc.flag, tc.annotations, tc.request, got, tc.want)
		}
	}
}

// TestValidatorPodDryRun answers the Pod dry run with each kind of refusal and checks
// which the webhook passes on, in Knative's words.
func TestValidatorPodDryRun(t *testing.T) {
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "Pod"}, "dry-run-validation-x",
		field.ErrorList{field.Invalid(field.NewPath("spec", "containers").Index(0).Child("name"), "&InvalidValue", "a lowercase RFC 1123 label")})
	unsupported := apierrors.NewBadRequest(`admission webhook "sidecar.example.com" does not support dry run`)
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New("exceeded quota"))
	svc := func(annotation string) string {
		a := ""
		if annotation != "" {
			a = `,"annotations":{"features.knative.dev/podspec-dryrun":"` + annotation + `"}`
		}
		return `{"apiVersion":"serving.knative.dev/v1","kind":"Service","metadata":{"name":"hello","namespace":"default"` + a + `},` +
			`"spec":{"template":{"spec":{"containers":[{"name":"&InvalidValue","image":"example.com/app"}]}},` +
			`"traffic":[{"latestRevision":true,"percent":100}]}}`
	}
	const ownedCfg = `{"apiVersion":"serving.knative.dev/v1","kind":"Configuration","metadata":{"name":"hello","namespace":"default",` +
		`"labels":{"serving.knative.dev/service":"hello"},"annotations":{"features.knative.dev/podspec-dryrun":"strict"},` +
		`"ownerReferences":[{"apiVersion":"serving.knative.dev/v1","kind":"Service","name":"hello","uid":"u","controller":true}]},` +
		`"spec":{"template":{"spec":{"containers":[{"image":"example.com/app"}]}}}}`
	unowned := strings.Replace(strings.Replace(ownedCfg, `"labels":{"serving.knative.dev/service":"hello"},`, "", 1),
		`,"ownerReferences":[{"apiVersion":"serving.knative.dev/v1","kind":"Service","name":"hello","uid":"u","controller":true}]`, "", 1)
	tests := []struct {
		name    string
		req     func() (kind, op, obj string, dryRun bool)
		refusal error
		// want: the denial's message contains it; "" means allowed.
		want    string
		created bool
	}{
		{"no annotation: not checked", one("Service", svc(""), false), invalid, "", false},
		{"enabled: the Pod's validation refuses", one("Service", svc("enabled"), false), invalid,
			`validation callback failed: dry run failed with Pod "dry-run-validation-x" is invalid: spec.containers[0].name: Invalid value: "&InvalidValue"`, true},
		{"enabled: the message names spec.template", one("Service", svc("enabled"), false), invalid, ": spec.template", true},
		{"enabled: a quota refuses", one("Service", svc("enabled"), false), forbidden, "validation callback failed: dry run failed with pods is forbidden: exceeded quota", true},
		{"enabled: a webhook that cannot dry-run is let through", one("Service", svc("enabled"), false), unsupported, "", true},
		{"strict: a webhook that cannot dry-run refuses", one("Service", svc("strict"), false), unsupported, "does not support dry run", true},
		{"a dry-run request: the Pod's validation refuses", one("Service", svc(""), true), invalid, "validation callback failed: dry run failed with", true},
		{"a dry-run request: a quota does not", one("Service", svc(""), true), forbidden, "", true},
		{"a Service's Configuration: not checked again", one("Configuration", ownedCfg, false), unsupported, "", false},
		{"an unowned Configuration: checked", one("Configuration", unowned, false),
			unsupported, "validation callback failed: dry run failed with", true},
		{"an update that keeps the template: not checked again", func() (string, string, string, bool) {
			return "Service", "UPDATE", svc("enabled"), false
		}, invalid, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			created := false
			client.PrependReactor("create", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
				created = true
				if opts := a.(k8stesting.CreateActionImpl).GetCreateOptions(); len(opts.DryRun) != 1 || opts.DryRun[0] != metav1.DryRunAll {
					t.Errorf("the Pod create is not a dry run: %+v", opts)
				}
				if p := a.(k8stesting.CreateActionImpl).GetObject().(*corev1.Pod); p.Namespace != "default" || len(p.Spec.Containers) == 0 {
					t.Errorf("Pod %+v", p)
				}
				return true, nil, tc.refusal
			})
			kind, op, obj, dry := tc.req()
			req := request(kind, op, obj)
			req.DryRun = &dry
			if op == "UPDATE" {
				req.OldObject = runtime.RawExtension{Raw: []byte(obj)}
			}
			resp := (&Validator{Client: client}).Handle(context.Background(), req)
			switch {
			case tc.want == "" && !resp.Allowed:
				t.Errorf("denied: %s", resp.Result.Message)
			case tc.want != "" && (resp.Allowed || !strings.Contains(resp.Result.Message, tc.want)):
				t.Errorf("allowed %v, message %q; want a denial with %q", resp.Allowed, resp.Result, tc.want)
			}
			if created != tc.created {
				t.Errorf("dry-run Pod created: %v, want %v", created, tc.created)
			}
		})
	}
}

func one(kind, obj string, dryRun bool) func() (string, string, string, bool) {
	return func() (string, string, string, bool) { return kind, "CREATE", obj, dryRun }
}
