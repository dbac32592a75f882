package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler"
)

// TestTagPlaceholderServices: each traffic tag of a Route gets its Kubernetes Service
// <tag>-<route>, owned by the Route, as Knative's do; labelling one of them
// networking.knative.dev/visibility=cluster-local makes that tag private (its status URL
// the in-cluster one, its host no longer answered by the external listener, still by
// the cluster-local one) while the other tag stays public, and the reconciler keeps the
// user's label; taking the label off makes it public again; removing the tag deletes its
// Service.
func TestTagPlaceholderServices(t *testing.T) {
	t.Parallel()
	ns := testNamespace(t)
	gw := startReconcilersAndGateway(t, reconciler.Options{}, true, ns)
	dumpOnFailure(t, testClient, ns)
	ctx := context.Background()
	external, local := gw.ExternalAddr(), gw.LocalAddr()

	svc := ksvc(ns, "tagged", "ferry.test/tagged")
	if err := testClient.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, testClient, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)
	updateService(t, testClient, ns, "tagged", func(s *v1.Service) {
		s.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "V", Value: "2"}}
		s.Spec.Traffic = []v1.TrafficTarget{
			{Tag: "current", LatestRevision: ptr(true), Percent: ptr(int64(100))},
			{Tag: "old", RevisionName: "tagged-00001", Percent: ptr(int64(0))},
		}
	})
	waitCondition(t, testClient, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", readyTimeout)

	rt := &v1.Route{}
	get(t, testClient, ns, "tagged", rt)
	for _, name := range []string{"current-tagged", "old-tagged"} {
		s := &corev1.Service{}
		if !get(t, testClient, ns, name, s) {
			t.Fatalf("no Service %s for the tag", name)
		}
		if !metav1.IsControlledBy(s, rt) || s.Labels[v1.RouteLabelKey] != "tagged" || s.Spec.Type != corev1.ServiceTypeExternalName {
			t.Errorf("Service %s: owners %v, labels %v, type %s: want an ExternalName placeholder of the Route", name, s.OwnerReferences, s.Labels, s.Spec.Type)
		}
	}
	publicOld, privateOld := "old-tagged."+ns+".example.com", "old-tagged."+ns+".svc.cluster.local"
	if got := tagURL(rt, "old"); got != "http://"+publicOld {
		t.Errorf("old's URL %q, want http://%s", got, publicOld)
	}
	if got, why := revisionAnswering(t, external, publicOld, ""); got != "tagged-00001" {
		t.Errorf("%s on the external listener: answered by %q %s, want tagged-00001", publicOld, got, why)
	}

	// The user makes old private by labelling its Service.
	setVisibilityLabel(t, ns, "old-tagged", v1.VisibilityClusterLocal)
	waitTagURL(t, ns, "tagged", "old", "http://"+privateOld)
	waitRouteServing(t, ns, "tagged", func(ing *netv1alpha1.Ingress) (bool, string) {
		for _, r := range ing.Spec.Rules {
			if r.Visibility == netv1alpha1.IngressVisibilityExternalIP && strings.HasPrefix(r.Hosts[0], "old-tagged.") {
				return false, fmt.Sprintf("an external rule for %v", r.Hosts)
			}
		}
		return true, ""
	})
	if got, why := revisionAnswering(t, external, publicOld, ""); got != "" || !strings.Contains(why, "404") {
		t.Errorf("%s on the external listener once private: answered by %q %s, want 404", publicOld, got, why)
	}
	for _, host := range []string{privateOld, "old-tagged." + ns} {
		if got, why := revisionAnswering(t, local, host, ""); got != "tagged-00001" {
			t.Errorf("%s on the cluster-local listener: answered by %q %s, want tagged-00001", host, got, why)
		}
	}
	current := "current-tagged." + ns + ".example.com"
	if got, why := revisionAnswering(t, external, current, ""); got != "tagged-00002" {
		t.Errorf("%s, still public: answered by %q %s, want tagged-00002", current, got, why)
	}
	get(t, testClient, ns, "tagged", rt)
	if got := tagURL(rt, "current"); got != "http://"+current || rt.Status.URL != "http://tagged."+ns+".example.com" {
		t.Errorf("the other URLs changed: current %q, the Route's %q", got, rt.Status.URL)
	}
	// The Knative Service shows what its Route does.
	eventually(t, readyTimeout, func() (bool, string) {
		get(t, testClient, ns, "tagged", svc)
		return tagURLOf(svc.Status.Traffic, "old") == "http://"+privateOld, fmt.Sprintf("Service traffic %+v", svc.Status.Traffic)
	})
	// The reconciler, having reconciled since, left the user's label where it was.
	s := &corev1.Service{}
	if get(t, testClient, ns, "old-tagged", s); s.Labels[v1.VisibilityLabelKey] != v1.VisibilityClusterLocal || s.Labels[v1.RouteLabelKey] != "tagged" {
		t.Errorf("old-tagged's labels %v: want the user's visibility label and the Route's", s.Labels)
	}

	// Public again once the label is gone.
	setVisibilityLabel(t, ns, "old-tagged", "")
	waitTagURL(t, ns, "tagged", "old", "http://"+publicOld)
	eventually(t, readyTimeout, func() (bool, string) {
		got, why := revisionAnswering(t, external, publicOld, "")
		return got == "tagged-00001", "answered by " + got + " " + why
	})

	// A removed tag's Service goes.
	updateService(t, testClient, ns, "tagged", func(s *v1.Service) { s.Spec.Traffic = s.Spec.Traffic[:1] })
	eventually(t, readyTimeout, func() (bool, string) {
		err := testClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: "old-tagged"}, &corev1.Service{})
		return apierrors.IsNotFound(err), fmt.Sprintf("Service old-tagged: %v", err)
	})
	if !get(t, testClient, ns, "current-tagged", &corev1.Service{}) || !get(t, testClient, ns, "tagged", &corev1.Service{}) {
		t.Error("the Services of the Route and of its remaining tag went too")
	}
}

// setVisibilityLabel sets (value "": removes) the visibility label on Service name, as a user
// does with kubectl label.
func setVisibilityLabel(t *testing.T, ns, name, value string) {
	t.Helper()
	v := "null"
	if value != "" {
		v = fmt.Sprintf("%q", value)
	}
	patch := fmt.Sprintf(`{"metadata":{"labels":{%q:%s}}}`, v1.VisibilityLabelKey, v)
	s := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := testClient.Patch(context.Background(), s, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
}

// waitTagURL waits until the Route's status.traffic gives tag url.
func waitTagURL(t *testing.T, ns, name, tag, url string) {
	t.Helper()
	eventually(t, readyTimeout, func() (bool, string) {
		rt := &v1.Route{}
		get(t, testClient, ns, name, rt)
		return tagURL(rt, tag) == url, fmt.Sprintf("Route %s traffic %+v, want %s at %s", name, rt.Status.Traffic, tag, url)
	})
}

func tagURL(rt *v1.Route, tag string) string { return tagURLOf(rt.Status.Traffic, tag) }

func tagURLOf(traffic []v1.TrafficTarget, tag string) string {
	for _, t := range traffic {
		if t.Tag == tag {
			return t.URL
		}
	}
	return ""
}
