package explain

import (
	"strings"
	"testing"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

func TestAdvise(t *testing.T) {
	routeRefused := func() Chain {
		c := waitingChain()
		*c.Route.Status.GetCondition(v1.RouteConditionIngressReady) = duck.Condition{Type: v1.RouteConditionIngressReady,
			Status: F, Reason: duck.ReasonCreationFailed, Message: "ingresses.networking.internal.knative.dev is forbidden"}
		return c
	}
	configurationMissing := func() Chain {
		c := waitingChain()
		*c.Route.Status.GetCondition(v1.RouteConditionAllTrafficAssigned) = duck.Condition{Type: v1.RouteConditionAllTrafficAssigned,
			Status: F, Reason: v1.ReasonConfigurationMissing, Message: `Configuration "nope" referenced in traffic not found.`}
		return c
	}
	deploymentTaken := func() Chain {
		c := waitingChain()
		c.Revisions[0].Status.Conditions[1] = duck.Condition{Type: v1.RevisionConditionResourcesAvailable, Status: F, Reason: duck.ReasonNotOwned,
			Message: duck.NotOwnedMessage("Deployment", svcName+"-00001-deployment")}
		return c
	}
	certificateTaken := func() Chain {
		c := waitingChain()
		*c.Route.Status.GetCondition(v1.RouteConditionCertificateProvisioned) = duck.Condition{Type: v1.RouteConditionCertificateProvisioned,
			Status: F, Reason: v1.ReasonCertificateNotOwned, Message: "There is an existing certificate route-abc that we don't own."}
		return c
	}
	for _, tc := range []struct {
		kind  string
		chain func() Chain
		want  string
	}{
		{"Pod Pending PodScheduled=False Unschedulable", waitingChain, "No node can run the pod"},
		{"Pod Running Ready=False ContainersNotReady OOMKilled", waitingChain, "runs out of memory"},
		{"Pod Pending; container user-container waiting: ErrImageBuild go build example.com/x: no Go files", waitingChain, "could not make a program of"},
		{"Pod Pending; container user-container waiting: BuildingImage go build example.com/x", waitingChain, "is building the Go package"},
		{"Pod Pending; container user-container waiting: NeedsIsolation volume config at /etc/app", waitingChain, "cannot mount volumes"},
		{"Pod Running Ready=False ContainersNotReady Error", waitingChain, "`kubectl logs -n ns POD -c user-container --previous`"},
		{"Revision ContainerHealthy=False ExitCode1", waitingChain, "its log says why"},
		{`Pod Pending; container user-container waiting: CreateContainerConfigError volume "config": configmap "settings": configmaps "settings" not found`,
			waitingChain, "Create it, or mark it optional"},
		{"Revision ResourcesAvailable=False CreateContainerConfigError", waitingChain, "names the volume or env var"},
		{"Revision ResourcesAvailable=False CreationFailed", waitingChain, "The API server refused an object Ferry creates"},
		{"Revision ResourcesAvailable=False ProgressDeadlineExceeded", waitingChain, "progress deadline"},
		{"KIngress missing", routeRefused, "The API server refused an object Ferry creates"},
		{"KIngress missing", waitingChain, "The Route has not created its KIngress"},
		{"KIngress Ready=False InternalError", waitingChain, "Is the gateway running?"},
		{"Route AllTrafficAssigned=False ConfigurationMissing (not found)", configurationMissing, `Configuration "nope" does not exist in namespace ns`},
		{"not reconciled", waitingChain, "Is Ferry's controller running?"},
		{"Configuration not owned", waitingChain, "`kubectl get configuration " + svcName + " -n ns -o yaml`"},
		{"Deployment no pods", waitingChain, "`kubectl describe rs -n ns -l serving.knative.dev/revision=" + svcName + "-00001`"},
		{"ksvc RoutesReady=Unknown TrafficNotMigrated", waitingChain, "Everything below is Ready"},
		{"Revision ResourcesAvailable=False NotOwned", deploymentTaken, "Another Deployment named \"" + svcName + "-00001-deployment\" exists and Ferry does not control it: `kubectl get deployment " + svcName + "-00001-deployment -n ns -o yaml`"},
		{"Route CertificateProvisioned=False CertificateNotOwned", certificateTaken, "`kubectl get certificates.networking.internal.knative.dev route-abc -n ns -o yaml`"},
		{"Route IngressReady=Unknown RolloutInProgress", waitingChain, "Not stuck: a gradual rollout"},
		{"Route CertificateProvisioned=Unknown CertificateNotReady", waitingChain, "`kubectl get kcert -n ns`"},
		{"Route CertificateProvisioned=False CertificateProvisionFailed", waitingChain, "`kubectl get kcert -n ns`"},
		{"something new", waitingChain, "from the bottom up"},
	} {
		c := tc.chain()
		c.Namespace = "ns"
		got := strings.Join(Advise(c, Explanation{Kind: tc.kind}), "\n")
		if !strings.Contains(got, tc.want) {
			t.Errorf("Advise(%q) = %q, want it to hold %q", tc.kind, got, tc.want)
		}
	}
}
