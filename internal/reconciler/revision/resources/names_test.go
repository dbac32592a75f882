package resources

import (
	"strings"
	"testing"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/kmeta"
)

// TestDeploymentName: a Revision name of up to 52 characters gives <revision>-deployment
// as before Ferry hashed (existing Deployments are adopted); a longer one, such as the
// hashed Revision of a 63-character Service, gives Knative's hashed name of 63. The
// PodAutoscaler is named after the Revision and scales that Deployment.
func TestDeploymentName(t *testing.T) {
	r := func(l int) string { return strings.Repeat("r", l) }
	for _, tc := range []struct{ revision, want string }{
		{"hello-00001", "hello-00001-deployment"},
		{r(52), r(52) + "-deployment"},
		{r(53), kmeta.ChildName(r(53), "-deployment")},
		{r(63), kmeta.ChildName(r(63), "-deployment")},
		{"the-longest-name-knative-0b3fa7fd5cddc016fb1060803dcc2532-00001", "the-longest-name-knad8fc388004f3b035b1a4205c4d5f2dd9-deployment"},
	} {
		rev := revision(nil)
		rev.Name = tc.revision
		d := MakeDeployment(rev, 120, 1)
		if d.Name != tc.want || DeploymentName(tc.revision) != tc.want {
			t.Errorf("Deployment of %q = %q, want %q", tc.revision, d.Name, tc.want)
		}
		if len(d.Name) > 63 {
			t.Errorf("Deployment of %q has %d characters", tc.revision, len(d.Name))
		}
		if l := d.Spec.Template.Labels[v1.RevisionLabelKey]; l != tc.revision {
			t.Errorf("pods' revision label = %q, want the Revision's name %q", l, tc.revision)
		}
		pa := MakePodAutoscaler(rev, nil)
		if pa.Name != tc.revision || pa.Spec.ScaleTargetRef.Name != tc.want {
			t.Errorf("PodAutoscaler %q scales %q, want %q scaling %q", pa.Name, pa.Spec.ScaleTargetRef.Name, tc.revision, tc.want)
		}
	}
}
