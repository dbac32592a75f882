package scale

import (
	"time"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

// Milestone is a step on a Service's way to Ready, as the run's watches first saw it.
type Milestone int

// The milestones, in the order the chain usually reaches them.
const (
	ConfigurationCreated Milestone = iota
	RouteCreated
	RevisionCreated
	DeploymentCreated
	PodCreated
	PodScheduled
	PodReady
	DeploymentAvailable
	RevisionReady
	ConfigurationReady
	IngressCreated
	IngressReady
	RouteReady
	ServiceReady
	numMilestones
)

var milestoneNames = [numMilestones]string{
	"Configuration created", "Route created", "Revision created", "Deployment created", "Pod created", "Pod scheduled",
	"Pod Ready", "Deployment available", "Revision Ready", "Configuration Ready", "KIngress created", "KIngress Ready",
	"Route Ready", "ksvc Ready",
}

func (m Milestone) String() string { return milestoneNames[m] }

// after is the milestone each one waits for; -1 is the create request.
var after = [numMilestones]Milestone{
	ConfigurationCreated: -1,
	RouteCreated:         -1,
	RevisionCreated:      ConfigurationCreated,
	DeploymentCreated:    RevisionCreated,
	PodCreated:           DeploymentCreated,
	PodScheduled:         PodCreated,
	PodReady:             PodScheduled,
	DeploymentAvailable:  PodReady,
	RevisionReady:        DeploymentAvailable,
	ConfigurationReady:   RevisionReady,
	IngressCreated:       ConfigurationReady,
	IngressReady:         IngressCreated,
	RouteReady:           IngressReady,
	ServiceReady:         RouteReady,
}

// Milestones are the times (since the create request) a Service reached each
// milestone; 0 is "not seen".
type Milestones [numMilestones]time.Duration

// PhaseRow says when Services reached a milestone and how long the step from the
// milestone it waits for took.
type PhaseRow struct {
	Milestone Milestone
	After     string // what it waits for
	// Reached is the time since the create request; Step the time since After.
	Reached Distribution
	Step    Distribution
}

// Phases is where the time goes along the chain: per milestone, when it was
// reached and how long its own step took, over the Services that reached it.
func Phases(samples []Sample) []PhaseRow {
	rows := make([]PhaseRow, 0, numMilestones)
	for m := Milestone(0); m < numMilestones; m++ {
		var reached, step []time.Duration
		prev := after[m]
		for _, s := range samples {
			if s.Milestones == nil || s.Milestones[m] == 0 {
				continue
			}
			t := s.Milestones[m]
			reached = append(reached, t)
			switch {
			case prev < 0:
				step = append(step, t)
			case s.Milestones[prev] > 0:
				step = append(step, max(t-s.Milestones[prev], 0))
			}
		}
		if len(reached) == 0 {
			continue
		}
		row := PhaseRow{Milestone: m, After: "create", Reached: Summarize(reached), Step: Summarize(step)}
		if prev >= 0 {
			row.After = prev.String()
		}
		rows = append(rows, row)
	}
	return rows
}

// milestonesOf says which milestones an object's state means it has reached.
func milestonesOf(obj any) (service string, reached []Milestone) {
	switch o := obj.(type) {
	case *v1.Configuration:
		return serviceOf(o.Labels, o.Name), createdThen(ConfigurationCreated, o.IsReady(), ConfigurationReady)
	case *v1.Route:
		return serviceOf(o.Labels, o.Name), createdThen(RouteCreated, o.IsReady(), RouteReady)
	case *v1.Revision:
		return o.Labels[v1.ServiceLabelKey], createdThen(RevisionCreated, o.IsReady(), RevisionReady)
	case *appsv1.Deployment:
		want := int32(1)
		if o.Spec.Replicas != nil {
			want = *o.Spec.Replicas
		}
		available := o.Status.ObservedGeneration == o.Generation && o.Status.AvailableReplicas >= want
		return o.Labels[v1.ServiceLabelKey], createdThen(DeploymentCreated, available, DeploymentAvailable)
	case *corev1.Pod:
		reached = createdThen(PodCreated, o.Spec.NodeName != "", PodScheduled)
		for _, c := range o.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				reached = append(reached, PodReady)
			}
		}
		return o.Labels[v1.ServiceLabelKey], reached
	case *netv1alpha1.Ingress:
		return o.Labels[v1.ServiceLabelKey], createdThen(IngressCreated, o.IsReady(), IngressReady)
	case *v1.Service:
		if o.IsReady() {
			reached = append(reached, ServiceReady)
		}
		return o.Name, reached
	}
	return "", nil
}

// createdThen is created, followed by then if the object has reached it.
func createdThen(created Milestone, ok bool, then Milestone) []Milestone {
	if ok {
		return []Milestone{created, then}
	}
	return []Milestone{created}
}

func serviceOf(labels map[string]string, name string) string {
	if s := labels[v1.ServiceLabelKey]; s != "" {
		return s
	}
	return name
}
