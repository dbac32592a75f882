package programs

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
)

// TestDownwardAPIVolume: a downward API volume's files as the kubelet writes them,
// the pod's metadata and its containers' resources; what cannot be written is an
// error naming the item, never a file left out.
func TestDownwardAPIVolume(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "u-1",
			Labels:      map[string]string{"tier": "front", "app": "web"},
			Annotations: map[string]string{"note": `say "hi"`}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")}}}}},
	}
	allocatable := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("64Gi")}
	field := func(path, fieldPath string) corev1.DownwardAPIVolumeFile {
		return corev1.DownwardAPIVolumeFile{Path: path, FieldRef: &corev1.ObjectFieldSelector{FieldPath: fieldPath}}
	}
	res := func(path, ctr, name, divisor string) corev1.DownwardAPIVolumeFile {
		f := corev1.DownwardAPIVolumeFile{Path: path, ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: ctr, Resource: name}}
		if divisor != "" {
			f.ResourceFieldRef.Divisor = resource.MustParse(divisor)
		}
		return f
	}
	for _, tc := range []struct {
		name    string
		items   []corev1.DownwardAPIVolumeFile
		want    map[string]string
		wantErr string
	}{{
		name: "the pod's metadata, labels and annotations sorted and quoted",
		items: []corev1.DownwardAPIVolumeFile{field("name", "metadata.name"), field("ns", "metadata.namespace"),
			field("uid", "metadata.uid"), field("labels", "metadata.labels"), field("meta/annotations", "metadata.annotations"),
			field("tier", "metadata.labels['tier']")},
		want: map[string]string{"name": "web-1", "ns": "ns", "uid": "u-1", "labels": "app=\"web\"\ntier=\"front\"",
			"meta/annotations": `note="say \"hi\""`, "tier": "front"},
	}, {
		name: "a container's requests and limits, the node's allocatable where it sets no limit",
		items: []corev1.DownwardAPIVolumeFile{res("cpu_request", "app", "requests.cpu", "1m"), res("mem_limit", "app", "limits.memory", "1Mi"),
			res("cpu_limit", "app", "limits.cpu", ""), res("mem_limit_bytes", "app", "limits.memory", "")},
		want: map[string]string{"cpu_request": "250", "mem_limit": "128", "cpu_limit": "2", "mem_limit_bytes": "134217728"},
	}, {
		name:    "a container the pod does not have",
		items:   []corev1.DownwardAPIVolumeFile{res("cpu", "sidecar", "limits.cpu", "")},
		wantErr: `downward API item "cpu"`,
	}, {
		name:    "a field the downward API does not have",
		items:   []corev1.DownwardAPIVolumeFile{field("x", "metadata.nope")},
		wantErr: `downward API item "x"`,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			err := writeDownward(pod, tc.items, allocatable, 0o644, dir)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for path, want := range tc.want {
				got, err := os.ReadFile(filepath.Join(dir, path))
				if err != nil {
					t.Fatal(err)
				}
				if string(got) != want {
					t.Errorf("%s = %q, want %q", path, got, want)
				}
			}
		})
	}
}

// filesRuntime is the plain-process runtime with the isolated one's pod files: a pod's
// volumes are written as in a runc sandbox, its containers run as processes.
type filesRuntime struct {
	*processes
	client kubernetes.Interface
}

func (f filesRuntime) sandbox(ctx context.Context, pod *corev1.Pod, dir string) (*sandbox, error) {
	if err := podFiles(ctx, f.client, pod, "127.0.0.1", dir, netip.MustParseAddr("10.96.0.10"), nodeCapacity()); err != nil {
		return nil, err
	}
	return &sandbox{ip: netip.AddrFrom4([4]byte{127, 0, 0, 1})}, nil
}

// TestVolumeThatCannotBeWritten: a pod whose ConfigMap volume names a ConfigMap that is
// not there waits, saying which volume, gets the kubelet's FailedMount Event, and runs
// once the ConfigMap is created.
func TestVolumeThatCannotBeWritten(t *testing.T) {
	out := filepath.Join(t.TempDir(), "ran")
	pod := shPod(corev1.RestartPolicyAlways, nil, "echo ran > "+out+"; exec sleep 60")
	pod.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}}}}
	client := fake.NewClientset()
	r, _ := runPodOn(t, pod, envSources{client: client}, func(events record.EventRecorder) runtime {
		return filesRuntime{processes: newProcesses(client, events), client: client}
	})
	events := r.n.events.(*record.FakeRecorder)

	waitFor(t, "the container waiting for the volume", func() (bool, string) {
		cs := r.snapshot().Status.ContainerStatuses[0]
		w := cs.State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError" &&
			w.Message == `volume "config": configmap "settings": configmaps "settings" not found`, cs.String()
	})
	var seen []string
	waitFor(t, "a FailedMount Event", func() (bool, string) {
		select {
		case e := <-events.Events:
			seen = append(seen, e)
			return e == `Warning FailedMount MountVolume.SetUp failed for volume "config" : configmap "settings": configmaps "settings" not found`, fmt.Sprint(seen)
		default:
			return false, fmt.Sprint(seen)
		}
	})
	if _, err := client.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}, Data: map[string]string{"k": "v"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the container running once the ConfigMap is there", func() (bool, string) {
		b, _ := os.ReadFile(out)
		return string(b) == "ran\n", r.snapshot().Status.String()
	})
	if b, err := os.ReadFile(filepath.Join(r.dir, "volumes", "config", "k")); err != nil || string(b) != "v" {
		t.Errorf("the volume's file: %q, %v", b, err)
	}
}
