package programs

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// Reasons a container waits with, beside the kubelet's own (ContainerCreating,
// CrashLoopBackOff, CreateContainerConfigError, RunContainerError).
const (
	// ReasonBuilding: the go command is building the container's ko:// package.
	ReasonBuilding = v1.ReasonBuildingImage
	// ReasonBuildFailed: the image has no program: its package does not build, its
	// executable is gone, or it is not mapped. The message says which. The Revision
	// reconciler reads it as an image it cannot fetch (ContainerMissing).
	ReasonBuildFailed = v1.ReasonErrImageBuild
)

// retryBackOff is how long a pod waits between tries of what failed before its
// containers could start (a build, a volume), and between restarts of a container:
// the kubelet's CrashLoopBackOff, 10 s doubling up to 5 minutes.
func retryBackOff(failures int) time.Duration {
	d := 10 * time.Second
	for i := 1; i < failures && d < 5*time.Minute; i++ {
		d *= 2
	}
	return min(d, 5*time.Minute)
}

// podRunner runs one pod: its sandbox, its init containers one after another, its
// containers (restarted as the kubelet restarts them), their probes, and its
// termination, with the runtime it is handed.
type podRunner struct {
	n      *Node
	rt     runtime
	ctx    context.Context // done once the pod is being deleted
	cancel context.CancelFunc
	done   chan struct{}
	dir    string

	mu          sync.Mutex
	pod         *corev1.Pod
	phase       corev1.PodPhase
	sandbox     *sandbox // what the pod's containers share, once made
	started     metav1.Time
	initialized metav1.Time // when the last init container completed; zero before
	readySince  metav1.Time
	inits       []*containerRun
	ctrs        []*containerRun
	terminating bool
	startup     startup
}

// containerRun is one container of the pod across its restarts.
type containerRun struct {
	spec    *corev1.Container
	init    bool // an init container: runs to completion, without probes
	program Program
	// Guarded by the pod's mu:
	status  corev1.ContainerStatus
	id      string   // the current run's, for the runtime
	logs    []string // every run's log file, the current last
	running bool
	ready   bool
}

func newPodRunner(n *Node, rt runtime, pod *corev1.Pod) *podRunner {
	ctx, cancel := context.WithCancel(n.ctx)
	r := &podRunner{n: n, rt: rt, ctx: ctx, cancel: cancel, done: make(chan struct{}), pod: pod.DeepCopy(),
		phase: corev1.PodPending, started: metav1.Now(), dir: filepath.Join(n.dir, "pods", string(pod.UID))}
	r.startup.reached = r.started.Time
	// As the kubelet reports them: containers wait for the init containers to complete.
	waiting := "ContainerCreating"
	for i := range r.pod.Spec.InitContainers {
		r.inits = append(r.inits, newContainerRun(&r.pod.Spec.InitContainers[i], true, "PodInitializing"))
		waiting = "PodInitializing"
	}
	for i := range r.pod.Spec.Containers {
		r.ctrs = append(r.ctrs, newContainerRun(&r.pod.Spec.Containers[i], false, waiting))
	}
	return r
}

func newContainerRun(c *corev1.Container, init bool, waiting string) *containerRun {
	return &containerRun{spec: c, init: init, status: corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: c.Image,
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: waiting}},
	}}
}

// all is every container of the pod, the init containers first.
func (r *podRunner) all() []*containerRun { return append(slices.Clone(r.inits), r.ctrs...) }

// run takes the pod from creation to its end: prepare, run the init containers, run
// the containers until the pod is deleted, terminate, report. Termination may begin
// at any of these steps.
func (r *podRunner) run() {
	defer close(r.done)
	r.notify()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if !r.prepare() || !r.initialize() {
			return
		}
		for _, c := range r.ctrs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r.runContainer(c)
			}()
		}
	}()
	<-r.ctx.Done()
	r.terminate(&wg)
}

// prepare builds or finds each container's program, then makes the pod's sandbox,
// retrying what fails with a back-off that the container's waiting reason shows. It
// returns false if the pod was deleted first, or can never run.
func (r *podRunner) prepare() bool {
	for failures := 0; ; failures++ {
		err := r.resolvePrograms()
		if err == nil {
			err = r.makeSandbox()
		}
		if err == nil {
			return true
		}
		if _, permanent := waitReason(err); permanent {
			return false
		}
		select {
		case <-r.ctx.Done():
			return false
		case <-time.After(retryBackOff(failures + 1)):
		}
	}
}

func (r *podRunner) resolvePrograms() error {
	defer func() {
		r.mu.Lock()
		r.startup.step("programs")
		r.mu.Unlock()
	}()
	for _, c := range r.all() {
		if c.program.Path != "" {
			continue
		}
		if !r.n.images.Runs(c.spec.Image) {
			r.setWaiting(c, ReasonBuildFailed, fmt.Sprintf("image %q has no local program: ferry up runs only the images of --local-image and ko:// images", c.spec.Image))
			return errors.New("unmapped image")
		}
		p, err := r.n.images.Resolve(r.ctx, c.spec.Image, func(importPath string) {
			r.setWaiting(c, ReasonBuilding, "go build "+importPath)
		})
		if err != nil {
			r.setWaiting(c, ReasonBuildFailed, err.Error())
			return err
		}
		r.mu.Lock()
		c.program = p
		r.mu.Unlock()
	}
	return nil
}

// makeSandbox has the runtime make what the pod's containers share; a failure makes
// them wait with its reason, and one that is for good says so in an Event too, as
// does a volume that cannot be written (the kubelet's FailedMount, at each try: the
// recorder counts repeats).
func (r *podRunner) makeSandbox() error {
	sb, err := r.rt.sandbox(r.ctx, r.pod, r.dir)
	if err != nil {
		reason, permanent := waitReason(err)
		r.setAllWaiting(reason, err.Error())
		var mount *mountError
		switch {
		case permanent:
			r.n.event(r.snapshot(), corev1.EventTypeWarning, reason, err.Error())
		case errors.As(err, &mount):
			r.n.event(r.snapshot(), corev1.EventTypeWarning, "FailedMount", mount.event())
		}
		return err
	}
	r.mu.Lock()
	r.startup.step("sandbox")
	r.sandbox = sb
	if len(sb.annotations) > 0 && r.pod.Annotations == nil {
		r.pod.Annotations = map[string]string{}
	}
	maps.Copy(r.pod.Annotations, sb.annotations)
	r.mu.Unlock()
	return nil
}

func (r *podRunner) setWaiting(c *containerRun, reason, message string) {
	r.mu.Lock()
	c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
	r.mu.Unlock()
	r.notify()
}

func (r *podRunner) setAllWaiting(reason, message string) {
	r.mu.Lock()
	for _, c := range r.all() {
		c.status.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}
	}
	r.mu.Unlock()
	r.notify()
}

func (r *podRunner) setReady(c *containerRun, id string, ready bool) {
	r.mu.Lock()
	changed := c.id == id && c.running && c.ready != ready
	if changed {
		c.ready = ready
	}
	var line string
	if changed && ready && r.phase == corev1.PodRunning && !slices.ContainsFunc(r.ctrs, func(c *containerRun) bool { return !c.ready }) {
		line = r.startup.line(r.pod.Namespace + "/" + r.pod.Name)
	}
	r.mu.Unlock()
	if changed {
		r.notify()
	}
	if line != "" && r.n.log != nil {
		_, _ = io.WriteString(r.n.log, line)
	}
}

// podIP is the pod's address, "" before its network namespace is made; r.mu held.
func (r *podRunner) podIP() string {
	if r.sandbox == nil {
		return ""
	}
	return r.sandbox.ip.String()
}
