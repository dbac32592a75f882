package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
)

// TestProgramsInitContainers runs Revisions with init containers on `ferry up`'s
// program node (runc containers), as Knative runs them with
// kubernetes.podspec-init-containers Enabled: refused before the flag is on; an init
// container that writes into an emptyDir runs to completion first, kubectl showing
// the pod at Init:0/1 meanwhile, and the serving container (netprobe) answers with
// what it wrote; an init container that exits 1 shows as Init:Error or
// Init:CrashLoopBackOff, and its Revision is Ready=False naming it. Then ConfigMap
// volumes: one whose ConfigMap comes late, one whose ConfigMap never comes (the end of
// the test).
func TestProgramsInitContainers(t *testing.T) {
	needIsolation(t)
	t.Parallel()
	dir := t.TempDir()
	program := filepath.Join(dir, "ferry-it-netprobe-init")
	if out, err := exec.Command("go", "build", "-o", program, "./netprobe").CombinedOutput(); err != nil {
		t.Fatalf("building netprobe: %v\n%s", err, out)
	}
	upArgs, gateway := programsUpArgs(t, dir, program, "--local-image", "example.com/sh:1=/bin/sh", "--program-isolation", "runc")
	_, c, cs := startFerryUp(t, "ferry up", upArgs)
	ctx := context.Background()

	svc := ksvc("default", "init", "example.com/real:1")
	spec := &svc.Spec.Template.Spec
	spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	spec.InitContainers = []corev1.Container{{Name: "write", Image: "example.com/sh:1",
		Command:      []string{"/bin/sh", "-c", "sleep 3; echo written by the init container > /data/testfile"},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}
	if err := c.Create(ctx, svc.DeepCopy()); err == nil || !strings.Contains(err.Error(), "init-containers is off") {
		t.Fatalf("a Service with initContainers before kubernetes.podspec-init-containers is on: %v, want refused", err)
	}
	createWithInitContainers(t, c, cs, svc)

	// While the init container sleeps, the pod is Pending at Init:0/1 and its
	// container waits; then the Service is Ready and the file is there.
	seen := map[string]bool{}
	eventually(t, readyTimeout, func() (bool, string) {
		for _, s := range printedStatuses(t, cs, v1.RevisionLabelKey+"=init-00001") {
			seen[s] = true
		}
		// The Service, not only the Revision: its Route must be served before the
		// request below (CI once asked between the two and got 404).
		rev, s := &v1.Revision{}, &v1.Service{}
		ready := get(t, c, "default", "init-00001", rev) && rev.Status.GetCondition(duck.ConditionReady).IsTrue() &&
			get(t, c, "default", "init", s) && s.IsReady()
		return ready, fmt.Sprintf("statuses seen %v; Revision %+v; Service %+v", seen, rev.Status.Conditions, s.Status.Conditions)
	})
	if !seen["Init:0/1"] {
		t.Errorf("kubectl never showed the pod as Init:0/1 while its init container ran: %v", seen)
	}
	code, body := getPath(t, gateway, "init.default.example.com", "/file?path=/data/testfile")
	if code != http.StatusOK || body != "written by the init container\n" {
		t.Errorf("the serving container reads the init container's file: %d %q", code, body)
	}
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: v1.RevisionLabelKey + "=init-00001"})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if len(p.Status.InitContainerStatuses) != 1 || p.Status.InitContainerStatuses[0].State.Terminated == nil ||
			p.Status.InitContainerStatuses[0].State.Terminated.Reason != "Completed" {
			t.Errorf("pod %s: init containers %+v, want write completed", p.Name, p.Status.InitContainerStatuses)
		}
		if printed := printedStatuses(t, cs, v1.RevisionLabelKey+"=init-00001"); len(printed) != 1 || printed[0] != "Running" {
			t.Errorf("kubectl shows %v, want Running", printed)
		}
	}

	// An init container that fails: its pod never gets to the serving container, and
	// the Revision says which container failed and how.
	fail := ksvc("default", "initfail", "example.com/real:1")
	fail.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "migrate", Image: "example.com/sh:1",
		Command: []string{"/bin/sh", "-c", "echo cannot migrate; exit 1"}, TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError}}
	if err := c.Create(ctx, fail); err != nil {
		t.Fatal(err)
	}
	rev := &v1.Revision{}
	eventually(t, readyTimeout, func() (bool, string) {
		if !get(t, c, "default", "initfail-00001", rev) {
			return false, "no Revision yet"
		}
		ready := rev.Status.GetCondition(duck.ConditionReady)
		return ready != nil && ready.IsFalse() && ready.Reason == v1.ExitCodeReason(1) &&
			ready.Message == "Init container migrate failed with: cannot migrate", fmt.Sprintf("Ready %+v", ready)
	})
	eventually(t, time.Minute, func() (bool, string) {
		printed := printedStatuses(t, cs, v1.RevisionLabelKey+"=initfail-00001")
		return len(printed) > 0 && (printed[0] == "Init:Error" || printed[0] == "Init:CrashLoopBackOff"),
			fmt.Sprintf("kubectl shows %v, want Init:Error or Init:CrashLoopBackOff", printed)
	})
	pods, err = cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: v1.RevisionLabelKey + "=initfail-00001"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("pods of initfail-00001: %v", err)
	}
	p := pods.Items[0]
	if st := p.Status.ContainerStatuses; len(st) != 1 || st[0].State.Waiting == nil || st[0].State.Waiting.Reason != "PodInitializing" {
		t.Errorf("the serving container of a pod whose init container fails: %+v, want waiting PodInitializing", st)
	}
	for _, cond := range p.Status.Conditions {
		if cond.Type == corev1.PodInitialized && (cond.Status != corev1.ConditionFalse || !strings.Contains(cond.Message, "migrate")) {
			t.Errorf("Initialized %+v, want False naming migrate", cond)
		}
	}
	// A ConfigMap volume whose ConfigMap comes late: the pod waits naming the volume,
	// with the kubelet's FailedMount Event, and runs with the file once the ConfigMap
	// is there. One whose ConfigMap never comes fails its Revision at the progress
	// deadline with the container's reason, and stays failed at zero.
	late := ksvc("default", "lateconfig", "example.com/real:1")
	late.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "settings", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "late-settings"}}}}}
	late.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "settings", MountPath: "/settings"}}
	never := late.DeepCopy()
	never.Name = "neverconfig"
	never.Spec.Template.Spec.Volumes[0].ConfigMap.Name = "never-settings"
	never.Spec.Template.ObjectMeta.Annotations = map[string]string{"serving.knative.dev/progress-deadline": "5s"}
	for _, s := range []*v1.Service{late, never} {
		if err := c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range []*v1.Service{late, never} {
		want := fmt.Sprintf(`volume "settings": configmap %[1]q: configmaps %[1]q not found`, s.Spec.Template.Spec.Volumes[0].ConfigMap.Name)
		eventually(t, readyTimeout, func() (bool, string) {
			pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: v1.RevisionLabelKey + "=" + s.Name + "-00001"})
			if err != nil || len(pods.Items) == 0 {
				return false, fmt.Sprintf("no pod yet (%v)", err)
			}
			p := pods.Items[0]
			st := p.Status.ContainerStatuses
			if len(st) == 0 || st[0].State.Waiting == nil || st[0].State.Waiting.Reason != "CreateContainerConfigError" || st[0].State.Waiting.Message != want {
				return false, fmt.Sprintf("container statuses %+v, want waiting CreateContainerConfigError %q", st, want)
			}
			events, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + p.Name + ",reason=FailedMount"})
			if err != nil || len(events.Items) == 0 {
				return false, fmt.Sprintf("no FailedMount Event on %s (%v)", p.Name, err)
			}
			return events.Items[0].Message == "MountVolume.SetUp failed for volume \"settings\" : "+strings.TrimPrefix(want, `volume "settings": `),
				fmt.Sprintf("FailedMount %q", events.Items[0].Message)
		})
	}
	// Past its progress deadline, the Revision says what the container waits for, as
	// Knative's does.
	eventually(t, readyTimeout, func() (bool, string) {
		rev := &v1.Revision{}
		if !get(t, c, "default", "neverconfig-00001", rev) {
			return false, "no Revision yet"
		}
		ready := rev.Status.GetCondition(duck.ConditionReady)
		return ready.IsFalse() && ready.Reason == "CreateContainerConfigError" &&
			ready.Message == `volume "settings": configmap "never-settings": configmaps "never-settings" not found`, fmt.Sprintf("Ready %+v", ready)
	})
	// Then the autoscaler gives up on it and scales it to zero, where its Deployment
	// reads as available: the Revision stays failed (it turned Ready here once).
	eventually(t, readyTimeout, func() (bool, string) {
		rev := &v1.Revision{}
		get(t, c, "default", "neverconfig-00001", rev)
		ready, active := rev.Status.GetCondition(duck.ConditionReady), rev.Status.GetCondition(v1.RevisionConditionActive)
		return active.IsFalse() && ready.IsFalse() && ready.Reason == v1.ReasonProgressDeadlineExceeded && ready.Message == "Initial scale was never achieved",
			fmt.Sprintf("Ready %+v, Active %+v", ready, active)
	})
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late-settings"},
		Data: map[string]string{"greeting": "hello from a late ConfigMap"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, readyTimeout, func() (bool, string) {
		s := &v1.Service{}
		return get(t, c, "default", "lateconfig", s) && s.IsReady(), fmt.Sprintf("Service %+v", s.Status.Conditions)
	})
	if code, body := getPath(t, gateway, "lateconfig.default.example.com", "/file?path=/settings/greeting"); code != http.StatusOK || body != "hello from a late ConfigMap" {
		t.Errorf("the serving container reads its ConfigMap volume: %d %q", code, body)
	}
}

// createWithInitContainers turns kubernetes.podspec-init-containers on in ferry up's
// config-features and creates svc once admission takes it.
func createWithInitContainers(t *testing.T, c client.Client, cs *kubernetes.Clientset, svc *v1.Service) {
	t.Helper()
	setFeatures(t, cs, map[string]string{"kubernetes.podspec-init-containers": "Enabled"})
	createOnceAdmitted(t, c, svc)
}

// setFeatures makes config-features hold data and nothing else.
func setFeatures(t *testing.T, cs *kubernetes.Clientset, data map[string]string) {
	t.Helper()
	ctx := context.Background()
	features := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ferry-system", Name: "config-features"}, Data: data}
	if _, err := cs.CoreV1().ConfigMaps("ferry-system").Create(ctx, features, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		if _, err := cs.CoreV1().ConfigMaps("ferry-system").Update(ctx, features, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
}

// createOnceAdmitted creates svc once admission has seen the features it needs on.
func createOnceAdmitted(t *testing.T, c client.Client, svc *v1.Service) {
	t.Helper()
	eventually(t, time.Minute, func() (bool, string) {
		err := c.Create(context.Background(), svc.DeepCopy())
		return err == nil, fmt.Sprintf("creating Service %s once the flag is on: %v", svc.Name, err)
	})
}

// printedStatuses is the STATUS column of kubectl get pods for the pods of selector:
// the API server prints it as kubectl shows it (a Table, with kubectl's own printer).
func printedStatuses(t *testing.T, cs *kubernetes.Clientset, selector string) []string {
	t.Helper()
	raw, err := cs.CoreV1().RESTClient().Get().Namespace("default").Resource("pods").Param("labelSelector", selector).
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil {
		t.Fatal(err)
	}
	column := -1
	for i, c := range table.ColumnDefinitions {
		if c.Name == "Status" {
			column = i
		}
	}
	if column < 0 {
		t.Fatalf("the pods' table has no Status column: %+v", table.ColumnDefinitions)
	}
	var out []string
	for _, row := range table.Rows {
		out = append(out, fmt.Sprint(row.Cells[column]))
	}
	return out
}
