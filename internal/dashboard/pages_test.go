package dashboard

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/autoscaler"
)

func renderPage(t *testing.T, name string, data any) string {
	t.Helper()
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := pages.ExecuteTemplate(&b, name, data); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestListCount: the list says how many Services there are in good English.
func TestListCount(t *testing.T) {
	for total, want := range map[int]string{0: "0 Services.", 1: "1 Service.", 2: "2 Services."} {
		if got := renderPage(t, "list-live", listView{Total: total, Page: 1, Last: 1}); !strings.Contains(got, want) {
			t.Errorf("%d Services: the page does not say %q:\n%s", total, want, got)
		}
	}
}

// TestRevisionNumbers: before the first answer from the autoscaler the Revision's page
// says it is asking, not a row of zeros with an empty "Target ()"; then it shows the
// target and what it is of.
func TestRevisionNumbers(t *testing.T) {
	rev := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "hello-00001"}}
	got := renderPage(t, "revision-live", revisionView{Revision: rev, Ready: "True"})
	if !strings.Contains(got, "Asking the autoscaler") || strings.Contains(got, "Target (") {
		t.Errorf("with no numbers yet:\n%s", got)
	}
	sample := Sample{Numbers: autoscaler.Numbers{Metric: "concurrency", Target: 70}}
	got = renderPage(t, "revision-live", revisionView{Revision: rev, Ready: "True", Samples: []Sample{sample}, Latest: &sample})
	if !strings.Contains(got, "<th>Target (concurrency)</th><td>70.00 per pod</td>") {
		t.Errorf("with numbers:\n%s", got)
	}
}
