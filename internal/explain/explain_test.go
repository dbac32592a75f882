package explain

import (
	"strings"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const svcName = "scale-00010-004-gkwltbwt"

func cond(t duck.ConditionType, s corev1.ConditionStatus, reason, msg string) duck.Condition {
	return duck.Condition{Type: t, Status: s, Reason: reason, Message: msg}
}

func status(gen int64, cs ...duck.Condition) duck.Status {
	return duck.Status{ObservedGeneration: gen, Conditions: cs}
}

var (
	T, F, U = corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown
)

func om(name string, gen int64) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: gen}
}

// waitingChain is a Service whose Revision waits for its pod: the Route waits for the
// Configuration, which waits for the Revision, which waits for its Deployment.
func waitingChain() Chain {
	rev := svcName + "-00001"
	svc := &v1.Service{ObjectMeta: om(svcName, 1)}
	svc.Status.Status = status(1,
		cond(duck.ConditionReady, U, v1.ReasonRevisionMissing, "Configuration \""+svcName+"\" is waiting for a Revision to become ready."),
		cond(v1.ServiceConditionConfigurationsReady, U, v1.ReasonDeploying, ""),
		cond(v1.ServiceConditionRoutesReady, U, v1.ReasonRevisionMissing, "Configuration \""+svcName+"\" is waiting for a Revision to become ready."))
	cfg := &v1.Configuration{ObjectMeta: om(svcName, 1)}
	cfg.Status.Status = status(1, cond(duck.ConditionReady, U, v1.ReasonDeploying, ""))
	cfg.Status.LatestCreatedRevisionName = rev
	r := v1.Revision{ObjectMeta: om(rev, 1)}
	r.Labels = map[string]string{v1.ConfigurationGenerationLabelKey: "1"}
	r.Status.Status = status(1,
		cond(duck.ConditionReady, U, v1.ReasonDeploying, ""),
		cond(v1.RevisionConditionResourcesAvailable, U, v1.ReasonDeploying, ""),
		cond(v1.RevisionConditionContainerHealthy, U, v1.ReasonDeploying, ""))
	dep := &appsv1.Deployment{ObjectMeta: om(rev+"-deployment", 1), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1)}}
	dep.Status.Conditions = []appsv1.DeploymentCondition{
		{Type: appsv1.DeploymentProgressing, Status: T, Reason: "ReplicaSetUpdated"},
		{Type: appsv1.DeploymentAvailable, Status: F, Reason: "MinimumReplicasUnavailable", Message: "Deployment does not have minimum availability."},
	}
	pod := corev1.Pod{ObjectMeta: om(rev+"-deployment-7d9f-x2x", 0)}
	pod.Status.Phase = corev1.PodPending
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: F, Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient cpu."}}
	rt := &v1.Route{ObjectMeta: om(svcName, 1)}
	rt.Status.Status = status(1,
		cond(duck.ConditionReady, U, v1.ReasonRevisionMissing, ""),
		cond(v1.RouteConditionAllTrafficAssigned, U, v1.ReasonRevisionMissing, "Configuration \""+svcName+"\" is waiting for a Revision to become ready."),
		cond(v1.RouteConditionIngressReady, U, v1.ReasonIngressNotConfigured, ""),
		cond(v1.RouteConditionCertificateProvisioned, T, v1.ReasonTLSNotEnabled, ""))
	return Chain{Name: svcName, Service: svc, Configuration: cfg, Revisions: []v1.Revision{r},
		Deployments: map[string]*appsv1.Deployment{rev: dep}, Pods: map[string][]corev1.Pod{rev: {pod}}, Route: rt}
}

func readyIngress() *netv1alpha1.Ingress {
	ing := &netv1alpha1.Ingress{ObjectMeta: om(svcName, 1)}
	ing.Status.Status = status(1, cond(duck.ConditionReady, T, "", ""), cond(netv1alpha1.IngressConditionNetworkConfigured, T, "", ""),
		cond(netv1alpha1.IngressConditionLoadBalancerReady, T, "", ""))
	return ing
}

func readyAll() Chain {
	c := waitingChain()
	rev := svcName + "-00001"
	c.Service.Status.Status = status(1, cond(duck.ConditionReady, T, "", ""), cond(v1.ServiceConditionConfigurationsReady, T, "", ""), cond(v1.ServiceConditionRoutesReady, T, "", ""))
	c.Configuration.Status.Status = status(1, cond(duck.ConditionReady, T, "", ""))
	c.Configuration.Status.LatestReadyRevisionName = rev
	c.Revisions[0].Status.Status = status(1, cond(duck.ConditionReady, T, "", ""), cond(v1.RevisionConditionResourcesAvailable, T, "", ""), cond(v1.RevisionConditionContainerHealthy, T, "", ""))
	c.Deployments[rev].Status.AvailableReplicas = 1
	c.Pods[rev][0].Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: T}}}
	c.Route.Status.Status = status(1, cond(duck.ConditionReady, T, "", ""), cond(v1.RouteConditionAllTrafficAssigned, T, "", ""),
		cond(v1.RouteConditionIngressReady, T, "", ""), cond(v1.RouteConditionCertificateProvisioned, T, v1.ReasonTLSNotEnabled, ""))
	c.Ingress = readyIngress()
	return c
}

func TestExplain(t *testing.T) {
	rev := svcName + "-00001"
	for _, tc := range []struct {
		name        string
		chain       func() Chain
		wantCulprit string
		wantKind    string
		wantLines   []string // each must appear, in order
	}{{
		name:        "pod unschedulable",
		chain:       waitingChain,
		wantCulprit: "Pod " + rev + "-deployment-7d9f-x2x: Pending; PodScheduled=False Unschedulable \"0/1 nodes are available: 1 Insufficient cpu.\"",
		wantKind:    "Pod Pending PodScheduled=False Unschedulable",
		wantLines: []string{
			"ksvc " + svcName + `: Ready=Unknown RevisionMissing "Configuration \"` + svcName + `\" is waiting for a Revision to become ready."; ConfigurationsReady=Unknown Deploying; RoutesReady=Unknown RevisionMissing` + "\n",
			"  → Configuration " + svcName + `: Ready=Unknown Deploying; latestCreated="` + rev + `" latestReady=""`,
			"    → Revision " + rev + ": ContainerHealthy=Unknown Deploying; ResourcesAvailable=Unknown Deploying",
			"      → Deployment " + rev + `-deployment: 0/1 available; Available=False MinimumReplicasUnavailable "Deployment does not have minimum availability."`,
			"        → Pod " + rev + "-deployment-7d9f-x2x: Pending; PodScheduled=False Unschedulable",
			"  → Route " + svcName + `: waiting for Configuration "` + svcName + `" to have a Ready Revision; AllTrafficAssigned=Unknown RevisionMissing "Configuration`,
			"    → KIngress " + svcName + ": missing",
		},
	}, {
		name: "deployment without pods",
		chain: func() Chain {
			c := waitingChain()
			c.Pods = nil
			return c
		},
		wantCulprit: "Deployment " + rev + "-deployment: 0/1 available; Available=False MinimumReplicasUnavailable",
		wantKind:    "Deployment no pods",
		wantLines:   []string{"        → Pods of " + rev + ": none"},
	}, {
		name: "revision behind its available deployment",
		chain: func() Chain {
			c := waitingChain()
			c.Revisions[0].Status.Conditions = append(c.Revisions[0].Status.Conditions,
				duck.Condition{Type: v1.RevisionConditionActive, Status: U, Reason: v1.ReasonDeploying, Severity: duck.ConditionSeverityInfo})
			c.Deployments[rev].Status.AvailableReplicas = 1
			return c
		},
		wantCulprit: "Revision " + rev + ": ContainerHealthy=Unknown Deploying; ResourcesAvailable=Unknown Deploying; Active=Unknown Deploying",
		wantKind:    "Revision ContainerHealthy=Unknown Deploying (its Deployment is available)",
	}, {
		// The pods are merely not ready; the Revision gave up on them.
		name: "revision past its progress deadline",
		chain: func() Chain {
			c := waitingChain()
			c.Revisions[0].Status.Status = status(1,
				cond(duck.ConditionReady, F, v1.ReasonProgressDeadlineExceeded, "Initial scale was never achieved"),
				cond(v1.RevisionConditionResourcesAvailable, F, v1.ReasonProgressDeadlineExceeded, "Initial scale was never achieved"),
				cond(v1.RevisionConditionContainerHealthy, U, v1.ReasonDeploying, ""))
			c.Pods[rev][0].Spec.NodeName = "kwok-node"
			c.Pods[rev][0].Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: T}, {Type: corev1.PodReady, Status: F, Reason: "ContainersNotReady"}}}
			return c
		},
		wantCulprit: "Revision " + rev + `: ResourcesAvailable=False ProgressDeadlineExceeded "Initial scale was never achieved"`,
		wantKind:    "Revision ResourcesAvailable=False ProgressDeadlineExceeded",
		wantLines:   []string{"        → Pod " + rev + "-deployment-7d9f-x2x: Running; Ready=False ContainersNotReady"},
	}, {
		// Another's Deployment has the Revision's Deployment's name: its pods are not
		// the Revision's business.
		name: "revision whose Deployment name is taken",
		chain: func() Chain {
			c := waitingChain()
			c.Revisions[0].Status.Status = status(1,
				cond(duck.ConditionReady, F, duck.ReasonNotOwned, duck.NotOwnedMessage("Deployment", rev+"-deployment")),
				cond(v1.RevisionConditionResourcesAvailable, F, duck.ReasonNotOwned, duck.NotOwnedMessage("Deployment", rev+"-deployment")))
			return c
		},
		wantCulprit: "Revision " + rev + `: ResourcesAvailable=False NotOwned "There is an existing Deployment`,
		wantKind:    "Revision ResourcesAvailable=False NotOwned",
	}, {
		name: "deployment missing",
		chain: func() Chain {
			c := waitingChain()
			c.Deployments = nil
			return c
		},
		wantCulprit: "Revision " + rev + ": ContainerHealthy=Unknown Deploying; ResourcesAvailable=Unknown Deploying",
		wantKind:    "Revision ContainerHealthy=Unknown Deploying",
		wantLines:   []string{"      → Deployment " + rev + "-deployment: missing"},
	}, {
		name: "no revision yet",
		chain: func() Chain {
			c := waitingChain()
			c.Revisions = nil
			c.Configuration.Status.LatestCreatedRevisionName = ""
			return c
		},
		wantCulprit: "Revision: none created yet for Configuration " + svcName + " (generation 1)",
		wantKind:    "Revision missing",
	}, {
		name: "configuration missing",
		chain: func() Chain {
			c := waitingChain()
			c.Configuration, c.Route, c.Revisions = nil, nil, nil
			c.Service.Status.Status = status(0)
			c.Service.Generation = 1
			return c
		},
		wantCulprit: "Configuration " + svcName + ": missing (the Service reconciler has not created it)",
		wantKind:    "Configuration missing",
		wantLines:   []string{"ksvc " + svcName + ": not reconciled (observedGeneration 0, generation 1); no Ready condition", "  → Route " + svcName + ": missing"},
	}, {
		name: "ingress not ready",
		chain: func() Chain {
			c := readyAll()
			c.Service.Status.Status = status(1, cond(duck.ConditionReady, U, v1.ReasonIngressNotConfigured, ""), cond(v1.ServiceConditionConfigurationsReady, T, "", ""),
				cond(v1.ServiceConditionRoutesReady, U, v1.ReasonIngressNotConfigured, ""))
			c.Route.Status.Status = status(1, cond(duck.ConditionReady, U, v1.ReasonIngressNotConfigured, ""), cond(v1.RouteConditionAllTrafficAssigned, T, "", ""),
				cond(v1.RouteConditionIngressReady, U, v1.ReasonIngressNotConfigured, v1.MessageIngressNotConfigured), cond(v1.RouteConditionCertificateProvisioned, T, "", ""))
			c.Ingress.Generation = 2
			return c
		},
		wantCulprit: "KIngress " + svcName + ": not reconciled (observedGeneration 1, generation 2); Ready=True",
		wantKind:    "KIngress not reconciled",
		wantLines: []string{
			"  → Route " + svcName + `: IngressReady=Unknown IngressNotConfigured "Ingress has not yet been reconciled."`,
		},
	}, {
		name: "everything below is ready",
		chain: func() Chain {
			c := readyAll()
			c.Service.Status.Status = status(1, cond(duck.ConditionReady, U, v1.ReasonTrafficNotMigrated, ""), cond(v1.ServiceConditionConfigurationsReady, T, "", ""),
				cond(v1.ServiceConditionRoutesReady, U, v1.ReasonTrafficNotMigrated, "Traffic is not yet migrated to the latest revision."))
			return c
		},
		wantCulprit: "ksvc " + svcName + `: RoutesReady=Unknown TrafficNotMigrated "Traffic is not yet migrated to the latest revision."`,
		wantKind:    "ksvc RoutesReady=Unknown TrafficNotMigrated",
		wantLines:   []string{"  → Configuration and Route are Ready but the Service's status does not say so yet"},
	}, {
		name: "a gradual rollout in progress",
		chain: func() Chain {
			c := readyAll()
			rolling := cond(v1.RouteConditionIngressReady, U, v1.ReasonRolloutInProgress, v1.MessageRolloutInProgress)
			c.Route.Status.Status = status(1, cond(duck.ConditionReady, U, rolling.Reason, rolling.Message),
				cond(v1.RouteConditionAllTrafficAssigned, T, "", ""), rolling, cond(v1.RouteConditionCertificateProvisioned, T, v1.ReasonTLSNotEnabled, ""))
			c.Route.Status.Traffic = []v1.TrafficTarget{{RevisionName: rev, Percent: ptr.To[int64](60), LatestRevision: ptr.To(true)},
				{RevisionName: svcName + "-00002", Percent: ptr.To[int64](40), LatestRevision: ptr.To(true)}}
			c.Service.Status.Status = status(1, cond(duck.ConditionReady, U, rolling.Reason, rolling.Message),
				cond(v1.ServiceConditionConfigurationsReady, T, "", ""), cond(v1.ServiceConditionRoutesReady, U, rolling.Reason, rolling.Message))
			return c
		},
		wantCulprit: "Route " + svcName + `: IngressReady=Unknown RolloutInProgress "A gradual rollout of the latest revision(s) is in progress."`,
		wantKind:    "Route IngressReady=Unknown RolloutInProgress",
		wantLines:   []string{"    → KIngress " + svcName + ": Ready, serving a step of a gradual rollout: 60% → " + rev + " (latest), 40% → " + svcName + "-00002 (latest)"},
	}, {
		// A Route whose status has no conditions yet, seen before its first status
		// write while its KIngress is already Ready (TestSamples met it).
		name: "a Route with no conditions yet",
		chain: func() Chain {
			c := readyAll()
			c.Route.Status.Status = duck.Status{}
			c.Service.Status.Status = status(1, cond(duck.ConditionReady, U, "", ""),
				cond(v1.ServiceConditionConfigurationsReady, T, "", ""), cond(v1.ServiceConditionRoutesReady, U, "", ""))
			return c
		},
		wantCulprit: "Route " + svcName + ": not reconciled (observedGeneration 0, generation 1)",
		wantKind:    "Route not reconciled",
		wantLines:   []string{"    → KIngress " + svcName + ": Ready (generation 1), the Route has not seen it yet"},
	}, {
		name: "ready but never routed",
		chain: func() Chain {
			c := readyAll()
			c.Probed, c.LastAnswer = true, `404 ferry: no route for host "x.ns.example.com"`
			return c
		},
		wantCulprit: `gateway: no routed answer for ` + svcName + `: 404 ferry: no route for host "x.ns.example.com"`,
		wantKind:    "gateway not routing",
		wantLines:   []string{"ksvc " + svcName + ": Ready", "  → Route " + svcName + ": Ready", "    → KIngress " + svcName + ": Ready", "  → gateway: never routed"},
	}, {
		name: "ready too late",
		chain: func() Chain {
			c := readyAll()
			c.Deadline, c.ReadyAfter = 10*time.Second, 12500*time.Millisecond
			return c
		},
		wantCulprit: "ksvc " + svcName + ": Ready, but only after 12.5s (deadline 10.0s)",
		wantKind:    "ksvc Ready late",
	}, {
		name: "not created",
		chain: func() Chain {
			return Chain{Name: svcName, CreateError: "the server is currently unable to handle the request"}
		},
		wantCulprit: "ksvc " + svcName + ": not created: the server is currently unable to handle the request",
		wantKind:    "ksvc not created",
	}, {
		name:        "not found",
		chain:       func() Chain { return Chain{Name: svcName} },
		wantCulprit: "ksvc " + svcName + ": not found (deleted, or never seen by the watch)",
		wantKind:    "ksvc not found",
	}, {
		name: "KIngress refused by the API server",
		chain: func() Chain {
			c := readyAll()
			c.Ingress = nil
			c.Service.Status.Status = status(1, cond(duck.ConditionReady, F, duck.ReasonCreationFailed, "forbidden"), cond(v1.ServiceConditionConfigurationsReady, T, "", ""),
				cond(v1.ServiceConditionRoutesReady, F, duck.ReasonCreationFailed, "forbidden"))
			c.Route.Status.Status = status(1, cond(duck.ConditionReady, F, duck.ReasonCreationFailed, ""), cond(v1.RouteConditionAllTrafficAssigned, T, "", ""),
				cond(v1.RouteConditionIngressReady, F, duck.ReasonCreationFailed, `ingresses.networking.internal.knative.dev "x" is forbidden: exceeded quota`))
			return c
		},
		wantCulprit: "KIngress " + svcName + `: missing (the Route's IngressReady=False CreationFailed "ingresses.networking.internal.knative.dev \"x\" is forbidden: exceeded quota")`,
		wantKind:    "KIngress missing",
	}, {
		name: "Configuration root: latest Revision fails",
		chain: func() Chain {
			c := waitingChain()
			c.Root, c.Service, c.Route = KindConfiguration, nil, nil
			return c
		},
		wantCulprit: "Pod " + svcName + "-00001-deployment-7d9f-x2x: Pending",
		wantKind:    "Pod Pending PodScheduled=False Unschedulable",
		wantLines:   []string{"Configuration " + svcName + ": Ready=Unknown Deploying", "  → Revision " + svcName + "-00001: "},
	}, {
		name: "Revision root, Ready",
		chain: func() Chain {
			c := readyAll()
			c.Root = KindRevision
			return c
		},
		wantLines: []string{"Revision " + svcName + "-00001: Ready"},
	}, {
		name: "Route root: waits for its Configuration",
		chain: func() Chain {
			c := waitingChain()
			c.Root, c.Service = KindRoute, nil
			return c
		},
		wantCulprit: "Pod " + svcName + "-00001-deployment-7d9f-x2x: Pending",
		wantKind:    "Pod Pending PodScheduled=False Unschedulable",
		wantLines:   []string{"Route " + svcName + ": ", "  → Configuration " + svcName, "      → Deployment", "  → KIngress " + svcName + ": missing"},
	}, {
		name: "Route root: Ready but not routed",
		chain: func() Chain {
			c := readyAll()
			c.Root, c.Probed, c.LastAnswer = KindRoute, true, "404 ferry: no route"
			return c
		},
		wantCulprit: "gateway: no routed answer for Route " + svcName + ": 404 ferry: no route",
		wantKind:    "gateway not routing",
		wantLines:   []string{"Route " + svcName + ": Ready", "  → KIngress " + svcName + ": Ready", "  → gateway: did not route"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			e := Explain(tc.chain())
			text := e.String()
			if !strings.HasPrefix(e.Culprit, tc.wantCulprit) {
				t.Errorf("culprit\n got  %s\n want %s", e.Culprit, tc.wantCulprit)
			}
			if e.Kind != tc.wantKind {
				t.Errorf("kind = %q, want %q", e.Kind, tc.wantKind)
			}
			rest := text
			for _, l := range tc.wantLines {
				i := strings.Index(rest, l)
				if i < 0 {
					t.Errorf("missing (in order) %q in\n%s", l, text)
					continue
				}
				rest = rest[i+len(l):]
			}
			if t.Failed() {
				t.Logf("explanation:\n%s", text)
			}
		})
	}
}

// TestOwnConditionSaysWhy: an object that could not make its child says why itself,
// so it is the culprit rather than the child that is not there.
func TestOwnConditionSaysWhy(t *testing.T) {
	taken := waitingChain()
	taken.Revisions, taken.Configuration.Status.LatestCreatedRevisionName = nil, ""
	taken.Configuration.Status.Status = status(1, cond(duck.ConditionReady, F, v1.ReasonRevisionNameTaken,
		`The revision name "x-blue" is taken by a Revision that is not generation 1 of this Configuration.`))
	r := Build(taken)
	if r.Kind != "Configuration Ready=False RevisionNameTaken" || !strings.Contains(strings.Join(r.Advice, "\n"), "change spec.template.metadata.name") {
		t.Errorf("a Revision name taken:\n%s", r)
	}

	placeholder := readyAll()
	placeholder.Service.Status.Status = status(1, cond(duck.ConditionReady, F, duck.ReasonNotOwned, ""),
		cond(v1.ServiceConditionConfigurationsReady, T, "", ""), cond(v1.ServiceConditionRoutesReady, F, duck.ReasonNotOwned, ""))
	msg := duck.NotOwnedMessage("placeholder Service", svcName)
	placeholder.Route.Status.Status = status(1, cond(duck.ConditionReady, F, duck.ReasonNotOwned, msg), cond(v1.RouteConditionAllTrafficAssigned, T, "", ""),
		cond(v1.RouteConditionIngressReady, F, duck.ReasonNotOwned, msg))
	placeholder.Ingress, placeholder.Namespace = nil, "ns"
	r = Build(placeholder)
	if !strings.HasPrefix(r.Culprit, "Route "+svcName+": IngressReady=False NotOwned") || !strings.Contains(strings.Join(r.Advice, "\n"), "`kubectl get service "+svcName+" -n ns -o yaml`") {
		t.Errorf("a placeholder Service name taken:\n%s", r)
	}

	downgraded := healthy()
	*downgraded.Route.Status.GetCondition(v1.RouteConditionCertificateProvisioned) = cond(v1.RouteConditionCertificateProvisioned, T, v1.ReasonHTTPDowngrade,
		"Certificate route-abc is not ready downgrade HTTP.")
	if r := Build(downgraded); !r.OK || !strings.Contains(r.String(), "HTTP only (HTTPDowngrade): Certificate route-abc is not ready downgrade HTTP.") {
		t.Errorf("a Route served on HTTP while its Certificate is not ready:\n%s", r)
	}
}
