package configuration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler/configuration/resources"
)

func cfgAt(gen int64) *v1.Configuration {
	return &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "ns", UID: "cfg-uid", Generation: gen}}
}

// rev is a Revision of cfg's generation gen in the given Ready state.
func rev(cfg *v1.Configuration, gen int64, ready corev1.ConditionStatus) v1.Revision {
	c := cfg.DeepCopy()
	c.Generation = gen
	r := resources.MakeRevision(context.Background(), c)
	r.Generation = 1
	r.Status.ObservedGeneration = 1
	r.Status.Conditions = []duck.Condition{{Type: duck.ConditionReady, Status: ready, Message: "boom"}}
	return *r
}

func TestPickLatestReady(t *testing.T) {
	cfg := cfgAt(3)
	stranger := rev(cfgAt(3), 3, corev1.ConditionTrue)
	stranger.OwnerReferences[0].UID = "other"
	named := func(r v1.Revision, name string) v1.Revision { r.Name = name; return r }
	blue, green := named(rev(cfg, 1, corev1.ConditionTrue), "hello-blue"), named(rev(cfg, 2, corev1.ConditionTrue), "hello-green")
	blueOnItsWay := named(rev(cfg, 1, corev1.ConditionUnknown), "hello-blue")
	tests := []struct {
		name    string
		revs    []v1.Revision
		current string
		// latest is the latest created Revision: the last of revs.
		want string
	}{
		{"none ready", []v1.Revision{rev(cfg, 1, corev1.ConditionUnknown)}, "", ""},
		{"newest ready", []v1.Revision{rev(cfg, 1, corev1.ConditionTrue), rev(cfg, 2, corev1.ConditionTrue), rev(cfg, 3, corev1.ConditionUnknown)}, "hello-00001", "hello-00002"},
		{"newest failed keeps the older", []v1.Revision{rev(cfg, 1, corev1.ConditionTrue), rev(cfg, 2, corev1.ConditionFalse)}, "hello-00001", "hello-00001"},
		{"never moves back", []v1.Revision{rev(cfg, 1, corev1.ConditionTrue), rev(cfg, 2, corev1.ConditionFalse)}, "hello-00002", "hello-00002"},
		{"not ours", []v1.Revision{stranger, rev(cfg, 1, corev1.ConditionTrue), rev(cfg, 2, corev1.ConditionUnknown)}, "", "hello-00001"},
		// A template applied again under its name takes back its older Revision.
		{"rolled back to a ready Revision", []v1.Revision{green, blue}, "hello-green", "hello-blue"},
		{"rolled back to a Revision not ready", []v1.Revision{green, blueOnItsWay}, "hello-green", "hello-green"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pickLatestReady(cfg, tc.revs, tc.current, tc.revs[len(tc.revs)-1].Name); got != tc.want {
				t.Errorf("pickLatestReady = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestMarkReady(t *testing.T) {
	cfg := cfgAt(2)
	tests := []struct {
		name   string
		latest v1.Revision
		ready  string
		status corev1.ConditionStatus
		reason string
		msg    string
	}{
		{"latest ready", rev(cfg, 2, corev1.ConditionTrue), "hello-00002", corev1.ConditionTrue, "", ""},
		{"latest on its way", rev(cfg, 2, corev1.ConditionUnknown), "hello-00001", corev1.ConditionUnknown, "", ""},
		{"latest failed", rev(cfg, 2, corev1.ConditionFalse), "hello-00001", corev1.ConditionFalse, v1.ReasonRevisionFailed, `Revision "hello-00002" failed with message: boom.`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &v1.ConfigurationStatus{}
			v1.ConfigurationConditions.Manage(&s.Status).InitializeConditions()
			markReady(s, &tc.latest, tc.ready)
			c := s.GetCondition(v1.ConfigurationConditionReady)
			if c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.msg {
				t.Errorf("Ready = %+v", c)
			}
		})
	}
}
