package observe

import (
	"context"
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

func scheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := v1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestObject(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "hello"}
	live := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "hello"}}
	boom := errors.New("boom")

	for _, tc := range []struct {
		name       string
		objs       []client.Object
		getErr     error
		deleting   bool
		wantOK     bool
		wantErr    error
		wantForget bool
	}{
		{name: "live", objs: []client.Object{live}, wantOK: true},
		{name: "gone", wantForget: true},
		{name: "being deleted", objs: []client.Object{live}, deleting: true, wantForget: true},
		{name: "read fails", getErr: boom, wantErr: boom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(tc.objs...).
				WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, k client.ObjectKey, o client.Object, opts ...client.GetOption) error {
					if tc.getErr != nil {
						return tc.getErr
					}
					err := c.Get(ctx, k, o, opts...)
					if tc.deleting {
						// Another owner's finalizer holds it (the fake client keeps no
						// deletion timestamps of its own).
						o.SetDeletionTimestamp(&metav1.Time{})
					}
					return err
				}}).Build()
			var forgot []types.NamespacedName
			ok, err := Object(context.Background(), c, key, &v1.Service{}, func(k types.NamespacedName) { forgot = append(forgot, k) })
			if ok != tc.wantOK || !errors.Is(err, tc.wantErr) {
				t.Errorf("Object = %v, %v; want %v, %v", ok, err, tc.wantOK, tc.wantErr)
			}
			if got := len(forgot) == 1 && forgot[0] == key; got != tc.wantForget {
				t.Errorf("forgot %v, want forgetting: %v", forgot, tc.wantForget)
			}
		})
	}
}
