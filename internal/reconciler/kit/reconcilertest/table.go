package reconcilertest

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/api/duck"
)

// Case is one row of a table: the API server's objects, one key reconciled, and all
// that must come of it.
type Case struct {
	Name string
	// Key is the object reconciled.
	Key types.NamespacedName
	// Objects are on the API server (and in the cache) before the reconcile.
	Objects []client.Object
	// Failures make writes fail.
	Failures []Failure
	// Before, if set, runs after the reconciler is built and before it reconciles.
	Before func(t *testing.T, env *Env)

	// WantWrites are all the writes the reconcile makes, as Write.String gives them,
	// in any order. Nil means none.
	WantWrites []string
	// WantEvents are all the Events it records, as Event.String gives them, in order.
	WantEvents []string
	// WantResult is what Reconcile returns.
	WantResult reconcile.Result
	// WantErr, if set, must be contained in Reconcile's error; else it must be nil.
	WantErr string
	// Check, if set, asserts more after the reconcile: the written objects, the status.
	// It may reconcile again (Env.Reconcile).
	Check func(t *testing.T, env *Env)
}

// Run runs each case in a subtest with a new Env and a reconciler that build makes for
// it.
func Run(t *testing.T, cases []Case, build func(env *Env) reconcile.Reconciler) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			env := New(t, tc.Objects, tc.Failures...)
			env.reconciler, env.key = build(env), tc.Key
			if tc.Before != nil {
				tc.Before(t, env)
			}
			res, err := env.Reconcile()
			switch {
			case tc.WantErr == "" && err != nil:
				t.Errorf("Reconcile: %v", err)
			case tc.WantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.WantErr)):
				t.Errorf("Reconcile error = %v, want one containing %q", err, tc.WantErr)
			}
			if res != tc.WantResult {
				t.Errorf("Reconcile result = %+v, want %+v", res, tc.WantResult)
			}
			want := slices.Clone(tc.WantWrites)
			slices.Sort(want)
			if diff := cmp.Diff(want, env.WriteList(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.WantEvents, env.Events.List(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if tc.Check != nil && !t.Failed() {
				tc.Check(t, env)
			}
		})
	}
}

// Reconcile reconciles the case's key again with the case's reconciler.
func (e *Env) Reconcile() (reconcile.Result, error) {
	return e.reconciler.Reconcile(context.Background(), reconcile.Request{NamespacedName: e.key})
}

// Cond is a condition as tables state it: type, status, reason and message.
func Cond(t duck.ConditionType, status corev1.ConditionStatus, reason, message string) duck.Condition {
	return duck.Condition{Type: t, Status: status, Reason: reason, Message: message}
}

// True is Cond with status True and no reason.
func True(t duck.ConditionType) duck.Condition { return Cond(t, corev1.ConditionTrue, "", "") }

// Unknown is Cond with status Unknown.
func Unknown(t duck.ConditionType, reason, message string) duck.Condition {
	return Cond(t, corev1.ConditionUnknown, reason, message)
}

// False is Cond with status False.
func False(t duck.ConditionType, reason, message string) duck.Condition {
	return Cond(t, corev1.ConditionFalse, reason, message)
}

// CheckConditions compares conditions by type, status, reason and message: the
// transition times come from the wall clock (the reconcilers take no clock), and the
// severity follows from the type.
func CheckConditions(t testing.TB, what string, got []duck.Condition, want ...duck.Condition) {
	t.Helper()
	type c struct{ Type, Status, Reason, Message string }
	simple := func(cs []duck.Condition) []c {
		out := make([]c, 0, len(cs))
		for _, x := range cs {
			out = append(out, c{string(x.Type), string(x.Status), x.Reason, x.Message})
		}
		slices.SortFunc(out, func(a, b c) int {
			switch {
			case a.Type < b.Type:
				return -1
			case a.Type > b.Type:
				return 1
			}
			return 0
		})
		return out
	}
	if diff := cmp.Diff(simple(want), simple(got)); diff != "" {
		t.Errorf("%s conditions (-want +got):\n%s", what, diff)
	}
}

// Must fails the test if err is not nil.
func Must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Key is a namespaced name.
func Key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}
