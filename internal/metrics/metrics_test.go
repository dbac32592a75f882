package metrics

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"github.com/ferry-serving/ferry/internal/tracker"
)

func TestTrackerSizeIsExportedWhileItsControllersRun(t *testing.T) {
	if n := testutil.CollectAndCount(trackers); n != 0 {
		t.Fatalf("%d series before any tracker runs, want none", n)
	}
	tr := tracker.New(nil, 0)
	route := types.NamespacedName{Namespace: "ns", Name: "route"}
	for _, name := range []string{"config", "rev-1"} {
		ref := tracker.Reference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: name}
		if err := tr.Track(ref, route); err != nil {
			t.Fatal(err)
		}
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { ExportTracker(ctx, tr); close(done) }()

	want := `
# HELP ferry_tracker_observers Objects (Routes) that the tracker wakes when something they read changes.
# TYPE ferry_tracker_observers gauge
ferry_tracker_observers 1
# HELP ferry_tracker_references Distinct objects and label selectors the tracker watches on behalf of observers.
# TYPE ferry_tracker_references gauge
ferry_tracker_references 2
`
	var err error
	for range 100 { // ExportTracker registers on its own goroutine
		if err = testutil.CollectAndCompare(trackers, strings.NewReader(want)); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	stop()
	<-done
	if n := testutil.CollectAndCount(trackers); n != 0 {
		t.Fatalf("%d series after the controllers stopped, want none", n)
	}
}

func TestTimeToReady(t *testing.T) {
	observe := TimeToReady("Widget")
	observe(1500 * time.Millisecond)
	observe(90 * time.Second)
	var want strings.Builder
	want.WriteString("# HELP ferry_time_to_ready_seconds " + timeToReadyHelp + "\n# TYPE ferry_time_to_ready_seconds histogram\n")
	for _, le := range []string{"0.05", "0.1", "0.25", "0.5", "1", "2", "4", "8", "15", "30", "60", "120", "300", "600", "+Inf"} {
		n := 0
		switch le {
		case "2", "4", "8", "15", "30", "60":
			n = 1
		case "120", "300", "600", "+Inf":
			n = 2
		}
		fmt.Fprintf(&want, "ferry_time_to_ready_seconds_bucket{kind=\"Widget\",le=%q} %d\n", le, n)
	}
	want.WriteString("ferry_time_to_ready_seconds_sum{kind=\"Widget\"} 91.5\nferry_time_to_ready_seconds_count{kind=\"Widget\"} 2\n")
	if err := testutil.CollectAndCompare(timeToReady, strings.NewReader(want.String())); err != nil {
		t.Fatal(err)
	}
}
