package scale

import (
	"testing"
)

func TestKeyOfRequest(t *testing.T) {
	for _, tc := range []struct {
		method, path, contentType string
		want                      WriteKey
	}{
		{"POST", "/api/v1/namespaces/ns/pods", "", WriteKey{Resource: "pods", Verb: "POST"}},
		{"PUT", "/api/v1/namespaces/ns/pods/p/status", "", WriteKey{Resource: "pods", Subresource: "status", Verb: "PUT"}},
		{"POST", "/api/v1/namespaces/ns/pods/p/binding", "", WriteKey{Resource: "pods", Subresource: "binding", Verb: "POST"}},
		{"PUT", "/apis/serving.knative.dev/v1/namespaces/ns/services/s/status", "", WriteKey{Group: "serving.knative.dev", Resource: "services", Subresource: "status", Verb: "PUT"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d", "application/merge-patch+json", WriteKey{Group: "apps", Resource: "deployments", Verb: "PATCH"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns/deployments/d", "application/apply-patch+yaml", WriteKey{Group: "apps", Resource: "deployments", Verb: "APPLY"}},
		{"POST", "/api/v1/namespaces", "", WriteKey{Resource: "namespaces", Verb: "POST"}},
		{"DELETE", "/api/v1/namespaces/ns", "", WriteKey{Resource: "namespaces", Verb: "DELETE"}},
		{"PUT", "/api/v1/namespaces/ns/finalize", "", WriteKey{Resource: "namespaces", Subresource: "finalize", Verb: "PUT"}},
		{"PUT", "/api/v1/namespaces/ns/status", "", WriteKey{Resource: "namespaces", Subresource: "status", Verb: "PUT"}},
		{"DELETE", "/apis/serving.knative.dev/v1/namespaces/ns/services", "", WriteKey{Group: "serving.knative.dev", Resource: "services", Verb: "DELETECOLLECTION"}},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kcm", "", WriteKey{Group: "coordination.k8s.io", Resource: "leases", Verb: "PUT"}},
		{"PATCH", "/api/v1/nodes/n/status", "", WriteKey{Resource: "nodes", Subresource: "status", Verb: "PATCH"}},
		{"POST", "/apis/events.k8s.io/v1/namespaces/ns/events", "", WriteKey{Group: "events.k8s.io", Resource: "events", Verb: "POST"}},
	} {
		if got := KeyOfRequest(tc.method, tc.path, tc.contentType); got != tc.want {
			t.Errorf("%s %s = %+v, want %+v", tc.method, tc.path, got, tc.want)
		}
	}
}
