package admission

import (
	"context"
	"testing"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// Register creates both configurations, puts its webhooks and labels back on ones
// that drifted, and updates one that another replica created first.
func TestRegister(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset()
	s := &Server{opts: Options{InCluster: true, Namespace: "ferry-system"}, client: client}
	empty := []byte(nil)
	s.ca.Store(&empty)
	api := client.AdmissionregistrationV1()
	if err := s.Register(ctx); err != nil {
		t.Fatal(err)
	}
	m, err := api.MutatingWebhookConfigurations().Get(ctx, MutatingWebhookName, metav1.GetOptions{})
	if err != nil || len(m.Webhooks) != 1 {
		t.Fatalf("mutating after create: %v, %+v", err, m)
	}

	m.Webhooks, m.Labels = nil, map[string]string{"drifted": "yes"}
	if _, err := api.MutatingWebhookConfigurations().Update(ctx, m, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := api.ValidatingWebhookConfigurations().Delete(ctx, ValidatingWebhookName, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The validating one is gone when Register reads it, and there again (another
	// replica's) when it creates it.
	raced := false
	client.PrependReactor("create", "validatingwebhookconfigurations", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if raced {
			return false, nil, nil
		}
		raced = true
		theirs := a.(k8stesting.CreateAction).GetObject().(*admissionregv1.ValidatingWebhookConfiguration).DeepCopy()
		theirs.Webhooks = nil
		if err := client.Tracker().Add(theirs); err != nil {
			t.Fatal(err)
		}
		return true, nil, apierrors.NewAlreadyExists(admissionregv1.Resource("validatingwebhookconfigurations"), theirs.Name)
	})
	if err := s.Register(ctx); err != nil {
		t.Fatal(err)
	}
	m, err = api.MutatingWebhookConfigurations().Get(ctx, MutatingWebhookName, metav1.GetOptions{})
	if err != nil || len(m.Webhooks) != 1 || m.Labels["drifted"] != "" || m.Labels["app.kubernetes.io/name"] != "ferry" {
		t.Errorf("mutating after update: %v, %+v", err, m)
	}
	v, err := api.ValidatingWebhookConfigurations().Get(ctx, ValidatingWebhookName, metav1.GetOptions{})
	if !raced || err != nil || len(v.Webhooks) != 2 {
		t.Errorf("validating after the race (raced %v): %v, %+v", raced, err, v)
	}
}
