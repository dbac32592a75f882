package explain

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

var now = time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)

func warning(kind, name, reason, msg string, count int32, ago time.Duration) corev1.Event {
	return corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: name + "." + reason, Namespace: "ns"},
		InvolvedObject: corev1.ObjectReference{Kind: kind, Name: name, Namespace: "ns"},
		Type:           corev1.EventTypeWarning, Reason: reason, Message: msg, Count: count,
		LastTimestamp: metav1.NewTime(now.Add(-ago)),
	}
}

// healthy is a Ready, routed Service as Read would return it.
func healthy() Chain {
	c := readyAll()
	c.Namespace, c.Now = "ns", now
	c.Service.Status.URL = "http://" + svcName + ".ns.example.com"
	c.Route.Status.URL = c.Service.Status.URL
	c.Route.Status.Traffic = []v1.TrafficTarget{{RevisionName: svcName + "-00001", LatestRevision: ptr.To(true), Percent: ptr.To[int64](100)}}
	c.Configuration.Status.LatestReadyRevisionName = svcName + "-00001"
	c.Revisions[0].Spec.Containers = []corev1.Container{{Name: "user-container", Image: "ghcr.io/knative/helloworld-go"}}
	rs := appsv1.ReplicaSet{ObjectMeta: om(svcName+"-00001-deployment-7d9f", 1), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1)}}
	rs.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1"}
	rs.Status.Replicas, rs.Status.ReadyReplicas = 1, 1
	c.ReplicaSets = map[string][]appsv1.ReplicaSet{svcName + "-00001": {rs}}
	return c
}

// failing is healthy with a second Revision whose pod cannot pull its image: the
// Service is not Ready, traffic stays on -00001.
func failing(podStatus corev1.PodStatus) Chain {
	c := healthy()
	rev2 := svcName + "-00002"
	c.Service.Generation, c.Service.Status.ObservedGeneration = 2, 2
	c.Service.Status.Conditions = []duck.Condition{
		cond(duck.ConditionReady, F, v1.ReasonRevisionFailed, `Revision "`+rev2+`" failed with message: Unable to fetch image "ferry.test/image-pull-error".`),
		cond(v1.ServiceConditionConfigurationsReady, F, v1.ReasonRevisionFailed, `Revision "`+rev2+`" failed with message: Unable to fetch image "ferry.test/image-pull-error".`),
		cond(v1.ServiceConditionRoutesReady, T, "", ""),
	}
	c.Configuration.Generation, c.Configuration.Status.ObservedGeneration = 2, 2
	c.Configuration.Status.LatestCreatedRevisionName = rev2
	c.Configuration.Status.Conditions = []duck.Condition{cond(duck.ConditionReady, F, v1.ReasonRevisionFailed, `Revision "`+rev2+`" failed with message: Unable to fetch image.`)}
	r := v1.Revision{ObjectMeta: om(rev2, 1)}
	r.Labels = map[string]string{v1.ConfigurationGenerationLabelKey: "2"}
	r.Spec.Containers = []corev1.Container{{Name: "user-container", Image: "ferry.test/image-pull-error"}}
	r.Status.Status = status(1,
		cond(duck.ConditionReady, F, v1.ReasonContainerMissing, `Unable to fetch image "ferry.test/image-pull-error"`),
		cond(v1.RevisionConditionResourcesAvailable, U, v1.ReasonDeploying, ""),
		cond(v1.RevisionConditionContainerHealthy, F, v1.ReasonContainerMissing, `Unable to fetch image "ferry.test/image-pull-error"`))
	c.Revisions = append(c.Revisions, r)
	dep := &appsv1.Deployment{ObjectMeta: om(rev2+"-deployment", 1), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)}}
	dep.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentAvailable, Status: F, Reason: "MinimumReplicasUnavailable"}}
	c.Deployments[rev2] = dep
	rs := appsv1.ReplicaSet{ObjectMeta: om(rev2+"-deployment-55f", 1), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1)}}
	rs.Status.Replicas = 1
	c.ReplicaSets[rev2] = []appsv1.ReplicaSet{rs}
	pod := corev1.Pod{ObjectMeta: om(rev2+"-deployment-55f-abcde", 0), Spec: corev1.PodSpec{NodeName: "kwok-node"}, Status: podStatus}
	c.Pods[rev2] = []corev1.Pod{pod}
	c.Events = []corev1.Event{
		warning("Pod", pod.Name, "Failed", `Failed to pull image "ferry.test/image-pull-error": not found`, 3, 20*time.Second),
		warning("Pod", pod.Name, "Failed", `Failed to pull image "ferry.test/image-pull-error": not found`, 1, 90*time.Second),
		warning("Revision", rev2, v1.ReasonRevisionFailed, "older", 1, 10*time.Minute),
		{InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: pod.Name}, Type: corev1.EventTypeNormal, Reason: "Pulling"},
	}
	return c
}

func pullError() corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: T}, {Type: corev1.PodReady, Status: F, Reason: "ContainersNotReady"}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "user-container", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ErrImagePull", Message: `failed to pull image "ferry.test/image-pull-error": not found`}}}}}
}

func crashLoop() corev1.PodStatus {
	return corev1.PodStatus{Phase: corev1.PodRunning,
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: F, Reason: "ContainersNotReady"}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "user-container", RestartCount: 4,
			State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off restarting failed container"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}}}}
}

func TestBuild(t *testing.T) {
	rev2 := svcName + "-00002"
	pod2 := rev2 + "-deployment-55f-abcde"
	for _, tc := range []struct {
		name         string
		chain        func() Chain
		ok           bool
		headline     string
		kind         string
		culprit      string   // prefix
		why          []string // each a prefix of a Why line, in order
		advice       string   // in the advice
		screen       []string // in the printed report, in order
		stepsNotDone []string // "Kind Name" of every step not done
	}{{
		name:     "healthy, status says routed",
		chain:    healthy,
		ok:       true,
		headline: "Ready and routed (by the KIngress status",
		screen: []string{
			"ksvc " + svcName + " in namespace ns: Ready and routed",
			"✓ ksvc " + svcName + ": Ready; http://" + svcName + ".ns.example.com",
			"  ✓ Configuration " + svcName + ": Ready; latest created and ready " + svcName + "-00001",
			"    ✓ Revision " + svcName + "-00001 (latest created and ready): Ready; image ghcr.io/knative/helloworld-go",
			"      ✓ Deployment " + svcName + "-00001-deployment: 1/1 available",
			"        ✓ ReplicaSet " + svcName + "-00001-deployment-7d9f: 1/1 pods created, 1 ready",
			"          ✓ Pod " + svcName + "-00001-deployment-7d9f-x2x: Ready",
			"  ✓ Route " + svcName + ": Ready; traffic 100% → " + svcName + "-00001 (latest); http://",
			"    ✓ KIngress " + svcName + ": Ready",
			"      · gateway: not asked (--gateway URL sends one request with Host " + svcName + ".ns.example.com)",
		},
	}, {
		name: "healthy and routed by the gateway",
		chain: func() Chain {
			c := healthy()
			c.Probed, c.GatewayURL, c.RoutedAnswer = true, "http://127.0.0.1:8080", "200 Hello from revision "+svcName+"-00001 (pod 10.244.0.5 is simulated by kwok; no process serves it)"
			return c
		},
		ok:       true,
		headline: "Ready and routed: the gateway at http://127.0.0.1:8080 routed a request to it",
		screen:   []string{"      ✓ gateway: routed GET / with Host " + svcName + ".ns.example.com: 200 Hello from revision"},
	}, {
		name: "Ready but the gateway does not route it",
		chain: func() Chain {
			c := healthy()
			c.Probed, c.GatewayURL, c.LastAnswer = true, "http://127.0.0.1:8080", `404 ferry: no route for host "x"`
			return c
		},
		headline:     "Ready but NOT ROUTED",
		kind:         "gateway not routing",
		culprit:      "gateway: no routed answer for " + svcName,
		advice:       "did not route the Route's host",
		stepsNotDone: []string{"gateway"},
	}, {
		name:     "image cannot be pulled",
		chain:    func() Chain { return failing(pullError()) },
		headline: "NOT READY",
		kind:     "Pod Pending Ready=False ContainersNotReady ErrImagePull",
		culprit:  "Pod " + pod2 + `: Pending; Ready=False ContainersNotReady; container user-container waiting: ErrImagePull failed to pull image "ferry.test/image-pull-error"`,
		why:      []string{`Warning Failed (×3, 20s ago): Failed to pull image "ferry.test/image-pull-error": not found`},
		advice:   `The image "ferry.test/image-pull-error" cannot be pulled`,
		screen: []string{
			"  not done: Pod " + pod2,
			"  events:  Warning Failed (×3, 20s ago)",
			"  to do:   The image",
			"✗ ksvc " + svcName + ": Ready=False RevisionFailed",
			"  ✗ Configuration " + svcName + ": Ready=False RevisionFailed",
			"latest created " + rev2 + ", latest ready " + svcName + "-00001",
			"    ✗ Revision " + rev2 + ` (latest created): Ready=False ContainerMissing "Unable to fetch image \"ferry.test/image-pull-error\""; ContainerHealthy=False ContainerMissing`,
			"        ! Warning RevisionFailed (10m ago): older",
			"      ✗ Deployment " + rev2 + "-deployment: 0/1 available",
			"        ✓ ReplicaSet " + rev2 + "-deployment-55f: 1/1 pods created, 0 ready",
			"          ✗ Pod " + pod2 + ": Pending;",
			"              ! Warning Failed (×3, 20s ago)",
			"    ✓ Revision " + svcName + "-00001 (latest ready): Ready",
			"  ✓ Route " + svcName + ": Ready",
		},
		stepsNotDone: []string{"ksvc " + svcName, "Configuration " + svcName, "Revision " + rev2, "Deployment " + rev2 + "-deployment", "Pod " + pod2},
	}, {
		name:     "container crash-loops",
		chain:    func() Chain { return failing(crashLoop()) },
		headline: "NOT READY",
		kind:     "Pod Running Ready=False ContainersNotReady CrashLoopBackOff",
		culprit:  "Pod " + pod2 + ": Running; Ready=False ContainersNotReady; container user-container waiting: CrashLoopBackOff back-off restarting failed container (last exit 1 Error, 4 restarts)",
		advice:   "`kubectl logs -n ns " + pod2 + " -c user-container --previous`",
	}, {
		name: "quota refuses the pods",
		chain: func() Chain {
			c := failing(pullError())
			rev2 := svcName + "-00002"
			c.Pods[rev2] = nil
			rs := &c.ReplicaSets[rev2][0]
			rs.Status.Replicas = 0
			rs.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: T, Reason: "FailedCreate",
				Message: `pods "x" is forbidden: exceeded quota: q, requested: pods=1, used: pods=1, limited: pods=1`}}
			c.Events = []corev1.Event{warning("ReplicaSet", rs.Name, "FailedCreate", `Error creating: pods "x" is forbidden: exceeded quota: q`, 7, 3*time.Second)}
			return c
		},
		headline: "NOT READY",
		kind:     "ReplicaSet ReplicaFailure=True FailedCreate",
		culprit:  "ReplicaSet " + rev2 + `-deployment-55f: ReplicaFailure=True FailedCreate "pods \"x\" is forbidden: exceeded quota`,
		why:      []string{"Warning FailedCreate (×7, 3s ago): Error creating: pods"},
		advice:   "ResourceQuota",
		screen:   []string{"          ✗ Pod: none"},
	}, {
		name: "KIngress not ready",
		chain: func() Chain {
			c := healthy()
			c.Service.Status.Conditions = []duck.Condition{cond(duck.ConditionReady, U, v1.ReasonIngressNotConfigured, ""), cond(v1.ServiceConditionConfigurationsReady, T, "", ""),
				cond(v1.ServiceConditionRoutesReady, U, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured)}
			c.Route.Status.Conditions = []duck.Condition{cond(duck.ConditionReady, U, v1.ReasonIngressNotConfigured, ""), cond(v1.RouteConditionAllTrafficAssigned, T, "", ""),
				cond(v1.RouteConditionIngressReady, U, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured)}
			c.Ingress.Status.Status = status(0, cond(duck.ConditionReady, U, "", ""), cond(netv1alpha1.IngressConditionNetworkConfigured, U, "", ""),
				cond(netv1alpha1.IngressConditionLoadBalancerReady, U, "", ""))
			return c
		},
		headline:     "NOT READY",
		kind:         "KIngress not reconciled",
		culprit:      "KIngress " + svcName + ": not reconciled (observedGeneration 0, generation 1)",
		advice:       "Is the gateway running?",
		stepsNotDone: []string{"ksvc " + svcName, "Route " + svcName, "KIngress " + svcName},
	}, {
		name: "Route taken by another object",
		chain: func() Chain {
			c := healthy()
			c.Service.Status.Conditions = []duck.Condition{cond(duck.ConditionReady, F, duck.ReasonNotOwned, `There is an existing Route "`+svcName+`" that we do not own.`),
				cond(v1.ServiceConditionConfigurationsReady, T, "", ""), cond(v1.ServiceConditionRoutesReady, F, duck.ReasonNotOwned, `There is an existing Route "`+svcName+`" that we do not own.`)}
			return c
		},
		headline: "NOT READY",
		kind:     "Route not owned",
		culprit:  "Route " + svcName + ": not owned by ksvc " + svcName,
		advice:   "`kubectl get route " + svcName + " -n ns -o yaml`",
	}, {
		name: "Route missing",
		chain: func() Chain {
			c := healthy()
			c.Route, c.Ingress = nil, nil
			c.Service.Status.Conditions = []duck.Condition{cond(duck.ConditionReady, U, "", ""), cond(v1.ServiceConditionConfigurationsReady, T, "", ""), cond(v1.ServiceConditionRoutesReady, U, "", "")}
			return c
		},
		headline: "NOT READY",
		kind:     "Route missing",
		culprit:  "Route " + svcName + ": missing",
		advice:   "Is Ferry's controller running?",
		screen:   []string{"  ✗ Route " + svcName + ": missing (the Service reconciler has not created it)"},
	}, {
		name:     "Service not found",
		chain:    func() Chain { return Chain{Name: "nope", Namespace: "ns"} },
		headline: "NOT READY",
		kind:     "ksvc not found",
		advice:   "`kubectl get ksvc,configuration,revision,route -n ns`",
		screen:   []string{"✗ ksvc nope: not found"},
	}, {
		name: "a Ready Revision",
		chain: func() Chain {
			c := healthy()
			c.Root, c.Name = KindRevision, svcName+"-00001"
			return c
		},
		ok:       true,
		headline: "Ready",
		screen:   []string{"revision " + svcName + "-00001 in namespace ns: Ready", "✓ Revision " + svcName + "-00001: Ready", "  ✓ Deployment"},
	}, {
		name: "a Configuration whose latest Revision fails",
		chain: func() Chain {
			c := failing(pullError())
			c.Root, c.Service = KindConfiguration, nil
			return c
		},
		headline: "NOT READY",
		kind:     "Pod Pending Ready=False ContainersNotReady ErrImagePull",
		screen:   []string{"✗ Configuration " + svcName, "  ✗ Revision " + rev2 + " (latest created)", "  ✓ Revision " + svcName + "-00001 (latest ready)"},
	}, {
		name: "a Route waiting for its Configuration's Revision",
		chain: func() Chain {
			c := waitingChain()
			c.Root, c.Namespace, c.Service = KindRoute, "ns", nil
			return c
		},
		headline: "NOT READY",
		kind:     "Pod Pending PodScheduled=False Unschedulable",
		advice:   "No node can run the pod",
		screen:   []string{"✗ Route " + svcName, "  ✗ Configuration " + svcName, "    ✗ Revision " + svcName + "-00001", "  ✗ KIngress " + svcName + ": missing"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := Build(tc.chain())
			screen := r.String()
			defer func() {
				if t.Failed() {
					t.Logf("report:\n%s", screen)
				}
			}()
			if r.OK != tc.ok {
				t.Errorf("OK = %v", r.OK)
			}
			if !strings.HasPrefix(r.Headline, tc.headline) {
				t.Errorf("headline = %q, want prefix %q", r.Headline, tc.headline)
			}
			if r.Kind != tc.kind {
				t.Errorf("kind = %q, want %q", r.Kind, tc.kind)
			}
			if !strings.HasPrefix(r.Culprit, tc.culprit) {
				t.Errorf("culprit\n got  %s\n want %s", r.Culprit, tc.culprit)
			}
			if len(r.Why) < len(tc.why) {
				t.Errorf("why = %q, want %q", r.Why, tc.why)
			} else {
				for i, w := range tc.why {
					if !strings.HasPrefix(r.Why[i], w) {
						t.Errorf("why[%d] = %q, want prefix %q", i, r.Why[i], w)
					}
				}
			}
			if advice := strings.Join(r.Advice, "\n"); !strings.Contains(advice, tc.advice) || (tc.ok != (advice == "")) {
				t.Errorf("advice = %q, want it to hold %q", advice, tc.advice)
			}
			rest := screen
			for _, l := range tc.screen {
				i := strings.Index(rest, l)
				if i < 0 {
					t.Errorf("missing (in order) %q", l)
					continue
				}
				rest = rest[i+len(l):]
			}
			if tc.stepsNotDone != nil {
				var got []string
				for _, s := range r.Steps {
					if !s.Done && !s.Skipped {
						got = append(got, strings.TrimSpace(s.Kind+" "+s.Name))
					}
				}
				if strings.Join(got, ", ") != strings.Join(tc.stepsNotDone, ", ") {
					t.Errorf("steps not done = %q, want %q", got, tc.stepsNotDone)
				}
			}
		})
	}
}

func TestEventsDedupedNewestFirst(t *testing.T) {
	c := healthy()
	pod := c.Pods[svcName+"-00001"][0].Name
	c.Events = []corev1.Event{
		warning("Pod", pod, "A", "old", 1, time.Hour),
		warning("Pod", pod, "B", "newest", 2, time.Second),
		warning("Pod", pod, "A", "old", 1, 2*time.Hour),
		warning("Pod", "other", "C", "not about it", 1, 0),
		warning("Pod", pod, "D", "d", 1, 2*time.Minute),
		warning("Pod", pod, "E", "e", 1, 3*time.Minute),
	}
	b := &walker{c: &c}
	got := b.events("Pod", pod, "")
	want := []string{"Warning B (×2, 1s ago): newest", "Warning D (2m ago): d", "Warning E (3m ago): e", "…"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("events =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// An Event with a UID is about the object with that UID only.
	e := warning("Pod", pod, "X", "x", 1, 0)
	e.InvolvedObject.UID = "other-uid"
	c.Events = []corev1.Event{e}
	if got := b.events("Pod", pod, "pod-uid"); len(got) != 0 {
		t.Errorf("an Event about another object with the same name: %q", got)
	}
}

func TestParseKind(t *testing.T) {
	for in, want := range map[string]Kind{"ksvc": KindService, "service": KindService, "services.serving.knative.dev": KindService,
		"configuration": KindConfiguration, "cfg": KindConfiguration, "rev": KindRevision, "Revision": KindRevision, "rt": KindRoute, "routes": KindRoute,
		"dm": KindDomainMapping, "domainmappings.serving.knative.dev": KindDomainMapping} {
		if got, err := ParseKind(in); got != want || err != nil {
			t.Errorf("ParseKind(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseKind("pod"); err == nil {
		t.Error("ParseKind(pod) did not fail")
	}
}

// TestRead reads a Service's chain through a client, as `ferry explain` does.
func TestRead(t *testing.T) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, v1.AddToScheme, netv1alpha1.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c := failing(pullError())
	rev1, rev2 := svcName+"-00001", svcName+"-00002"
	objs := []client.Object{c.Service, c.Configuration, c.Route, c.Ingress, c.Deployments[rev1], c.Deployments[rev2]}
	for i := range c.Revisions {
		c.Revisions[i].Labels[v1.ConfigurationLabelKey] = svcName
		objs = append(objs, &c.Revisions[i])
	}
	for _, rev := range []string{rev1, rev2} {
		for i := range c.ReplicaSets[rev] {
			c.ReplicaSets[rev][i].Labels = map[string]string{v1.RevisionLabelKey: rev}
			objs = append(objs, &c.ReplicaSets[rev][i])
		}
		for i := range c.Pods[rev] {
			c.Pods[rev][i].Labels = map[string]string{v1.RevisionLabelKey: rev}
			objs = append(objs, &c.Pods[rev][i])
		}
	}
	for i := range c.Events {
		c.Events[i].Namespace = "ns"
		c.Events[i].Name = c.Events[i].Reason + "-" + string(rune('a'+i))
		objs = append(objs, &c.Events[i])
	}
	cl := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&corev1.Event{}, "involvedObject.name", func(o client.Object) []string { return []string{o.(*corev1.Event).InvolvedObject.Name} }).
		Build()

	got, err := Read(context.Background(), cl, Target{Kind: KindService, Namespace: "ns", Name: svcName})
	if err != nil {
		t.Fatal(err)
	}
	if got.Service == nil || got.Configuration == nil || got.Route == nil || got.Ingress == nil || len(got.Revisions) != 2 ||
		got.Deployments[rev2] == nil || len(got.ReplicaSets[rev2]) != 1 || len(got.Pods[rev2]) != 1 || len(got.Pods[rev1]) != 1 || len(got.ReadErrors) != 0 {
		t.Fatalf("chain = %+v", got)
	}
	if len(got.Events) != len(c.Events) {
		t.Errorf("%d events, want %d", len(got.Events), len(c.Events))
	}
	if r := Build(got); r.OK || r.Kind != "Pod Pending Ready=False ContainersNotReady ErrImagePull" {
		t.Errorf("report:\n%s", r)
	}

	missing, err := Read(context.Background(), cl, Target{Kind: KindService, Namespace: "ns", Name: "nope"})
	if err != nil || missing.Service != nil {
		t.Errorf("a missing Service: %+v, %v", missing, err)
	}
}
