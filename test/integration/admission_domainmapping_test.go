package integration

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DomainMapping rows of the admission table, after Knative's
// pkg/apis/serving/v1beta1/domainmapping_validation_test.go: the name is a domain
// outside the cluster's, the ref names a kind, apiVersion and name in the mapping's
// namespace, and the creator annotation is immutable.

func dm(meta, spec string) string {
	return "apiVersion: serving.knative.dev/v1beta1\nkind: DomainMapping\nmetadata: " + meta + "\nspec: " + spec + "\n"
}

const dmRef = "{ref: {apiVersion: serving.knative.dev/v1, kind: Service, name: hello}}"

func domainMappingCases() []admissionCase {
	return []admissionCase{
		rej("domainmapping name of one segment", dm("{name: invalid}", dmRef),
			"metadata.name", `invalid name "invalid"`, "should be a domain with at least two segments separated by dots"),
		rej("domainmapping name under the cluster domain", dm("{name: notallowed.svc.cluster.local}", dmRef),
			"metadata.name", `must not be a subdomain of cluster local domain "cluster.local"`),
		rej("domainmapping generateName", dm("{generateName: cant-use-this}", dmRef), "metadata.generateName"),
		rej("domainmapping ref in another namespace", dm("{name: wrong-ref-ns.example.com}", "{ref: {apiVersion: serving.knative.dev/v1, kind: Service, name: hello, namespace: elsewhere}}"),
			"mismatched namespaces", "spec.ref.namespace"),
		rej("domainmapping ref without kind", dm("{name: wrong-kind.example.com}", "{ref: {apiVersion: serving.knative.dev/v1, name: hello}}"), "spec.ref.kind"),
		rej("domainmapping ref without apiVersion", dm("{name: wrong-version.example.com}", "{ref: {kind: Service, name: hello}}"), "spec.ref.apiVersion"),
		rej("domainmapping ref without name", dm("{name: no-name.example.com}", "{ref: {apiVersion: serving.knative.dev/v1, kind: Service}}"), "spec.ref.name"),
		rej("domainmapping ref with group", dm("{name: group.example.com}", "{ref: {apiVersion: serving.knative.dev/v1, group: serving.knative.dev, kind: Service, name: hello}}"), "spec.ref.group"),
		rej("domainmapping tls without secretName", dm("{name: tls.example.com}", "{ref: {apiVersion: serving.knative.dev/v1, kind: Service, name: hello}, tls: {}}"), "spec.tls.secretName"),
		rej("domainmapping without ref", dm("{name: no-ref.example.com}", "{}"), "spec.ref"),

		acc("domainmapping to a Knative Service", dm("{name: hello.example.com}", dmRef)),
		acc("domainmapping as kn domain create writes it", dm("{name: kn.example.com}", "{ref: {apiVersion: serving.knative.dev/v1, kind: Service, name: hello}}")),
		acc("domainmapping to a Route with tls", dm("{name: route.example.com}", "{ref: {apiVersion: serving.knative.dev/v1, kind: Route, name: hello}, tls: {secretName: cert}}")),
		acc("domainmapping to a Kubernetes Service", dm("{name: k8s.example.com}", "{ref: {apiVersion: v1, kind: Service, name: hello}}")),
		acc("domainmapping of a long domain", dm("{name: "+strings.Repeat("a", 63)+".example.com}", dmRef)),
	}
}

func domainMappingUpdateCases() []admissionCase {
	plain := func(name string) string { return dm("{name: "+name+", annotations: {example.com/note: x}}", dmRef) }
	upd := func(name, obj string, update func(*unstructured.Unstructured), reject bool, want ...string) admissionCase {
		return admissionCase{name: name, obj: obj, update: update, reject: reject, want: want}
	}
	return []admissionCase{
		upd("domainmapping creator changed", plain("creator.example.com"), setAnnotation("serving.knative.dev/creator", "mallory"), true, "metadata.annotations.serving.knative.dev/creator"),
		upd("domainmapping lastModifier changed without a spec change", plain("modifier.example.com"), setAnnotation("serving.knative.dev/lastModifier", "mallory"), true, "metadata.annotations.serving.knative.dev/lastModifier"),
		upd("domainmapping ref and lastModifier changed", plain("retarget.example.com"), both(setField("other", "spec", "ref", "name"), setAnnotation("serving.knative.dev/lastModifier", "mallory")), false),
	}
}
