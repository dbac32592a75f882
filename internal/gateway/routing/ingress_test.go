package routing

import (
	"context"
	"testing"

	"github.com/ferry-serving/ferry/api/duck"
	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestMarkStatus(t *testing.T) {
	services := backends.NewRegistry()
	good := compileIngress(gatewaytest.SimpleIngress("a", 0, "a-1", "a.example.com"), services)

	var status v1alpha1.IngressStatus
	markStatus(&status, good, nil, "pub.example", "priv.example", true)
	if !v1alpha1.IngressConditions.Manage(&status.Status).IsHappy() || status.ObservedGeneration != 1 ||
		status.PublicLoadBalancer.Ingress[0].Domain != "pub.example" || status.PrivateLoadBalancer.Ingress[0].Domain != "priv.example" {
		t.Fatalf("status %+v", status)
	}
	again := *status.DeepCopy()
	markStatus(&again, good, nil, "pub.example", "priv.example", true)
	if !equality.Semantic.DeepEqual(again, status) {
		t.Error("marking the same outcome twice changed the status")
	}

	markStatus(&status, good, []hostConflict{{host: "a.example.com", owner: gatewaytest.Key("old")}, {host: "b.example.com", owner: gatewaytest.Key("old")}}, "pub.example", "priv.example", true)
	ready := status.GetCondition(duck.ConditionReady)
	if ready.Status != corev1.ConditionFalse || ready.Reason != reasonHostConflict ||
		ready.Message != `host "a.example.com" is served by ingress ns/old, which is older (and 1 more hosts are taken)` {
		t.Errorf("Ready %+v", ready)
	}
	if status.PublicLoadBalancer != nil {
		t.Error("a conflicting ingress advertises a load balancer")
	}

	bad := compileIngress(gatewaytest.NewIngress("b", 0, gatewaytest.ExternalRule([]string{"b.example.com"}, gatewaytest.Path("", gatewaytest.SplitTo("b-1", 60), gatewaytest.SplitTo("b-2", 60)))), services)
	markStatus(&status, bad, nil, "pub.example", "priv.example", true)
	if c := status.GetCondition(v1alpha1.IngressConditionNetworkConfigured); c.Status != corev1.ConditionFalse || c.Reason != reasonInvalidSplit {
		t.Errorf("NetworkConfigured %+v", c)
	}
}

func TestIngressReconciler(t *testing.T) {
	ctx := context.Background()
	young := gatewaytest.SimpleIngress("young", 10, "young-1", "shared.example.com")
	old := gatewaytest.SimpleIngress("old", 20, "old-1", "shared.example.com")
	foreign := gatewaytest.SimpleIngress("foreign", 30, "foreign-1", "shared.example.com")
	foreign.Annotations = map[string]string{v1alpha1.IngressClassAnnotationKey: "istio.ingress.networking.knative.dev"}
	statusWrites := 0
	c := fake.NewClientBuilder().WithScheme(gatewaytest.NewScheme(t)).
		WithObjects(young, old, foreign).WithStatusSubresource(&v1alpha1.Ingress{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(ctx context.Context, c client.Client, sub string, o client.Object, opts ...client.SubResourceUpdateOption) error {
			statusWrites++
			return c.SubResource(sub).Update(ctx, o, opts...)
		}}).Build()
	services := backends.NewRegistry()
	r := &ingressReconciler{client: c, apiReader: c, services: services, programmer: NewProgrammer(services),
		requeue: make(chan event.GenericEvent, 10), publicDomain: "pub", privateDomain: "priv"}
	reconcileKey := func(name string) {
		t.Helper()
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: gatewaytest.Key(name)}); err != nil {
			t.Fatal(err)
		}
	}
	readyOf := func(name string) *duck.Condition {
		ing := &v1alpha1.Ingress{}
		if err := c.Get(ctx, gatewaytest.Key(name), ing); err != nil {
			t.Fatal(err)
		}
		return ing.Status.GetCondition(duck.ConditionReady)
	}

	reconcileKey("foreign")
	if r.programmer.compiled(gatewaytest.Key("foreign")) != nil || readyOf("foreign") != nil {
		t.Error("an ingress of another class was programmed")
	}
	reconcileKey("young")
	if !readyOf("young").IsTrue() || servedBy(r.programmer, "shared.example.com") != "young-1" {
		t.Fatalf("young: Ready %+v", readyOf("young"))
	}
	reconcileKey("old")
	if !readyOf("old").IsTrue() || servedBy(r.programmer, "shared.example.com") != "old-1" {
		t.Fatalf("old: Ready %+v", readyOf("old"))
	}
	// Programming old took young's host: young is fed back to be reconciled.
	select {
	case ev := <-r.requeue:
		if ev.Object.GetName() != "young" {
			t.Fatalf("requeued %s", ev.Object.GetName())
		}
	default:
		t.Fatal("young was not requeued")
	}
	reconcileKey("young")
	if c := readyOf("young"); c.Status != corev1.ConditionFalse || c.Reason != reasonHostConflict {
		t.Errorf("young after losing its host: Ready %+v", c)
	}

	// Nothing changed: no write.
	writes := statusWrites
	reconcileKey("young")
	reconcileKey("old")
	if statusWrites != writes {
		t.Errorf("%d status writes for unchanged ingresses", statusWrites-writes)
	}

	// Deleting old hands the host back and requeues young.
	if err := c.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	reconcileKey("old")
	if ev := <-r.requeue; ev.Object.GetName() != "young" {
		t.Fatalf("requeued %s", ev.Object.GetName())
	}
	reconcileKey("young")
	if !readyOf("young").IsTrue() || servedBy(r.programmer, "shared.example.com") != "young-1" {
		t.Errorf("young after old's deletion: Ready %+v", readyOf("young"))
	}
}

func TestUpdateStatusStopsAtANewerGeneration(t *testing.T) {
	ctx := context.Background()
	ing := gatewaytest.SimpleIngress("a", 0, "a-1", "a.example.com")
	newer := ing.DeepCopy()
	newer.Generation = 2
	scheme := gatewaytest.NewScheme(t)
	conflicts := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(ing).WithStatusSubresource(&v1alpha1.Ingress{}).
		WithInterceptorFuncs(interceptor.Funcs{SubResourceUpdate: func(context.Context, client.Client, string, client.Object, ...client.SubResourceUpdateOption) error {
			conflicts++
			return apierrors.NewConflict(v1alpha1.SchemeGroupVersion.WithResource("ingresses").GroupResource(), "a", nil)
		}}).Build()
	// The API server already holds generation 2, which the cache has not seen yet.
	apiServer := fake.NewClientBuilder().WithScheme(scheme).WithObjects(newer).Build()
	services := backends.NewRegistry()
	r := &ingressReconciler{client: c, apiReader: apiServer, services: services, programmer: NewProgrammer(services)}

	ci := compileIngress(ing, services)
	if err := r.updateStatus(ctx, ing, ci, nil, true); err != nil {
		t.Fatal(err)
	}
	if conflicts != 1 {
		t.Errorf("%d attempts; want one, then none for a generation it did not program", conflicts)
	}
}
