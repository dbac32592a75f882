package routing

import (
	"context"
	"testing"

	"github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/ferry-serving/ferry/internal/gateway/backends"
	"github.com/ferry-serving/ferry/internal/gateway/gatewaytest"
)

// A replica is warm (Ready) once every KIngress of its class it found is programmed,
// and stays so when more arrive.
func TestWarm(t *testing.T) {
	ctx := context.Background()
	a := gatewaytest.SimpleIngress("a", 10, "a-1", "a.example.com")
	b := gatewaytest.SimpleIngress("b", 20, "b-1", "b.example.com")
	foreign := gatewaytest.SimpleIngress("foreign", 30, "foreign-1", "foreign.example.com")
	foreign.Annotations = map[string]string{v1alpha1.IngressClassAnnotationKey: "istio.ingress.networking.knative.dev"}
	c := fake.NewClientBuilder().WithScheme(gatewaytest.NewScheme(t)).WithObjects(a, b, foreign).Build()
	p := NewProgrammer(backends.NewRegistry())

	if err := p.Warm(ctx, c); err == nil {
		t.Fatal("warm before anything is programmed")
	}
	if err := p.Apply(a); err != nil {
		t.Fatal(err)
	}
	if err := p.Warm(ctx, c); err == nil {
		t.Fatal("warm with b not programmed")
	}
	if err := p.Apply(b); err != nil {
		t.Fatal(err)
	}
	// b moved on since it was programmed: a request here would get its old Revision
	// while the others serve the new one.
	moved := b.DeepCopy()
	moved.Spec.Rules[0].Hosts = []string{"b.example.com", "b.example.org"}
	moved.Generation++ // as the API server does; the fake client does not
	if err := c.Update(ctx, moved); err != nil {
		t.Fatal(err)
	}
	if err := p.Warm(ctx, c); err == nil {
		t.Fatalf("warm serving b at generation %d of %d", b.Generation, moved.Generation)
	}
	if err := p.Apply(moved); err != nil {
		t.Fatal(err)
	}
	if err := p.Warm(ctx, c); err != nil {
		t.Fatalf("not warm with every ingress of its class programmed: %v", err)
	}
	if err := c.Create(ctx, gatewaytest.SimpleIngress("late", 40, "late-1", "late.example.com")); err != nil {
		t.Fatal(err)
	}
	if err := p.Warm(ctx, c); err != nil {
		t.Fatalf("a new KIngress made a warm replica unready: %v", err)
	}
}
