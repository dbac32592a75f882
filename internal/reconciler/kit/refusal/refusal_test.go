package refusal

import (
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/ferry-serving/ferry/api/duck"
)

func TestWritesBackOff(t *testing.T) {
	now := time.Unix(0, 0)
	w := New(2*time.Second, 10*time.Second)
	w.now = func() time.Time { return now }
	quota := apierrors.NewForbidden(schema.GroupResource{Group: "apps", Resource: "deployments"}, "d",
		errors.New("exceeded quota: q, requested: count/deployments.apps=1, used: count/deployments.apps=0, limited: count/deployments.apps=0"))
	calls := 0
	refuse := func() error { calls++; return quota }
	do := func() error { return w.Do("deployment d v1", "create", "Deployment", "d", refuse) }

	// The first refusal is tried and reported with the initial back-off.
	err := do()
	r, ok := As(err)
	if !ok || calls != 1 || r.RetryAfter != 2*time.Second || r.Reason() != duck.ReasonCreationFailed {
		t.Fatalf("first: %v (calls %d)", err, calls)
	}
	if want := `failed to create Deployment "d": deployments.apps "d" is forbidden: exceeded quota`; len(r.Error()) < len(want) || r.Error()[:len(want)] != want {
		t.Errorf("message = %q", r.Error())
	}
	// Within the back-off the same write is not sent again.
	now = now.Add(time.Second)
	if r, ok := As(do()); !ok || calls != 1 || r.RetryAfter != time.Second {
		t.Fatalf("within back-off: calls %d, %+v", calls, r)
	}
	// After it, it is tried again and the back-off doubles, up to the cap.
	for i, want := range []time.Duration{4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second} {
		now = now.Add(time.Hour)
		r, _ := As(do())
		if calls != i+2 || r.RetryAfter != want {
			t.Fatalf("retry %d: calls %d, back-off %v, want %v", i, calls, r.RetryAfter, want)
		}
	}
	// A different write (the owner's spec changed) is tried at once.
	if err := w.Do("deployment d v2", "create", "Deployment", "d", func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	// Success clears the refusal: the next refusal starts from the initial back-off.
	now = now.Add(time.Hour)
	if err := w.Do("deployment d v1", "create", "Deployment", "d", func() error { return nil }); err != nil {
		t.Fatal(err)
	}
	if r, _ := As(do()); r.RetryAfter != 2*time.Second {
		t.Errorf("after success: back-off %v", r.RetryAfter)
	}
}

func TestTransientErrorsAreNotRefusals(t *testing.T) {
	w := New(time.Second, time.Minute)
	for _, err := range []error{
		apierrors.NewConflict(schema.GroupResource{Resource: "services"}, "s", errors.New("changed")),
		apierrors.NewServerTimeout(schema.GroupResource{Resource: "services"}, "create", 1),
		apierrors.NewInternalError(errors.New("etcd down")),
		errors.New("connection refused"),
		func() error {
			err := apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "s", errors.New("namespace ns is being terminated"))
			err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
			return err
		}(),
	} {
		calls := 0
		for range 3 {
			got := w.Do("id", "create", "Service", "s", func() error { calls++; return err })
			if _, ok := As(got); ok || got != err {
				t.Errorf("%v came back as %v", err, got)
			}
		}
		if calls != 3 {
			t.Errorf("%v: tried %d times, want every time", err, calls)
		}
	}
	for _, err := range []error{
		apierrors.NewInvalid(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "d", nil),
		apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, "s", errors.New("denied by policy")),
		apierrors.NewBadRequest("admission webhook denied the request"),
	} {
		if !IsRefusal(err) {
			t.Errorf("%v is a refusal", err)
		}
	}
}
