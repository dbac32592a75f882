package admission

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

func request(kind, op, obj string) admission.Request {
	return admission.Request{AdmissionRequest: admissionv1.AdmissionRequest{
		Kind:      metav1.GroupVersionKind{Group: "serving.knative.dev", Version: "v1", Kind: kind},
		Operation: admissionv1.Operation(op),
		Namespace: "default",
		UserInfo:  authenticationv1.UserInfo{Username: "alice"},
		Object:    runtime.RawExtension{Raw: []byte(obj)},
	}}
}

const svcJSON = `{"apiVersion":"serving.knative.dev/v1","kind":"Service","metadata":{"name":"hello","namespace":"default"},` +
	`"spec":{"template":{"spec":{"containers":[{"image":"example.com/app"}]}}}}`

func TestMutatorPatches(t *testing.T) {
	resp := (&Mutator{}).Handle(context.Background(), request("Service", "CREATE", svcJSON))
	if !resp.Allowed {
		t.Fatalf("denied: %+v", resp.Result)
	}
	var paths []string
	for _, p := range resp.Patches {
		paths = append(paths, p.Operation+" "+p.Path)
	}
	all := strings.Join(paths, "\n")
	for _, want := range []string{"/spec/template/spec/timeoutSeconds", "/spec/traffic", "/metadata/annotations", "/spec/template/spec/containers/0/readinessProbe"} {
		if !strings.Contains(all, want) {
			t.Errorf("no patch of %s in\n%s", want, all)
		}
	}
	// A value of the wrong type is left to the schema validation.
	bad := strings.Replace(svcJSON, `"image":"example.com/app"`, `"image":"example.com/app","command":[true]`, 1)
	if resp := (&Mutator{}).Handle(context.Background(), request("Service", "CREATE", bad)); !resp.Allowed || len(resp.Patches) != 0 {
		t.Errorf("undecodable object: %+v", resp)
	}
}

func TestValidatorDenies(t *testing.T) {
	bad := strings.Replace(svcJSON, `"containers"`, `"nodeSelector":{"a":"b"},"containers"`, 1)
	bad = strings.Replace(bad, `}]}}}}`, `}]}},"traffic":[{"latestRevision":true,"percent":100}]}}`, 1)
	resp := (&Validator{}).Handle(context.Background(), request("Service", "CREATE", bad))
	if resp.Allowed || resp.Result.Code != 400 ||
		resp.Result.Message != "validation failed: must not set the field(s): spec.template.spec.nodeSelector" {
		t.Errorf("response %+v", resp.Result)
	}
	if len(resp.Warnings) == 0 {
		t.Error("no insecure-default warnings")
	}
	status := request("Service", "UPDATE", bad)
	status.SubResource = "status"
	if resp := (&Validator{}).Handle(context.Background(), status); !resp.Allowed {
		t.Error("a status update was validated")
	}
}
