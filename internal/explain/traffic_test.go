package explain

import (
	"strings"
	"testing"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// pinned is a healthy Service whose traffic was then pinned to a Revision (in the
// Service's traffic entry 0): the Route cannot assign it, with Knative's message msg
// and status st, and leaves its KIngress as it was (withIngress) or never made one.
func pinned(rev string, stat corev1.ConditionStatus, msg string, withIngress bool) Chain {
	c := healthy()
	c.Service.Generation, c.Service.Status.ObservedGeneration = 2, 2
	c.Service.Spec.Traffic = []v1.TrafficTarget{{Tag: "old", RevisionName: rev, Percent: ptr.To[int64](100), LatestRevision: ptr.To(false)}}
	c.Service.Status.Conditions = []duck.Condition{
		cond(duck.ConditionReady, stat, v1.ReasonRevisionMissing, msg),
		cond(v1.ServiceConditionConfigurationsReady, T, "", ""),
		cond(v1.ServiceConditionRoutesReady, stat, v1.ReasonRevisionMissing, msg),
	}
	c.Route.Generation = 2
	c.Route.Spec.Traffic = c.Service.Spec.Traffic
	c.Route.Status.Status = status(2, cond(duck.ConditionReady, stat, v1.ReasonRevisionMissing, msg),
		cond(v1.RouteConditionAllTrafficAssigned, stat, v1.ReasonRevisionMissing, msg),
		cond(v1.RouteConditionIngressReady, U, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured),
		cond(v1.RouteConditionCertificateProvisioned, T, v1.ReasonTLSNotEnabled, ""))
	if !withIngress {
		c.Ingress = nil
	}
	c.Revisions[0].Labels[v1.ConfigurationLabelKey] = svcName
	return c
}

func TestTrafficCulprit(t *testing.T) {
	missing := func(rev string, withIngress bool) func() Chain {
		return func() Chain {
			return pinned(rev, F, `Revision "`+rev+`" referenced in traffic not found.`, withIngress)
		}
	}
	for _, tc := range []struct {
		name        string
		chain       func() Chain
		wantCulprit string
		wantKind    string
		wantAdvice  string // in the first line of "to do"
		notInReport string
	}{{
		name:        "pinned to a Revision that does not exist, never routed",
		chain:       missing("pin-99999", false),
		wantCulprit: `Route ` + svcName + `: its traffic names Revision "pin-99999", which does not exist (AllTrafficAssigned=False RevisionMissing)`,
		wantKind:    "Route AllTrafficAssigned=False RevisionMissing (not found)",
		wantAdvice:  `Revision "pin-99999" does not exist (Configuration ` + svcName + ` has ` + svcName + `-00001 (latest ready)): name an existing one in ksvc ` + svcName + `'s spec.traffic[0].revisionName (tag old), or remove that entry.`,
		notInReport: "controller",
	}, {
		// Its KIngress still serves what the Route served before the change.
		name:        "pinned to a Revision that does not exist, KIngress from before",
		chain:       missing(svcName+"-00009", true),
		wantCulprit: `Route ` + svcName + `: its traffic names Revision "` + svcName + `-00009", which does not exist`,
		wantKind:    "Route AllTrafficAssigned=False RevisionMissing (not found)",
		wantAdvice:  `(Configuration ` + svcName + ` has ` + svcName + `-00001 (latest ready))`,
	}, {
		name: "pinned to a Revision that is not Ready yet",
		chain: func() Chain {
			return pinned(svcName+"-00001", U, `Revision "`+svcName+`-00001" is not yet ready.`, false)
		},
		wantCulprit: `Route ` + svcName + `: waiting for Revision "` + svcName + `-00001" to become Ready (AllTrafficAssigned=Unknown RevisionMissing)`,
		wantKind:    "Route AllTrafficAssigned=Unknown RevisionMissing (not Ready yet)",
		wantAdvice:  "`ferry explain revision " + svcName + "-00001 -n ns`",
		notInReport: "does not exist",
	}, {
		name: "a Route root naming a Configuration that does not exist",
		chain: func() Chain {
			c := missing("x", false)()
			c.Root, c.Service, c.Configuration, c.Revisions = KindRoute, nil, nil, nil
			c.Route.Spec.Traffic = []v1.TrafficTarget{{ConfigurationName: "hello-wrold", Percent: ptr.To[int64](100)}}
			*c.Route.Status.GetCondition(v1.RouteConditionAllTrafficAssigned) = cond(v1.RouteConditionAllTrafficAssigned, F, v1.ReasonConfigurationMissing,
				`Configuration "hello-wrold" referenced in traffic not found.`)
			c.Neighbours = []metav1.ObjectMeta{{Name: "hello-world"}, {Name: "other"}}
			return c
		},
		wantCulprit: `Route ` + svcName + `: its traffic names Configuration "hello-wrold", which does not exist (AllTrafficAssigned=False ConfigurationMissing)`,
		wantKind:    "Route AllTrafficAssigned=False ConfigurationMissing (not found)",
		wantAdvice:  `Configuration "hello-wrold" does not exist in namespace ns (similar: hello-world): name an existing one in route ` + svcName + `'s spec.traffic[0].configurationName, or create it.`,
	}, {
		name: "a host the configuration makes invalid",
		chain: func() Chain {
			c := missing("x", false)()
			*c.Route.Status.GetCondition(v1.RouteConditionAllTrafficAssigned) = cond(v1.RouteConditionAllTrafficAssigned, F, v1.ReasonErrorConfig,
				`invalid domain name "a_b.ns.example.com"`)
			return c
		},
		wantCulprit: `Route ` + svcName + `: AllTrafficAssigned=False ErrorConfig "invalid domain name`,
		wantKind:    "Route AllTrafficAssigned=False ErrorConfig",
		wantAdvice:  "fix config-domain, or config-network's domain-template",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := Build(tc.chain())
			if r.OK || !strings.HasPrefix(r.Culprit, tc.wantCulprit) || r.Kind != tc.wantKind ||
				len(r.Advice) == 0 || !strings.Contains(r.Advice[0], tc.wantAdvice) {
				t.Errorf("got culprit %q\n kind %q\n advice %q\nwant culprit %q\n kind %q\n advice holding %q", r.Culprit, r.Kind, r.Advice, tc.wantCulprit, tc.wantKind, tc.wantAdvice)
			}
			if tc.notInReport != "" && strings.Contains(r.String(), tc.notInReport) {
				t.Errorf("the report says %q:\n%s", tc.notInReport, r)
			}
			// ferry scale prints Explain's culprit and advice: the same.
			if e := Explain(tc.chain()); e.Culprit != r.Culprit || strings.Join(e.Advice, "\n") != strings.Join(r.Advice, "\n") {
				t.Errorf("Explain says %q, %q; Build %q, %q", e.Culprit, e.Advice, r.Culprit, r.Advice)
			}
		})
	}
}

// TestPinnedToMissingRevisionFirstLines: the case, as a user reads it: the
// first two lines name the Route and the Revision, and nothing blames the controller.
func TestPinnedToMissingRevisionFirstLines(t *testing.T) {
	c := pinned("pin-99999", F, `Revision "pin-99999" referenced in traffic not found.`, false)
	lines := strings.SplitN(Build(c).String(), "\n", 3)
	if !strings.Contains(lines[0], "NOT READY") || !strings.Contains(lines[1], "Route "+svcName) || !strings.Contains(lines[1], `Revision "pin-99999"`) {
		t.Errorf("first two lines:\n%s\n%s", lines[0], lines[1])
	}
	if text := Build(c).String(); strings.Contains(text, "controller") || strings.Contains(text, "not done: KIngress") {
		t.Errorf("report:\n%s", text)
	}
}

// TestTrafficBeingCreated: a Revision the traffic names that its Configuration makes
// for its current generation is not missing: the Route's line says it waits for it.
func TestTrafficBeingCreated(t *testing.T) {
	rev2 := svcName + "-00002"
	c := pinned(rev2, F, `Revision "`+rev2+`" referenced in traffic not found.`, false)
	c.Configuration.Generation = 2
	e := Explain(c)
	if want := `→ Route ` + svcName + `: waiting for its Configuration to create Revision "` + rev2 + `", which its traffic names`; !strings.Contains(e.String(), want) {
		t.Errorf("want %q in\n%s", want, e)
	}
	if r := Build(c).String(); strings.Contains(r, "does not exist") {
		t.Errorf("report:\n%s", r)
	}
}

func TestSimilarNames(t *testing.T) {
	names := []string{"hello-world", "hello", "helo-world", "payments", "hello-world-v2", "world"}
	for _, tc := range []struct {
		name string
		want string
	}{
		{"hello-wrold", "hello-world helo-world hello"},
		{"hello-world", "helo-world hello-world-v2 hello"},
		{"payment", "payments"},
		{"zzz", ""},
	} {
		if got := strings.Join(similarNames(tc.name, names), " "); got != tc.want {
			t.Errorf("similarNames(%q) = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestRevisionsInstead(t *testing.T) {
	rev := func(name, cfg string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Labels: map[string]string{v1.ConfigurationLabelKey: cfg}}
	}
	c := Chain{Neighbours: []metav1.ObjectMeta{rev("my-app-00001", "my-app"), rev("my-app-00002", "my-app"), rev("my-00001", "my"), rev("other-00001", "other")}}
	for _, tc := range []struct {
		missing, wantCfg, want string
	}{
		{"my-app-00007", "my-app", "my-app-00002 my-app-00001"}, // the longest Configuration name that prefixes it
		{"my-00009", "my", "my-00001"},
		{"nobody-00001", "", ""},
	} {
		cfg, names := revisionsInstead(&c, tc.missing)
		if cfg != tc.wantCfg || strings.Join(names, " ") != tc.want {
			t.Errorf("revisionsInstead(%q) = %q, %q; want %q, %q", tc.missing, cfg, names, tc.wantCfg, tc.want)
		}
	}
}

// TestTrafficNoReason: AllTrafficAssigned just initialized (Unknown, no reason) says
// nothing of the traffic, so the Route is not blamed for it.
func TestTrafficNoReason(t *testing.T) {
	c := pinned("x", U, "", false)
	*c.Route.Status.GetCondition(v1.RouteConditionAllTrafficAssigned) = cond(v1.RouteConditionAllTrafficAssigned, U, "", "")
	if e := Explain(c); e.Kind != "KIngress missing" || strings.Contains(strings.Join(e.Advice, " "), "spec.traffic") {
		t.Errorf("kind %q, advice %q", e.Kind, e.Advice)
	}
}
