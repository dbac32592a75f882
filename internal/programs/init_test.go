package programs

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
)

// initPod runs pod on a node of plain processes whose image example.com/sh:1 is
// /bin/sh, and returns its runner and every status it reported, in order. The node
// stops when the test ends.
func initPod(t *testing.T, pod *corev1.Pod) (*podRunner, func() []*corev1.Pod) {
	t.Helper()
	return runPod(t, pod, envSources{})
}

// runPod is initPod on a node whose containers' environment comes from env.
func runPod(t *testing.T, pod *corev1.Pod, env envSources) (*podRunner, func() []*corev1.Pod) {
	t.Helper()
	return runPodOn(t, pod, env, func(events record.EventRecorder) runtime { return newProcesses(nil, events) })
}

// runPodOn is runPod with the runtime newRuntime makes.
func runPodOn(t *testing.T, pod *corev1.Pod, env envSources, newRuntime func(record.EventRecorder) runtime) (*podRunner, func() []*corev1.Pod) {
	t.Helper()
	dir := t.TempDir()
	im, err := ParseImages([]string{"example.com/sh:1=/bin/sh"}, dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	events := record.NewFakeRecorder(100)
	n := &Node{ctx: ctx, dir: dir, images: im, events: events, runtime: newRuntime(events), env: env}
	var mu sync.Mutex
	var seen []*corev1.Pod
	n.notifyFn = func(p *corev1.Pod) {
		mu.Lock()
		seen = append(seen, p)
		mu.Unlock()
	}
	r := newPodRunner(n, n.runtime, pod)
	go r.run()
	t.Cleanup(func() {
		cancel() // ferry up stopping: no drain, nothing asked of the API server
		<-r.done
	})
	return r, func() []*corev1.Pod {
		mu.Lock()
		defer mu.Unlock()
		return append([]*corev1.Pod(nil), seen...)
	}
}

func shPod(policy corev1.RestartPolicy, inits []string, main string) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "0123456789abcdef"},
		Spec: corev1.PodSpec{RestartPolicy: policy, Containers: []corev1.Container{
			{Name: "app", Image: "example.com/sh:1", Command: []string{"/bin/sh", "-c", main}}}}}
	for i, script := range inits {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
			Name: "init" + string(rune('a'+i)), Image: "example.com/sh:1", Command: []string{"/bin/sh", "-c", script}})
	}
	return pod
}

func waitFor(t *testing.T, what string, f func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, got := f()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func condition(p *corev1.Pod, t corev1.PodConditionType) corev1.PodCondition {
	for _, c := range p.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return corev1.PodCondition{}
}

// TestInitContainersRunFirst: init containers run one after another, each to its end,
// before the pod's container starts, and the pod's status says so as a kubelet's does.
func TestInitContainersRunFirst(t *testing.T) {
	shared := filepath.Join(t.TempDir(), "shared")
	pod := shPod(corev1.RestartPolicyAlways, []string{
		"sleep 0.3; echo one > " + shared,
		"echo two >> " + shared,
	}, "cat "+shared+" > "+shared+".tmp; mv "+shared+".tmp "+shared+".seen; exec sleep 60")
	r, seen := initPod(t, pod)
	waitFor(t, "what the pod's container saw", func() (bool, string) {
		_, err := os.Stat(shared + ".seen")
		return err == nil, r.snapshot().Status.String()
	})
	if b, err := os.ReadFile(shared + ".seen"); err != nil || string(b) != "one\ntwo\n" {
		t.Errorf("the container saw %q, %v; want both init containers' lines, in order", b, err)
	}
	p := r.snapshot()
	if p.Status.Phase != corev1.PodRunning {
		t.Errorf("phase %s, want Running", p.Status.Phase)
	}
	if c := condition(p, corev1.PodInitialized); c.Status != corev1.ConditionTrue {
		t.Errorf("Initialized %+v, want True", c)
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if term := cs.State.Terminated; term == nil || term.ExitCode != 0 || term.Reason != "Completed" || !cs.Ready {
			t.Errorf("init container %s: %+v, want completed and ready", cs.Name, cs)
		}
	}
	// Before: Pending and not initialized, the container waiting PodInitializing, while
	// the first init container ran alone.
	var initializing bool
	for _, p := range seen() {
		inits, app := p.Status.InitContainerStatuses, p.Status.ContainerStatuses[0]
		if inits[1].State.Running != nil && inits[0].State.Terminated == nil {
			t.Errorf("the second init container ran before the first ended: %+v", inits)
		}
		if app.State.Running != nil && (inits[0].State.Terminated == nil || inits[1].State.Terminated == nil) {
			t.Errorf("the container ran before the init containers ended: %+v", inits)
		}
		if inits[0].State.Running != nil {
			initializing = true
			if p.Status.Phase != corev1.PodPending || condition(p, corev1.PodInitialized).Status != corev1.ConditionFalse ||
				app.State.Waiting == nil || app.State.Waiting.Reason != "PodInitializing" {
				t.Errorf("while initializing: phase %s, Initialized %+v, container %+v", p.Status.Phase,
					condition(p, corev1.PodInitialized), app.State)
			}
		}
	}
	if !initializing {
		t.Error("no status showed the first init container running")
	}
}

// TestInitContainerFails: an init container that exits 1 is restarted after the
// CrashLoopBackOff back-off (restartPolicy Always, as a Revision's pods have), and the
// pod's container never starts; with restartPolicy Never the pod fails.
func TestInitContainerFails(t *testing.T) {
	r, seen := initPod(t, shPod(corev1.RestartPolicyAlways, []string{"echo broken; exit 1"}, "exec sleep 60"))
	waitFor(t, "the init container in CrashLoopBackOff", func() (bool, string) {
		cs := r.snapshot().Status.InitContainerStatuses[0]
		return cs.State.Waiting != nil && cs.State.Waiting.Reason == "CrashLoopBackOff", cs.String()
	})
	p := r.snapshot()
	cs := p.Status.InitContainerStatuses[0]
	if last := cs.LastTerminationState.Terminated; last == nil || last.ExitCode != 1 || last.Reason != "Error" || cs.RestartCount != 1 || cs.Ready {
		t.Errorf("the failed init container: %+v", cs)
	}
	if c := condition(p, corev1.PodInitialized); c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "inita") {
		t.Errorf("Initialized %+v, want False naming the init container", c)
	}
	if p.Status.Phase != corev1.PodPending || p.Status.ContainerStatuses[0].State.Waiting == nil {
		t.Errorf("phase %s, container %+v: want Pending, waiting", p.Status.Phase, p.Status.ContainerStatuses[0].State)
	}
	var exited bool
	for _, p := range seen() {
		if t := p.Status.InitContainerStatuses[0].State.Terminated; t != nil && t.ExitCode == 1 && t.Reason == "Error" {
			exited = true
		}
	}
	if !exited {
		t.Error("no status showed the init container terminated with Error, exit code 1")
	}

	never, _ := initPod(t, shPod(corev1.RestartPolicyNever, []string{"exit 3"}, "exec sleep 60"))
	waitFor(t, "the pod failed", func() (bool, string) {
		p := never.snapshot()
		return p.Status.Phase == corev1.PodFailed, p.Status.String()
	})
	if cs := never.snapshot().Status.InitContainerStatuses[0]; cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 3 || cs.RestartCount != 0 {
		t.Errorf("restartPolicy Never: %+v, want terminated with 3, not restarted", cs)
	}
}

func TestInitializedCondition(t *testing.T) {
	started, done := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	completed := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}
	failed := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}}
	backOff := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	for _, tc := range []struct {
		name        string
		inits       []corev1.ContainerStatus
		initialized metav1.Time
		status      corev1.ConditionStatus
		message     string
		since       metav1.Time
	}{
		{"no init containers", nil, metav1.Time{}, corev1.ConditionTrue, "", started},
		{"all completed", []corev1.ContainerStatus{{Name: "a", State: completed}, {Name: "b", State: completed}}, done,
			corev1.ConditionTrue, "", done},
		{"the first running", []corev1.ContainerStatus{{Name: "a", State: running}, {Name: "b"}}, metav1.Time{},
			corev1.ConditionFalse, "containers with incomplete status: [a b]", started},
		{"the second failed", []corev1.ContainerStatus{{Name: "a", State: completed}, {Name: "b", State: failed}}, metav1.Time{},
			corev1.ConditionFalse, "containers with incomplete status: [b]", started},
		{"the second backing off", []corev1.ContainerStatus{{Name: "a", State: completed}, {Name: "b", State: backOff}}, metav1.Time{},
			corev1.ConditionFalse, "containers with incomplete status: [b]", started},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := initializedCondition(tc.inits, started, tc.initialized)
			if c.Type != corev1.PodInitialized || c.Status != tc.status || c.Message != tc.message || !c.LastTransitionTime.Equal(&tc.since) {
				t.Errorf("%+v, want %s %q since %s", c, tc.status, tc.message, tc.since)
			}
			if tc.status == corev1.ConditionFalse && c.Reason != "ContainersNotInitialized" {
				t.Errorf("reason %q", c.Reason)
			}
		})
	}
}
