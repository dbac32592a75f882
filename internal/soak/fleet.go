package soak

import (
	"fmt"
	"strconv"

	av1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// RunLabel marks what a soak run creates, with the run's ID; config-domain's entry for
// the run selects the run's Routes by it.
const RunLabel = "ferry.dev/soak-run"

// The fleet: one Service for each way Knative users serve traffic, each loaded
// continuously but zero (loaded every other cycle, so that it scales to zero and back).
const (
	plain   = "plain"   // template updated: all traffic moves to the new Revision
	split   = "split"   // two named Revisions, the whole split flipped between them
	tagged  = "tagged"  // 100 % on a pinned Revision tagged stable, the latest tagged candidate
	rollout = "rollout" // template updated with a gradual rollout
	private = "private" // cluster-local: only the gateway's cluster-local listener serves it
	zero    = "zero"    // scaled to zero between bursts of load
	crashy  = "crashy"  // rolled out to a program that crashes (the program fault), then back
	// frontend is a program that calls private by its cluster name for every answer:
	// programs talking to each other, where pods run programs (Options.FrontendImage).
	frontend = "frontend"
)

// fleet is the Services the run creates and loads.
func (o *Options) fleet() []string {
	f := []string{plain, split, tagged, rollout, private, zero, crashy}
	if o.FrontendImage != "" {
		f = append(f, frontend)
	}
	return f
}

// backendURL is where frontend calls private: its cluster-local name.
func (o *Options) backendURL() string {
	return "http://" + private + "." + o.Namespace + ".svc.cluster.local"
}

// Pinned Revisions, named by the soak as Knative's bring-your-own names allow.
const (
	splitA      = split + "-a"
	splitB      = split + "-b"
	taggedFirst = tagged + "-first"
	stableTag   = "stable"
	candidate   = "candidate"
)

// rolloutDuration is the rollout Service's gradual rollout, short enough to finish
// within a cycle.
const rolloutDuration = "20s"

// generationEnv changes in each template update: a new Revision, the same program.
const generationEnv = "SOAK_GENERATION"

// crashCommand is a program that crashes at start, wherever a shell is.
var crashCommand = []string{"/bin/sh", "-c", "echo 'ferry soak: this program crashes at start' >&2; exit 1"}

// service builds one of the fleet's Services (or a churn Service) as first created.
func (o *Options) service(name string) *v1.Service {
	labels := map[string]string{RunLabel: o.RunID}
	s := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: name, Labels: labels}}
	s.Spec.Template.ObjectMeta.Labels = map[string]string{RunLabel: o.RunID}
	s.Spec.Template.Spec.Containers = []corev1.Container{o.container(0)}
	switch name {
	case split:
		s.Spec.Template.ObjectMeta.Name = splitA
	case tagged:
		s.Spec.Template.ObjectMeta.Name = taggedFirst
		s.Spec.Traffic = []v1.TrafficTarget{
			{Tag: stableTag, RevisionName: taggedFirst, Percent: ptr.To[int64](100)},
			{Tag: candidate, LatestRevision: ptr.To(true), Percent: ptr.To[int64](0)},
		}
	case rollout:
		s.Annotations = map[string]string{v1.RolloutDurationAnnotationKey: rolloutDuration}
	case private:
		s.Labels[netv1alpha1.VisibilityLabelKey] = netv1alpha1.VisibilityClusterLocal
	case zero:
		s.Spec.Template.ObjectMeta.Annotations = map[string]string{av1alpha1.WindowAnnotation[0]: "6s"}
	case frontend:
		s.Spec.Template.Spec.Containers = []corev1.Container{{Image: o.FrontendImage, Env: []corev1.EnvVar{{Name: "BACKEND", Value: o.backendURL()}}}}
	}
	return s
}

func (o *Options) container(generation int) corev1.Container {
	return corev1.Container{Image: o.Image, Args: o.Args, Env: []corev1.EnvVar{{Name: generationEnv, Value: strconv.Itoa(generation)}}}
}

// update is a template update: the next generation of the same program (crash: a
// program that crashes at start). The split Service's update pins its second Revision
// and splits all traffic to its first, which flips then move.
func (o *Options) update(s *v1.Service, generation int, crash bool) {
	c := o.container(generation)
	if crash {
		c.Command, c.Args = crashCommand, nil
	}
	s.Spec.Template.Spec.Containers = []corev1.Container{c}
	s.Spec.Template.ObjectMeta.Name = ""
	if s.Name == split {
		s.Spec.Template.ObjectMeta.Name = splitB
		s.Spec.Traffic = splitTraffic(100)
	}
}

// splitTraffic sends aPercent to split's first Revision and the rest to its second.
func splitTraffic(aPercent int64) []v1.TrafficTarget {
	return []v1.TrafficTarget{
		{RevisionName: splitA, Percent: ptr.To(aPercent)},
		{RevisionName: splitB, Percent: ptr.To(100 - aPercent)},
	}
}

// churnName is the k-th Service created (and later deleted) by the churn change.
func churnName(k int) string { return fmt.Sprintf("churn-%d", k) }
