package integration

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// TestProgramsProcesses runs `ferry up --program-isolation=none`, the fallback where
// runc cannot run (macOS, not root), forced here: pods are plain processes of the
// host at 127.0.0.1, each with a PORT of its own. ferry up says so and what does not
// hold; two pods of a min-scale 2 Service of examples/hello answer from two
// processes through the gateway, which dials the port each pod records; kubectl logs
// shows their output; a Service with a volume fails its Revision with NeedsIsolation
// at once; init containers run, and one that fails fails its Revision; deleting the Service and stopping ferry up leave no process behind.
func TestProgramsProcesses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts the program's processes in /proc")
	}
	t.Parallel()
	dir := t.TempDir()
	program := buildHello(t, dir)
	args, gateway := programsUpArgs(t, dir, program, "--program-isolation", "none", "--local-image", "example.com/sh:1=/bin/sh")
	up, c, cs := startFerryUp(t, "ferry up", args)
	for _, want := range []string{"run as processes on node ferry-programs", "NOT isolated (--program-isolation=none asks for it)",
		"ignores PORT", "volumes are refused"} {
		if !strings.Contains(up.Output(), want) {
			t.Errorf("ferry up does not say %q:\n%s", want, up.Output())
		}
	}
	ctx := context.Background()

	// Two processes, both of the host at 127.0.0.1, each on the port it was given:
	// the gateway spreads requests over both (the answers differ by pid).
	svc := createTwoPodService(t, c, gateway, "pod ")
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: v1.RevisionLabelKey + "=real-00001"})
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]bool{}
	for _, p := range pods.Items {
		port := p.Annotations[v1.ServingPortAnnotationKey]
		if p.Spec.NodeName != "ferry-programs" || p.Status.PodIP != "127.0.0.1" || port == "" || port == "8080" {
			t.Errorf("pod %s: node %q, IP %q, serving port %q; want ferry-programs, 127.0.0.1 and a port of its own",
				p.Name, p.Spec.NodeName, p.Status.PodIP, port)
		}
		ports[port] = true
		logs, err := cs.CoreV1().Pods("default").GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
		if err != nil {
			t.Fatalf("logs of %s: %v", p.Name, err)
		}
		if !strings.Contains(string(logs), "hello: revision real-00001 listening on :"+port) || !strings.Contains(string(logs), "GET / from") {
			t.Errorf("logs of %s: %q, want it listening on its PORT %s", p.Name, logs, port)
		}
	}
	if len(pods.Items) != 2 || len(ports) != 2 {
		t.Errorf("%d pods on %d ports, want 2 on 2", len(pods.Items), len(ports))
	}
	if n := processesOf(t, program); n != 2 {
		t.Errorf("%d processes of the program run, want 2", n)
	}

	// A volume cannot be mounted at its mountPath by a plain process: the Revision
	// says so at once, rather than waiting out the progress deadline.
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app-config"},
		Data: map[string]string{"greeting": "hi"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vol := ksvc("default", "vol", "example.com/real:1")
	vol.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "app-config"}}}}}
	vol.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app", ReadOnly: true}}
	if err := c.Create(ctx, vol); err != nil {
		t.Fatal(err)
	}
	rev := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "vol-00001"}}
	eventually(t, readyTimeout, func() (bool, string) {
		if !get(t, c, rev.Namespace, rev.Name, rev) {
			return false, "no Revision yet"
		}
		ready := rev.Status.GetCondition(duck.ConditionReady)
		return ready != nil && ready.IsFalse() && ready.Reason == v1.ReasonNeedsIsolation && strings.Contains(ready.Message, "/etc/app") &&
			strings.Contains(ready.Message, "plain processes"), fmt.Sprintf("Ready %+v", ready)
	})

	// Deleting the Service stops its processes and its pods leave.
	deleteAndWaitGone(t, c, cs, svc, program)

	// Init containers run as processes too, before the serving container: one that
	// completes lets the Revision become Ready, one that exits 1 fails it, naming it.
	for _, tc := range []struct{ name, script string }{{"init", "exit 0"}, {"initfail", "exit 1"}} {
		s := ksvc("default", tc.name, "example.com/real:1")
		s.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "prepare", Image: "example.com/sh:1",
			Command: []string{"/bin/sh", "-c", tc.script}}}
		createWithInitContainers(t, c, cs, s)
	}
	waitCondition(t, c, &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "init"}}, duck.ConditionReady,
		corev1.ConditionTrue, "", readyTimeout)
	eventually(t, readyTimeout, func() (bool, string) {
		rev := &v1.Revision{}
		if !get(t, c, "default", "initfail-00001", rev) {
			return false, "no Revision yet"
		}
		ready := rev.Status.GetCondition(duck.ConditionReady)
		return ready != nil && ready.IsFalse() && ready.Reason == v1.ExitCodeReason(1) &&
			ready.Message == "Init container prepare failed with: Error (exit code 1)", fmt.Sprintf("Ready %+v", ready)
	})

	// Stopping ferry up stops every process it started.
	again := ksvc("default", "again", "example.com/real:1")
	if err := c.Create(ctx, again); err != nil {
		t.Fatal(err)
	}
	waitCondition(t, c, again, duck.ConditionReady, corev1.ConditionTrue, "", readyTimeout)
	stopFerryUp(t, up, program)
}
