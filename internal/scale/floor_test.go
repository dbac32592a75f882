package scale

import (
	"slices"
	"strings"
	"testing"
)

func TestPlanFloor(t *testing.T) {
	writes := Counts{
		{Resource: "pods", Verb: "POST"}:                                3,
		{Resource: "pods", Subresource: "binding", Verb: "POST"}:        3, // an update of the pod
		{Resource: "pods", Subresource: "status", Verb: "PATCH"}:        4,
		{Group: "coordination.k8s.io", Resource: "leases", Verb: "PUT"}: 2, // never created: one pre-created object
		{Resource: "events", Verb: "POST"}:                              1,
		{Resource: "configmaps", Verb: "DELETE"}:                        2, // deleted, not created: pre-created
	}
	sizes := map[string]int{"pods": 4000, "events": 700}
	plan := PlanFloor(writes, func(res string) int {
		if s, ok := sizes[res]; ok {
			return s
		}
		return 1000
	})
	type obj struct {
		res       string
		size      int
		precreate bool
		ops       string
	}
	var got []obj
	for _, o := range plan {
		got = append(got, obj{o.Resource, o.Size, o.Precreate, strings.Join(o.Ops, " ")})
	}
	want := []obj{
		{"configmaps", 1000, true, "DELETE"},
		{"configmaps", 1000, true, "DELETE"},
		{"events", 700, false, "POST"},
		{"leases.coordination.k8s.io", 1000, true, "PUT PUT"},
		{"pods", 4000, false, "POST PUT PATCH PATCH"},
		{"pods", 4000, false, "POST PUT PATCH"},
		{"pods", 4000, false, "POST PUT PATCH"},
	}
	if !slices.Equal(got, want) {
		t.Errorf("plan\n got  %+v\n want %+v", got, want)
	}
	var total int64
	for _, o := range plan {
		total += int64(len(o.Ops))
	}
	if total != writes.Total() {
		t.Errorf("the plan has %d writes, the run %d", total, writes.Total())
	}
}
