package integration

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// TestProgramsOnFerryUp runs `ferry up --local-image` as a user would, with a real Go
// HTTP program (examples/hello) for one image and /bin/false for another, and checks
// what the user sees: a Service of the program with min-scale 2 is Ready and answered
// by two processes that see K_REVISION and their env; kubectl logs shows what the
// program printed; scaled to zero it stays Ready and a request starts it; stopping
// ferry up stops every process and starting it again runs them again; deleting the Service leaves no process of it; a program that exits
// 1 at start fails its Revision with the exit code. It needs runc containers
// (needIsolation): --program-isolation=runc makes ferry up refuse rather than fall
// back to plain processes.
func TestProgramsOnFerryUp(t *testing.T) {
	needIsolation(t)
	t.Parallel()
	dir := t.TempDir()
	program := buildHello(t, dir)
	upArgs, gateway := programsUpArgs(t, dir, program, "--local-image", "example.com/crash:1=/bin/false",
		"--program-isolation", "runc")
	up, c, cs := startFerryUp(t, "ferry up", upArgs)
	if !strings.Contains(up.Output(), "run as processes on node ferry-programs") {
		t.Errorf("ferry up does not say that programs run:\n%s", up.Output())
	}
	ctx := context.Background()

	// Two pods, each its own process on :8080 in its own network namespace: the
	// gateway spreads requests over both.
	svc := createTwoPodService(t, c, gateway, "pod real-00001-deployment-")

	// kubectl logs reaches the program's output through the node's kubelet API.
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: v1.RevisionLabelKey + "=real-00001"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "ferry-programs" {
			t.Errorf("pod %s is on node %q", p.Name, p.Spec.NodeName)
		}
		logs, err := cs.CoreV1().Pods("default").GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("logs of %s: %v", p.Name, err)
		}
		if !strings.Contains(string(logs), "hello: revision real-00001 listening on :8080") || !strings.Contains(string(logs), "GET / from") {
			t.Errorf("logs of %s: %q", p.Name, logs)
		}
	}
	if n := processesOf(t, program); n != 2 {
		t.Errorf("%d processes of the program run, want 2", n)
	}

	// Scaled to zero, the program's pods leave by SIGTERM and the Revision stays
	// Ready; the next request starts a process again and is answered by it.
	idle := ksvc("default", "idle", "example.com/real:1")
	idle.Spec.Template.ObjectMeta.Annotations = map[string]string{"autoscaling.knative.dev/window": "6s"}
	if err := c.Create(ctx, idle); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, idle, duck.ConditionReady, corev1.ConditionTrue, "", readyTimeout)
	eventually(t, time.Minute, func() (bool, string) {
		left, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: v1.RevisionLabelKey + "=idle-00001"})
		if err != nil {
			t.Fatal(err)
		}
		return len(left.Items) == 0, fmt.Sprintf("%d pods of idle-00001 left", len(left.Items))
	})
	idleRev := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "idle-00001"}}
	get(t, c, "default", idleRev.Name, idleRev)
	if ready := idleRev.Status.GetCondition(duck.ConditionReady); ready == nil || !ready.IsTrue() {
		t.Errorf("a Revision scaled to zero: Ready %+v", ready)
	}
	if code, body := getHost(t, gateway, "idle.default.example.com"); code != http.StatusOK || !strings.Contains(body, "Revision idle-00001") {
		t.Errorf("a request to the Revision at zero: %d %q", code, body)
	}

	// A program that exits 1 at once fails its Revision with the exit code.
	crash := ksvc("default", "crash", "example.com/crash:1")
	if err := c.Create(ctx, crash); err != nil {
		t.Fatal(err)
	}
	rev := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "crash-00001"}}
	eventually(t, readyTimeout, func() (bool, string) {
		if !get(t, c, rev.Namespace, rev.Name, rev) {
			return false, "no Revision yet"
		}
		ready := rev.Status.GetCondition(duck.ConditionReady)
		return ready != nil && ready.IsFalse() && ready.Reason == v1.ExitCodeReason(1) && strings.Contains(ready.Message, "exit code 1"),
			fmt.Sprintf("Ready %+v", ready)
	})

	// Stopping ferry up stops every process; started again on its data directory, it
	// runs the pods bound to the node again, and the Service answers from them. The API
	// server listens on another port now: the clients are the new kubeconfig's.
	stopFerryUp(t, up, program)
	up, c, cs = startFerryUp(t, "ferry up, again", upArgs)
	eventually(t, 2*time.Minute, func() (bool, string) {
		if up.Exited() {
			t.Fatalf("ferry up exited:\n%s", up.Output())
		}
		if n := processesOf(t, program); n != 2 {
			return false, fmt.Sprintf("%d processes of the program run, want 2", n)
		}
		code, body := getHostErr(gateway, "real.default.example.com")
		return code == http.StatusOK && strings.Contains(body, "Revision real-00001"), fmt.Sprintf("answer %d %q", code, body)
	})

	// Deleting the Service stops its processes: the pods leave as soon as no request is
	// in flight, not at the end of their preStop sleep, and are gone from the API.
	deleteAndWaitGone(t, c, cs, svc, program)
}

// buildHello builds examples/hello into dir, under a name of its own so that its
// processes can be counted on the machine.
func buildHello(t *testing.T, dir string) string {
	t.Helper()
	program := filepath.Join(dir, fmt.Sprintf("ferry-it-hello-%d", time.Now().UnixNano()%100000))
	if out, err := exec.Command("go", "build", "-o", program, "../../examples/hello").CombinedOutput(); err != nil {
		t.Fatalf("building examples/hello: %v\n%s", err, out)
	}
	return program
}

// programsUpArgs are ferry up's arguments for a data directory in dir, gateways on
// loopback addresses of their own, no dashboard (its port is one for all), and program for the image example.com/real:1, then
// extra; gateway is the external gateway's address.
func programsUpArgs(t *testing.T, dir, program string, extra ...string) (args []string, gateway string) {
	t.Helper()
	addrs := loopbackAddrs(t, 3)
	return append([]string{"up", "--data-dir", filepath.Join(dir, "data"),
		"--gateway-addr", addrs[0], "--gateway-local-addr", addrs[1], "--gateway-https-addr", addrs[2],
		"--dashboard-addr", "0", "--local-image", "example.com/real:1=" + program}, extra...), addrs[0]
}

// startFerryUp starts ferry up with args, waits until it says it is up, and returns
// clients for its cluster.
func startFerryUp(t *testing.T, name string, args []string) (*process, client.Client, *kubernetes.Clientset) {
	t.Helper()
	up := startProcess(t, name, nil, args...)
	c, cs := waitFerryUp(t, name, up)
	return up, c, cs
}

// waitFerryUp waits until the ferry up process up says it is up, and returns clients
// for its cluster.
func waitFerryUp(t *testing.T, name string, up *process) (client.Client, *kubernetes.Clientset) {
	t.Helper()
	kubeconfig := regexp.MustCompile(`export KUBECONFIG=(\S+)`)
	eventually(t, 2*time.Minute, func() (bool, string) {
		if up.Exited() {
			t.Fatalf("%s exited:\n%s", name, up.Output())
		}
		return kubeconfig.MatchString(up.Output()), name + " has not said it is up"
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig.FindStringSubmatch(up.Output())[1])
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	return c, kubernetes.NewForConfigOrDie(cfg)
}

// stopFerryUp stops ferry up with SIGTERM and checks that no process of program
// outlives it.
func stopFerryUp(t *testing.T, up *process, program string) {
	t.Helper()
	up.signal(syscall.SIGTERM)
	select {
	case <-up.done:
	case <-time.After(time.Minute):
		t.Fatal("ferry up did not stop within a minute of SIGTERM")
	}
	if n := processesOf(t, program); n != 0 {
		t.Errorf("%d processes of the program outlive ferry up", n)
	}
}

// createTwoPodService creates the Service real of example.com/real:1 with min-scale 2
// and env TARGET=integration, waits until it is Ready, and checks that the gateway
// spreads 40 requests over its two pods' programs (the answers differ by pod), each
// answer naming K_REVISION and, after it, podPrefix.
func createTwoPodService(t *testing.T, c client.Client, gateway, podPrefix string) *v1.Service {
	t.Helper()
	svc := ksvc("default", "real", "example.com/real:1")
	svc.Spec.Template.ObjectMeta.Annotations = map[string]string{"autoscaling.knative.dev/min-scale": "2"}
	svc.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "TARGET", Value: "integration"}}
	if err := c.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, svc, duck.ConditionReady, corev1.ConditionTrue, "", readyTimeout)
	answers := map[string]int{}
	for range 40 {
		code, body := getHost(t, gateway, "real.default.example.com")
		if code != http.StatusOK || !strings.HasPrefix(body, "Hello integration! Revision real-00001, "+podPrefix) {
			t.Fatalf("answer %d %q: want the program's, with its env and K_REVISION", code, body)
		}
		answers[body]++
	}
	if len(answers) != 2 {
		t.Errorf("answers from %d pods, want 2: %v", len(answers), answers)
	}
	return svc
}

// deleteAndWaitGone deletes svc and waits until no process of program runs and no
// pod of its first Revision is left.
func deleteAndWaitGone(t *testing.T, c client.Client, cs *kubernetes.Clientset, svc *v1.Service, program string) {
	t.Helper()
	ctx := context.Background()
	if err := c.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	rev := svc.Name + "-00001"
	eventually(t, 30*time.Second, func() (bool, string) {
		if n := processesOf(t, program); n > 0 {
			return false, fmt.Sprintf("%d processes of the program are left", n)
		}
		left, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: v1.RevisionLabelKey + "=" + rev})
		if err != nil {
			t.Fatal(err)
		}
		return len(left.Items) == 0, fmt.Sprintf("%d pods of the program are left", len(left.Items))
	})
}

// getHost sends GET / for host to the gateway at addr.
func getHost(t *testing.T, addr, host string) (int, string) {
	t.Helper()
	code, body := getHostErr(addr, host)
	if code == 0 {
		t.Fatal(body)
	}
	return code, body
}

// getHostErr is getHost with an error as the body and code 0.
func getHostErr(addr, host string) (int, string) { return getHostWith(http.DefaultClient, addr, host) }

// processesOf counts the machine's processes that run program (mounted in their
// container at /ko-app/<name>).
func processesOf(t *testing.T, program string) int {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && strings.HasPrefix(string(b), "/ko-app/"+filepath.Base(program)+"\x00") {
			n++
		}
	}
	return n
}
