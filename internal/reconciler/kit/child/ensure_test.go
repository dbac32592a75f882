package child

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/created"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
)

// owner is any object that controls ConfigMaps in these tests.
var owner = &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "hello", UID: "route-uid"}}

func configMap(data string, controlled bool) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "hello",
		Labels: map[string]string{"ours": "1"}}, Data: map[string]string{"k": data}}
	if controlled {
		cm.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, v1.SchemeGroupVersion.WithKind("Route"))}
	}
	return cm
}

func updateData(desired, have *corev1.ConfigMap) bool {
	labels := MergeLabels(desired, have)
	return Set(&have.Data, desired.Data) || labels
}

func TestEnsure(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "hello", errors.New("quota exceeded"))
	for _, tc := range []struct {
		name       string
		existing   *corev1.ConfigMap
		writeErr   error
		wantWrites []string
		wantData   string
		wantErr    func(error) bool
	}{
		{name: "missing: created", wantWrites: []string{"create"}, wantData: "new"},
		{name: "same: no write", existing: configMap("new", true), wantData: "new"},
		{name: "drifted: updated", existing: configMap("old", true), wantWrites: []string{"update"}, wantData: "new"},
		{name: "another owner's: not touched", existing: configMap("old", false),
			wantErr: func(err error) bool {
				var e *NotOwnedError
				return errors.As(err, &e) && err.Error() == `There is an existing ConfigMap "hello" that we do not own.`
			}},
		{name: "refused create", writeErr: forbidden, wantWrites: []string{"create"},
			wantErr: func(err error) bool {
				e, ok := refusal.As(err)
				return ok && e.Reason() == duck.ReasonCreationFailed && e.RetryAfter == time.Second
			}},
		{name: "refused update", existing: configMap("old", true), writeErr: forbidden, wantWrites: []string{"update"},
			wantErr: func(err error) bool {
				e, ok := refusal.As(err)
				return ok && e.Reason() == duck.ReasonUpdateFailed
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var writes []string
			b := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithInterceptorFuncs(interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.CreateOption) error {
					writes = append(writes, "create")
					if tc.writeErr != nil {
						return tc.writeErr
					}
					return c.Create(ctx, o, opts...)
				},
				Update: func(ctx context.Context, c client.WithWatch, o client.Object, opts ...client.UpdateOption) error {
					writes = append(writes, "update")
					if tc.writeErr != nil {
						return tc.writeErr
					}
					return c.Update(ctx, o, opts...)
				},
			})
			if tc.existing != nil {
				b = b.WithObjects(tc.existing)
			}
			c := b.Build()
			w := Writer{Client: c, Children: created.New(c), Refused: refusal.New(time.Second, time.Minute)}

			got, err := Ensure(context.Background(), w, owner, "ConfigMap", configMap("new", true), updateData)
			if tc.wantErr != nil {
				if !tc.wantErr(err) {
					t.Errorf("Ensure error = %v", err)
				}
			} else if err != nil {
				t.Fatalf("Ensure: %v", err)
			}
			if len(writes) != len(tc.wantWrites) || (len(writes) > 0 && writes[0] != tc.wantWrites[0]) {
				t.Errorf("writes = %v, want %v", writes, tc.wantWrites)
			}
			if tc.wantData == "" {
				return
			}
			if got.Data["k"] != tc.wantData {
				t.Errorf("returned child has %v, want k=%s", got.Data, tc.wantData)
			}
			stored := &corev1.ConfigMap{}
			if err := c.Get(context.Background(), client.ObjectKey{Namespace: "ns", Name: "hello"}, stored); err != nil || stored.Data["k"] != tc.wantData {
				t.Errorf("stored child = %v, %v; want k=%s", stored.Data, err, tc.wantData)
			}
		})
	}
}

func TestOutcome(t *testing.T) {
	s := &duck.Status{}
	m := v1.RouteConditions.Manage(s)
	m.InitializeConditions()
	var o Outcome
	if o.Mark(m, v1.RouteConditionIngressReady, errors.New("conflict")) {
		t.Error("an error to retry counted as a child the owner cannot have")
	}
	if !o.Mark(m, v1.RouteConditionIngressReady, &NotOwnedError{Kind: "Ingress", Name: "hello"}) {
		t.Fatal("NotOwned not marked")
	}
	if c := s.GetCondition(v1.RouteConditionIngressReady); !c.IsFalse() || c.Reason != duck.ReasonNotOwned {
		t.Errorf("IngressReady = %+v, want False NotOwned", c)
	}
	refused := &refusal.Error{Verb: "create", Kind: "Ingress", Name: "hello", Err: errors.New("denied"), RetryAfter: 4 * time.Second}
	if !o.Mark(m, v1.RouteConditionIngressReady, refused) {
		t.Fatal("refusal not marked")
	}
	if c := s.GetCondition(v1.RouteConditionIngressReady); c.Reason != duck.ReasonCreationFailed || c.Message != refused.Error() {
		t.Errorf("IngressReady = %+v, want CreationFailed with the API server's message", c)
	}
	if res, _ := o.Result(ctrlResult(10*time.Second), nil); res.RequeueAfter != 4*time.Second {
		t.Errorf("RequeueAfter = %v, want the refusal's back-off 4s", res.RequeueAfter)
	}
}

func ctrlResult(after time.Duration) reconcile.Result { return reconcile.Result{RequeueAfter: after} }
