package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// TestInstallAsPods installs Ferry onto `ferry up --cluster-only` as a user installs it
// on a cluster, `kubectl apply --server-side -k config/`, with the node of real programs
// running config/'s images as Ferry's own binary: the controller (serving the admission
// webhooks through its Service) and the gateway are pods that reach the API server by
// in-cluster configuration, with the installed RBAC and leader election. A real
// program's Service is then admitted by the webhook, Ready, and answered through the
// installed gateway's Service; a Service the webhook refuses is refused with the field
// named. Deleting the leading controller's pod moves leadership to another pod, after
// which new work is Ready. Stopping ferry up while a pod drains leaves no process of
// any pod.
func TestInstallAsPods(t *testing.T) {
	needIsolation(t)
	t.Parallel()
	dir := t.TempDir()
	program := buildHello(t, dir)
	objs := kustomize(t, "../../config")
	// Each of config/'s images runs Ferry's binary, under a name of its own so that
	// its processes can be counted (the images `make image` builds hold the same
	// program, built without the embedded cluster).
	installed := filepath.Join(dir, fmt.Sprintf("ferry-it-installed-%d", time.Now().UnixNano()%100000))
	if err := os.Symlink(ferryBinary(t), installed); err != nil {
		t.Fatal(err)
	}
	upArgs, _ := programsUpArgs(t, dir, program, "--cluster-only")
	for _, image := range deploymentImages(t, objs) {
		upArgs = append(upArgs, "--local-image", image+"="+installed)
	}
	up, c, _ := startFerryUp(t, "ferry up --cluster-only", upArgs)
	ctx := context.Background()

	start := time.Now()
	for _, obj := range objs {
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner("kubectl")); err != nil {
			t.Fatalf("kubectl apply --server-side: %s %s: %v", obj.GetKind(), obj.GetName(), err)
		}
	}
	for _, name := range []string{"ferry-controller", "ferry-gateway"} {
		waitDeploymentAvailable(t, c, systemNamespace, name)
	}
	if n := processesOf(t, installed); n != 4 {
		t.Errorf("%d processes of Ferry's binary run in pods, want 4 (two controllers, two gateways)", n)
	}
	t.Logf("config/ applied; the controller and gateway pods Ready %v later", time.Since(start).Round(time.Millisecond))

	// The installed gateway's Service, through this cluster's kube-proxy.
	gateway := &corev1.Service{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: systemNamespace, Name: "ferry-gateway"}, gateway); err != nil {
		t.Fatal(err)
	}
	gatewayAddr := gateway.Spec.ClusterIP + ":80"
	node := nodeClient(t, dataDirOf(t, upArgs))

	// The webhook, served by the controller pods behind Service ferry-webhook, defaults
	// what it admits and refuses what Knative refuses.
	real := ksvc("default", "real", "example.com/real:1")
	if err := c.Create(ctx, real); err != nil {
		t.Fatal(err)
	}
	if real.Spec.Template.Spec.TimeoutSeconds == nil {
		t.Error("the created Service has no timeoutSeconds: the admission webhook did not default it")
	}
	bad := ksvc("default", "bad", "example.com/real:1")
	bad.Spec.Template.ObjectMeta.Annotations = map[string]string{"autoscaling.knative.dev/min-scale": "-1"}
	if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "autoscaling.knative.dev/min-scale") {
		t.Errorf("a Service with min-scale -1: got %v, want the webhook's refusal naming the annotation", err)
	}
	waitCondition(t, c, real, duck.ConditionReady, corev1.ConditionTrue, "", readyTimeout)
	waitAnswer(t, node, gatewayAddr, "real.default.example.com", "Revision real-00001")

	// The leader's pod deleted: another pod leads, and a new Service is Ready and
	// answers after it.
	leader := controllerLeader(t, c)
	deleted := time.Now()
	if err := c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: systemNamespace, Name: leader}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() (bool, string) {
		now := controllerLeader(t, c)
		return now != "" && now != leader, fmt.Sprintf("the leader is %q, the deleted pod was %s", now, leader)
	})
	t.Logf("leader pod %s deleted; %s leads %v later", leader, controllerLeader(t, c), time.Since(deleted).Round(time.Millisecond))
	after := ksvc("default", "after", "example.com/real:1")
	if err := c.Create(ctx, after); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, after, duck.ConditionReady, corev1.ConditionTrue, "", readyTimeout)
	waitAnswer(t, node, gatewayAddr, "after.default.example.com", "Revision after-00001")
	t.Logf("a new Service answered %v after the leader's pod was deleted", time.Since(deleted).Round(time.Millisecond))

	// A pod still leaving when ferry up stops: with no gateway in ferry up's process,
	// nothing cuts its preStop drain short, and ferry up stops all the same.
	if err := c.Delete(ctx, after); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() (bool, string) {
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace("default"), client.MatchingLabels{v1.RevisionLabelKey: "after-00001"}); err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil {
				return true, ""
			}
		}
		return false, fmt.Sprintf("none of the %d pods of after-00001 is leaving", len(pods.Items))
	})
	stopFerryUp(t, up, installed)
	if n := processesOf(t, program); n != 0 {
		t.Errorf("%d processes of the program outlive ferry up", n)
	}
}

// deploymentImages are the images of config/'s Deployments, as the kustomization
// names them.
func deploymentImages(t *testing.T, objs []*unstructured.Unstructured) []string {
	t.Helper()
	var images []string
	for _, obj := range objs {
		if obj.GetKind() != "Deployment" {
			continue
		}
		// kustomize's maps hold plain ints, which unstructured's Nested* cannot copy.
		spec := obj.Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)
		for _, c := range spec["containers"].([]any) {
			images = append(images, c.(map[string]any)["image"].(string))
		}
	}
	if len(images) != 2 {
		t.Fatalf("config/'s Deployments have images %v, want the controller's and the gateway's", images)
	}
	return images
}

// waitDeploymentAvailable waits until every replica of the Deployment is updated and
// available, each pod on the node of real programs.
func waitDeploymentAvailable(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	eventually(t, 2*time.Minute, func() (bool, string) {
		d := &appsv1.Deployment{}
		if err := c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return false, err.Error()
		}
		want := *d.Spec.Replicas
		s := d.Status
		return s.ObservedGeneration == d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want,
			fmt.Sprintf("Deployment %s: %d updated, %d available of %d: %v", name, s.UpdatedReplicas, s.AvailableReplicas, want, s.Conditions)
	})
}

// controllerLeader is the pod that holds the controller's leader election Lease, or ""
// when none does.
func controllerLeader(t *testing.T, c client.Client) string {
	t.Helper()
	lease := &coordinationv1.Lease{}
	if err := c.Get(context.Background(), client.ObjectKey{Namespace: systemNamespace, Name: "ferry-controller"}, lease); err != nil {
		return ""
	}
	holder := ""
	if lease.Spec.HolderIdentity != nil {
		// controller-runtime's identity is the pod's hostname, then _ and a UUID.
		holder, _, _ = strings.Cut(*lease.Spec.HolderIdentity, "_")
	}
	return holder
}

// waitAnswer waits until the gateway at addr, asked through client, answers host with
// 200 and a body that contains want.
func waitAnswer(t *testing.T, client *http.Client, addr, host, want string) {
	t.Helper()
	eventually(t, readyTimeout, func() (bool, string) {
		code, body := getHostWith(client, addr, host)
		return code == 200 && strings.Contains(body, want), fmt.Sprintf("%s answered %d %q", host, code, body)
	})
}

// dataDirOf is the --data-dir of ferry up's arguments.
func dataDirOf(t *testing.T, args []string) string {
	t.Helper()
	for i, a := range args[:len(args)-1] {
		if a == "--data-dir" {
			return args[i+1]
		}
	}
	t.Fatalf("no --data-dir in %v", args)
	return ""
}
