package programs

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestChooseMode(t *testing.T) {
	m, err := ChooseMode(IsolationNone, "runc")
	if err != nil || !m.Processes || m.NotIsolated == nil {
		t.Errorf("none: %+v, %v; want processes, with why", m, err)
	}
	if _, err := ChooseMode("chroot", "runc"); err == nil || !strings.Contains(err.Error(), "auto, runc or none") {
		t.Errorf("an unknown isolation: %v", err)
	}
	// Without runc, auto falls back to processes and says why; runc refuses.
	m, err = ChooseMode(IsolationAuto, "/nonexistent/runc")
	if err != nil || !m.Processes || m.NotIsolated == nil {
		t.Errorf("auto without runc: %+v, %v; want processes, with why", m, err)
	}
	if _, err := ChooseMode(IsolationRunc, "/nonexistent/runc"); err == nil {
		t.Error("runc without runc: no error")
	}
}

func TestUnsupportedMounts(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "user-container", VolumeMounts: []corev1.VolumeMount{
		// What the API server's ServiceAccount admission adds to every pod.
		{Name: "kube-api-access-x7k2p", MountPath: serviceAccountDir},
	}}}}}
	if got := unsupportedMounts(pod); len(got) != 0 {
		t.Errorf("the service account token: %v, want none", got)
	}
	pod.Spec.Containers[0].VolumeMounts = append(pod.Spec.Containers[0].VolumeMounts, corev1.VolumeMount{Name: "config", MountPath: "/etc/app"})
	got := unsupportedMounts(pod)
	if want := []string{"config at /etc/app (container user-container)"}; !slices.Equal(got, want) {
		t.Errorf("%v, want %v", got, want)
	}
	if msg := needsIsolationMessage(got); !strings.Contains(msg, "config at /etc/app") || !strings.Contains(msg, "runc") {
		t.Errorf("message %q names neither the volume nor the way out", msg)
	}
	// An init container's emptyDir cannot be shared with the container either.
	pod.Spec.InitContainers = []corev1.Container{{Name: "prepare", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}
	if got := unsupportedMounts(pod); !slices.Contains(got, "data at /data (container prepare)") {
		t.Errorf("an init container's mount: %v", got)
	}
}

func TestNotApplied(t *testing.T) {
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}}}
	if got := notApplied(pod); len(got) != 0 {
		t.Errorf("a plain pod: %v", got)
	}
	pod.Spec.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr(int64(1000))}
	pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{ReadOnlyRootFilesystem: ptr(true)}
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}
	got := strings.Join(notApplied(pod), "; ")
	for _, want := range []string{"runAsUser", "readOnlyRootFilesystem", "memory limit"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q does not name %s", got, want)
		}
	}
}

func TestRetarget(t *testing.T) {
	ctr := &corev1.Container{Name: "user-container", Ports: []corev1.ContainerPort{{Name: "http1", ContainerPort: 8080}}}
	for _, tc := range []struct {
		name  string
		probe corev1.ProbeHandler
		want  int // the port the kubelet's prober dials
	}{
		{"tcp by number", corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(8080)}}, 41000},
		{"http by name", corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromString("http1")}}, 41000},
		{"grpc", corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 8080}}, 41000},
		{"another port stays", corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(9090)}}, 9090},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig := &corev1.Probe{ProbeHandler: tc.probe}
			p, c := retarget(orig, ctr, 8080, 41000)
			var got int
			switch h := p.ProbeHandler; {
			case h.GRPC != nil:
				got = int(h.GRPC.Port)
			case h.TCPSocket != nil:
				got = h.TCPSocket.Port.IntValue()
			case h.HTTPGet != nil:
				got = h.HTTPGet.Port.IntValue()
				if h.HTTPGet.Port.Type == intstr.String && c.Ports[0].Name == h.HTTPGet.Port.StrVal {
					got = int(c.Ports[0].ContainerPort)
				}
			}
			if got != tc.want {
				t.Errorf("port %d, want %d", got, tc.want)
			}
			if ctr.Ports[0].ContainerPort != 8080 || (orig.TCPSocket != nil && orig.TCPSocket.Port.IntValue() != tc.probe.TCPSocket.Port.IntValue()) {
				t.Error("the pod's spec was changed")
			}
		})
	}
}

func TestProcessCommand(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hello-abc"}}
	prog := Program{Path: "/cache/hello", Name: "hello", Ko: true}
	ctr := &corev1.Container{Env: []corev1.EnvVar{{Name: "PORT", Value: "8080"}, {Name: "TARGET", Value: "x"}}, Args: []string{"--who=$(TARGET)"}}
	cmd, err := processCommand(processConfig{pod: pod, container: ctr, program: prog, env: resolvedEnv(t, pod, ctr), port: 41000})
	if err != nil {
		t.Fatal(err)
	}
	if cmd.Path != "/cache/hello" || !slices.Equal(cmd.Args, []string{"/ko-app/hello", "--who=x"}) || cmd.Dir != "/" {
		t.Errorf("path %s args %q dir %s", cmd.Path, cmd.Args, cmd.Dir)
	}
	if !slices.Contains(cmd.Env, "PORT=41000") || slices.Contains(cmd.Env, "PORT=8080") || !slices.Contains(cmd.Env, "HOSTNAME=hello-abc") {
		t.Errorf("env %q: want the picked PORT", cmd.Env)
	}
	// A command names a host executable; its PORT stays when it is not the serving one.
	ctr = &corev1.Container{Command: []string{"sh", "-c", "echo $PORT"}, Env: []corev1.EnvVar{{Name: "PORT", Value: "8080"}}, WorkingDir: "/tmp"}
	cmd, err = processCommand(processConfig{pod: pod, container: ctr, program: prog, env: resolvedEnv(t, pod, ctr)})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(cmd.Path, "/sh") || cmd.Args[0] != "sh" || cmd.Dir != "/tmp" || !slices.Contains(cmd.Env, "PORT=8080") {
		t.Errorf("path %s args %q dir %s env %q", cmd.Path, cmd.Args, cmd.Dir, cmd.Env)
	}
	ctr.WorkingDir = "/nonexistent/app"
	if _, err := processCommand(processConfig{pod: pod, container: ctr, program: prog, env: resolvedEnv(t, pod, ctr)}); err == nil || !strings.Contains(err.Error(), "workingDir") {
		t.Errorf("a workingDir that is not here: %v", err)
	}
}

// TestProcesses runs a container as a process: its output, an exec probe beside it
// with its env, and a signal that reaches what it started.
func TestProcesses(t *testing.T) {
	p := newProcesses(nil, nil)
	a, err := p.allocatePort()
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.allocatePort()
	if err != nil || a == b {
		t.Fatalf("ports %d and %d, %v", a, b, err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	ctr := &corev1.Container{Command: []string{"/bin/sh", "-c", "echo port $PORT; sleep 60 & wait"},
		Ports: []corev1.ContainerPort{{ContainerPort: 8080}}}
	var out bytes.Buffer
	cmd, err := p.start(containerStart{id: "c1", pod: pod, container: ctr, env: resolvedEnv(t, pod, ctr), sandbox: &sandbox{port: a}, stdout: &out, stderr: &out})
	if err != nil {
		t.Fatal(err)
	}
	beside, err := p.command(context.Background(), "c1", []string{"sh", "-c", "echo $PORT"}, false)
	if err != nil {
		t.Fatal(err)
	}
	probe, err := beside.Output()
	if err != nil || strings.TrimSpace(string(probe)) != strconv.Itoa(a) {
		t.Errorf("a command beside the container: %v %q, want the container's PORT", err, probe)
	}
	time.Sleep(200 * time.Millisecond)
	if err := p.kill(context.Background(), "c1", syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var exitErr *exec.ExitError
		if !errors.As(err, &exitErr) && !errors.Is(err, exec.ErrWaitDelay) {
			t.Errorf("wait: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM to the group did not end the process")
	}
	_ = p.remove(context.Background(), "c1")
	if !strings.Contains(out.String(), "port "+strconv.Itoa(a)) {
		t.Errorf("output %q", out.String())
	}
	if err := p.kill(context.Background(), "c1", syscall.SIGTERM); err == nil {
		t.Error("a removed process can still be signalled")
	}
}
