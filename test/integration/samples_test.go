package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	"github.com/ferry-serving/ferry/internal/explain"
)

// TestSamples applies each Knative-compatibility sample (config/samples/knative) as
// `kubectl apply --server-side` would — server-side apply, field manager kubectl,
// strict field validation — each in a namespace of its own, and waits for every
// Service to be Ready and, where its Route is public, routed by the gateway (its
// tag hosts too), and every DomainMapping Ready and its domain routed (its claim
// created first, as an administrator would). A file with several documents of one
// Service is applied one document at a time, each Ready before the next, as the docs'
// steps are.
func TestSamples(t *testing.T) {
	files, err := filepath.Glob("../../config/samples/knative/*.yaml")
	if err != nil || len(files) < 7 {
		t.Fatalf("want at least 7 samples, found %v (%v)", files, err)
	}
	gatewayURL := startFerryAndGateway(t, true)
	dyn, err := dynamic.NewForConfig(testConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			ns := testNamespace(t)
			dumpOnFailure(t, testClient, ns)
			docs := readManifests(t, f)
			for i, obj := range docs {
				obj.SetNamespace(ns)
				if obj.GetKind() == "DomainMapping" {
					// As an administrator would: Ferry runs here without
					// autocreate-cluster-domain-claims, as Knative does by default.
					claimDomain(t, ns, obj.GetName())
				}
				if err := serverSideApply(dyn, obj); err != nil {
					t.Fatalf("document %d, %s %s: refused: %v", i+1, obj.GetKind(), obj.GetName(), err)
				}
				last := i == len(docs)-1 || docs[i+1].GetKind() != obj.GetKind() || docs[i+1].GetName() != obj.GetName()
				if obj.GetKind() == "Service" && !last {
					waitSampleRouted(t, ns, obj.GetName(), gatewayURL)
				}
			}
			for _, obj := range docs {
				switch obj.GetKind() {
				case "Service":
					waitSampleRouted(t, ns, obj.GetName(), gatewayURL)
				case "DomainMapping":
					waitSampleDomainMapped(t, ns, obj.GetName(), gatewayURL)
				}
			}
		})
	}
}

// serverSideApply is `kubectl apply --server-side -f` for one object.
func serverSideApply(dyn dynamic.Interface, obj *unstructured.Unstructured) error {
	gvk := obj.GroupVersionKind()
	mapping, err := testClient.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return err
	}
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	force := false
	_, err = dyn.Resource(mapping.Resource).Namespace(obj.GetNamespace()).Patch(context.Background(), obj.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: "kubectl", FieldValidation: "Strict", Force: &force})
	return err
}

// waitSampleRouted waits until the Service is Ready for its latest generation and,
// unless its Route is cluster-local, until the gateway routes its host and each tag's
// host; a failure shows `ferry explain`'s report.
func waitSampleRouted(t *testing.T, ns, name, gatewayURL string) {
	t.Helper()
	target := explain.Target{Kind: explain.KindService, Namespace: ns, Name: name}
	var last explain.Report
	eventually(t, readyTimeout, func() (bool, string) {
		r, err := explain.Check(context.Background(), testClient, target, gatewayURL)
		if err != nil {
			return false, err.Error()
		}
		last = r
		if !r.OK {
			return false, "ferry explain:\n" + r.String()
		}
		svc := &v1.Service{}
		if !get(t, testClient, ns, name, svc) {
			return false, "the Service is gone"
		}
		for _, tt := range svc.Status.Traffic {
			if tt.URL == "" || strings.HasSuffix(explain.HostOf(tt.URL), ".svc.cluster.local") {
				continue
			}
			if routed, answer := explain.Probe(context.Background(), gwClient, gatewayURL, explain.HostOf(tt.URL)); !routed {
				return false, fmt.Sprintf("tag %s (%s) not routed: %s", tt.Tag, tt.URL, answer)
			}
		}
		return true, ""
	})
	t.Logf("ksvc %s: %s", name, last.Headline)
}

// claimDomain creates the ClusterDomainClaim that lets namespace ns map domain, and
// deletes it when the test ends.
func claimDomain(t *testing.T, ns, domain string) {
	t.Helper()
	deleteClaimAtEnd(t, domain)
	claim := &netv1alpha1.ClusterDomainClaim{ObjectMeta: metav1.ObjectMeta{Name: domain}, Spec: netv1alpha1.ClusterDomainClaimSpec{Namespace: ns}}
	if err := testClient.Create(context.Background(), claim); err != nil {
		t.Fatal(err)
	}
}

// waitSampleDomainMapped waits until the DomainMapping is Ready and the gateway
// serves its domain.
func waitSampleDomainMapped(t *testing.T, ns, name, gatewayURL string) {
	t.Helper()
	dm := &v1beta1.DomainMapping{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	waitDomainMapping(t, dm, v1beta1.DomainMappingConditionReady, corev1.ConditionTrue, "")
	eventually(t, readyTimeout, func() (bool, string) {
		routed, answer := explain.Probe(context.Background(), gwClient, gatewayURL, name)
		return routed, fmt.Sprintf("domain %s not routed: %s", name, answer)
	})
}
