package stats

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Gateways and controllers upgrade one at a time: a report without pods (an older
// gateway's) decodes with none, and one with pods keeps them.
func TestReportPodsAreOptional(t *testing.T) {
	var old Report
	if err := json.Unmarshal([]byte(`{"source":"gw-0","time":"2026-01-02T03:04:05Z","period":1000000000,
		"stats":[{"namespace":"ns","revision":"r-1","averageConcurrency":2.5,"requests":7}]}`), &old); err != nil {
		t.Fatal(err)
	}
	want := Report{Source: "gw-0", Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), Period: time.Second,
		Stats: []Stat{{Namespace: "ns", Revision: "r-1", AverageConcurrency: 2.5, Requests: 7}}}
	if !reflect.DeepEqual(old, want) {
		t.Errorf("an older gateway's report decodes as %+v", old)
	}
	if b, _ := json.Marshal(want); strings.Contains(string(b), "pods") {
		t.Errorf("a Stat without pods encodes them: %s", b)
	}

	want.Stats[0].Pods = []PodStat{{Name: "r-1-deployment-abc", AverageConcurrency: 1.5, Requests: 4}, {Name: "r-1-deployment-def"}}
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var got Report
	if err := json.Unmarshal(b, &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("%s decodes as %+v (%v)", b, got, err)
	}
}
