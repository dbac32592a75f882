package kmeta

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestContains(t *testing.T) {
	have := map[string]string{"a": "1", "b": "2"}
	for _, tc := range []struct {
		want map[string]string
		ok   bool
	}{
		{nil, true},
		{map[string]string{"a": "1"}, true},
		{map[string]string{"a": "2"}, false},
		{map[string]string{"c": ""}, false},
	} {
		if got := Contains(have, tc.want); got != tc.ok {
			t.Errorf("Contains(%v, %v) = %v, want %v", have, tc.want, got, tc.ok)
		}
	}
}

func TestUnionKeepsOthersKeys(t *testing.T) {
	have := map[string]string{"kubectl": "x", "ours": "old"}
	got := Union(have, map[string]string{"ours": "new"})
	if want := map[string]string{"kubectl": "x", "ours": "new"}; !reflect.DeepEqual(got, want) {
		t.Errorf("Union = %v, want %v", got, want)
	}
	if have["ours"] != "old" {
		t.Error("Union changed its input")
	}
}

func TestWithoutLastApplied(t *testing.T) {
	if got := WithoutLastApplied(map[string]string{corev1.LastAppliedConfigAnnotation: "{}"}); len(got) != 0 {
		t.Errorf("got %v, want nothing", got)
	}
	if got := WithoutLastApplied(map[string]string{"a": "1", corev1.LastAppliedConfigAnnotation: "{}"}); !reflect.DeepEqual(got, map[string]string{"a": "1"}) {
		t.Errorf("got %v", got)
	}
	if got := WithoutLastApplied(nil); got != nil {
		t.Errorf("got %v, want nil", got)
	}
}
