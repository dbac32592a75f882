package integration

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/clusternet"
)

// TestPodNetwork runs `ferry up` with a real program (netprobe) as two Knative
// Services, a public front end and a cluster-local back end, and checks from inside the
// front end's pod what a program on a cluster relies on: the back end's cluster names
// resolve by the pod's search paths; a call to http://backend.default.svc.cluster.local
// is answered by Revision backend-00001 through the gateway, also once the back end is
// at zero pods; the host's external listener does not answer the cluster-local one;
// the back end's traffic tag is called by its own Service's name, <tag>-<route>, and is
// cluster-local as the back end is; rest.InClusterConfig reaches the API server with the pod's ServiceAccount and its
// rights; the host's own listeners answer at the host's address; a Service without a
// ready endpoint refuses the connection and a name that does not exist does not
// resolve; a pod's env from status.podIP is its address. Stopping ferry up leaves no
// namespace or cgroup of the node behind.
func TestPodNetwork(t *testing.T) {
	needIsolation(t)
	t.Parallel()
	dir := t.TempDir()
	program := filepath.Join(dir, "ferry-it-netprobe")
	if out, err := exec.Command("go", "build", "-o", program, "./netprobe").CombinedOutput(); err != nil {
		t.Fatalf("building netprobe: %v\n%s", err, out)
	}
	upArgs, gateway := programsUpArgs(t, dir, program)
	up, c, cs := startFerryUp(t, "ferry up", upArgs)
	hostAddr := regexp.MustCompile(`this host is (\S+) from them`).FindStringSubmatch(up.Output())
	if hostAddr == nil {
		t.Fatalf("ferry up does not say where pods reach the host:\n%s", up.Output())
	}
	ctx := context.Background()

	// The default ServiceAccount of default may read ConfigMaps there, and nothing else.
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "probe-data"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().Roles("default").Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "configmap-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings("default").Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "configmap-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "configmap-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "default", Namespace: "default"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	backend := ksvc("default", "backend", "example.com/real:1")
	backend.Labels = map[string]string{"networking.knative.dev/visibility": "cluster-local"}
	backend.Spec.Template.ObjectMeta.Annotations = map[string]string{"autoscaling.knative.dev/window": "6s"}
	// A tag of a cluster-local Service is cluster-local too, at <tag>-<route>.
	backend.Spec.Traffic = []v1.TrafficTarget{{LatestRevision: ptr(true), Percent: ptr(int64(100))}, {LatestRevision: ptr(true), Percent: ptr(int64(0)), Tag: "current"}}
	if err := c.Create(ctx, backend); err != nil {
		t.Fatal(err)
	}
	// The front end reads its pod's address by the downward API, which Knative allows
	// with kubernetes.podspec-fieldref on.
	frontend := ksvc("default", "frontend", "example.com/real:1")
	frontend.Spec.Template.ObjectMeta.Annotations = map[string]string{"autoscaling.knative.dev/min-scale": "1"}
	frontend.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "POD_IP",
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
	setFeatures(t, cs, map[string]string{"kubernetes.podspec-fieldref": "Enabled"})
	createOnceAdmitted(t, c, frontend)
	for _, svc := range []*v1.Service{backend, frontend} {
		waitCondition(t, c, svc, duck.ConditionReady, corev1.ConditionTrue, "", readyTimeout)
	}
	// ask sends path to the front end's pod through the external listener.
	ask := func(path string) (int, string) {
		t.Helper()
		return getPath(t, gateway, "frontend.default.example.com", path)
	}

	// status.podIP is the pod's address, as the pod's status says.
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: v1.ServiceLabelKey + "=frontend"})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.PodIP == "" {
		t.Fatalf("the front end's pods: %v, %v", pods, err)
	}
	if code, body := ask("/env?name=POD_IP"); code != http.StatusOK || body != pods.Items[0].Status.PodIP+"\n" {
		t.Errorf("POD_IP in the front end's pod is %d %q, want its address %s", code, body, pods.Items[0].Status.PodIP)
	}

	// Cluster DNS: the back end's names, by the search paths of a pod of default,
	// resolve (through its placeholder's CNAME) to the gateway's ClusterIP.
	for _, name := range []string{"backend.default.svc.cluster.local", "backend.default", "backend"} {
		code, body := ask("/resolve?name=" + name)
		addr, err := netip.ParseAddr(strings.Fields(body + " x")[0])
		if code != http.StatusOK || err != nil || !clusternet.ServiceCIDR.Contains(addr) {
			t.Errorf("%s resolves in the pod to %d %q: want a ClusterIP of %s", name, code, body, clusternet.ServiceCIDR)
		}
	}
	if code, body := ask("/resolve?name=nosuch.default.svc.cluster.local"); code != http.StatusBadGateway || !strings.Contains(body, "no such host") {
		t.Errorf("a name of no Service resolves in the pod: %d %q", code, body)
	}

	// Service to service through the gateway, by the cluster names the Route's
	// KIngress routes, as Knative's (<name>.<ns> and the full name; a bare <name> is
	// not one of its hosts).
	for _, url := range []string{"http://backend.default.svc.cluster.local/", "http://backend.default/"} {
		if code, body := ask("/call?url=" + url); code != http.StatusOK || !strings.HasPrefix(body, "200 Revision backend-00001") {
			t.Errorf("the front end's call of %s: %d %q", url, code, body)
		}
	}
	// A cluster-local Service is not answered from outside the cluster.
	if code, body := getHost(t, gateway, "backend.default.svc.cluster.local"); code != http.StatusNotFound {
		t.Errorf("the external listener answers the cluster-local back end: %d %q", code, body)
	}

	// The back end's tag: its own Service, <tag>-<route>, that a pod calls by its
	// cluster name and the tagged Revision answers; in-cluster only, as its Service is.
	if err := c.Get(ctx, client.ObjectKey{Namespace: "default", Name: "backend"}, backend); err != nil {
		t.Fatal(err)
	}
	if tr := backend.Status.Traffic; len(tr) != 2 || tr[1].Tag != "current" || tr[1].URL != "http://current-backend.default.svc.cluster.local" {
		t.Errorf("the back end's traffic %+v: want tag current at http://current-backend.default.svc.cluster.local", tr)
	}
	if code, body := ask("/call?url=http://current-backend.default.svc.cluster.local/"); code != http.StatusOK || !strings.HasPrefix(body, "200 Revision backend-00001") {
		t.Errorf("the front end's call of the back end's tag: %d %q", code, body)
	}
	for _, host := range []string{"current-backend.default.svc.cluster.local", "current-backend.default.example.com"} {
		if code, body := getHost(t, gateway, host); code != http.StatusNotFound {
			t.Errorf("the external listener answers the cluster-local back end's tag at %s: %d %q", host, code, body)
		}
	}

	// From zero: the gateway holds the front end's call while a pod of the back end starts.
	eventually(t, time.Minute, func() (bool, string) {
		left, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: v1.RevisionLabelKey + "=backend-00001"})
		if err != nil {
			t.Fatal(err)
		}
		return len(left.Items) == 0, fmt.Sprintf("%d pods of backend-00001 left", len(left.Items))
	})
	if code, body := ask("/call?url=http://backend.default.svc.cluster.local/"); code != http.StatusOK || !strings.HasPrefix(body, "200 Revision backend-00001") {
		t.Errorf("the front end's call of the back end at zero: %d %q", code, body)
	}

	// The API server, as client-go's in-cluster configuration finds it: the kubernetes
	// Service, the pod's ServiceAccount token and the cluster's CA.
	if code, body := ask("/configmaps?namespace=default"); code != http.StatusOK || !strings.Contains(body, "probe-data") {
		t.Errorf("the pod lists the ConfigMaps it may read: %d %q", code, body)
	}
	if code, body := ask("/configmaps?namespace=kube-system"); code != http.StatusBadGateway || !strings.Contains(body, "forbidden") {
		t.Errorf("the pod lists the ConfigMaps it may not read: %d %q", code, body)
	}

	// The host's own listeners, at the host's address from the pod.
	ln, err := net.Listen("tcp", net.JoinHostPort(hostAddr[1], "0"))
	if err != nil {
		t.Fatal(err)
	}
	host := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "the host") })}
	go host.Serve(ln)
	defer host.Close()
	if code, body := ask("/call?url=http://" + ln.Addr().String() + "/"); code != http.StatusOK || body != "200 the host" {
		t.Errorf("the pod's call of a listener of the host: %d %q", code, body)
	}

	// A Service without a ready endpoint refuses the connection, as kube-proxy's rules
	// reject it, rather than leaving it to time out.
	nobody := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "nobody"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "nobody"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := cs.CoreV1().Services("default").Create(ctx, nobody, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, func() (bool, string) {
		code, body := ask("/call?url=http://nobody.default.svc.cluster.local/")
		return code == http.StatusBadGateway && strings.Contains(body, "connection refused"), fmt.Sprintf("%d %q", code, body)
	})

	// Stopping ferry up takes the node's network with it.
	stopFerryUp(t, up, program)
	plan := clusternet.PlanFor(filepath.Join(dir, "data", "programs"))
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), plan.Prefix) {
		t.Errorf("network namespaces of the node outlive ferry up:\n%s", out)
	}
	// And its containers' cgroups, the parent runc made in each hierarchy included.
	left, _ := filepath.Glob(filepath.Join("/sys/fs/cgroup", "*", plan.Prefix))
	if _, err := os.Stat(filepath.Join("/sys/fs/cgroup", plan.Prefix)); err == nil { // cgroup v2
		left = append(left, filepath.Join("/sys/fs/cgroup", plan.Prefix))
	}
	if len(left) > 0 {
		t.Errorf("cgroups of the node outlive ferry up: %v", left)
	}
}

// getPath sends GET path for host to the gateway at addr.
func getPath(t *testing.T, addr, host, path string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+path, nil)
	req.Host = host
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
