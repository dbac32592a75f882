package integration

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/internal/soak"
)

// TestSoak is `ferry soak`'s short form (make soak runs ten minutes, docs/soak.md an
// hour): two minutes of load on the fleet with a change every 15 s and each of the
// four faults struck twice, with real programs in runc, one calling another. The soak's own judgement is
// the test's: any failed request, answer from a Revision no target named, object late
// to be Ready, or crashing program not shown on its Service fails it.
func TestSoak(t *testing.T) {
	needIsolation(t)
	// Kept when the test fails, for its report.html and the processes' logs.
	dir, err := os.MkdirTemp("", "ferry-soak-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the soak's reports and logs are kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	cmd := exec.Command(ferryBinary(t), "soak", "--duration", "2m", "--cycle", "15s", "--faults", "all",
		"--program-isolation", "runc", "--report-dir", dir)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("ferry soak took %s", time.Since(start).Round(time.Second))
	if err != nil {
		t.Fatalf("ferry soak: %v\n%s", err, out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	var rep soak.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	// The run passed; it must also have done what it says.
	total := 0
	for _, ts := range rep.Targets {
		total += ts.Requests
	}
	// Nine targets and the front end that calls the private one.
	if len(rep.Targets) != 10 || total < 10000 || rep.Targets["frontend"].Verdicts["ok"] == 0 {
		t.Errorf("%d requests to %d targets, want over 10,000 to 10, some answered by the front end and its back end\n%s", total, len(rep.Targets), out)
	}
	struck := map[string]bool{}
	for _, e := range rep.Events {
		if e.Kind == "fault" && e.Err == "" {
			struck[strings.SplitN(e.What, ":", 2)[0]] = true
		}
	}
	for _, f := range soak.AllFaults {
		if !struck[string(f)] {
			t.Errorf("fault %s never struck\n%s", f, out)
		}
	}
	for _, name := range []string{"report.html", "summary.txt"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
}
