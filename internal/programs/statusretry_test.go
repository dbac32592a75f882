package programs

import (
	"context"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// staleStatusWrites is a client whose pod "p" is at resourceVersion "7" with uid "current", and
// whose status writes are refused unless they carry that version, as the API server
// refuses them; it records the version of each status write.
func staleStatusWrites() (*fake.Clientset, *[]string) {
	cs := fake.NewClientset()
	var versions []string
	cs.PrependReactor("get", "pods", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "current", ResourceVersion: "7"}}, nil
	})
	cs.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		pod := a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod)
		versions = append(versions, pod.ResourceVersion)
		if pod.ResourceVersion != "7" || pod.UID != "current" {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, pod.Name, nil)
		}
		return true, pod, nil
	})
	return cs, &versions
}

func TestStatusWriteAfterAConflictGoesAtOnceWithTheCurrentVersion(t *testing.T) {
	cs, versions := staleStatusWrites()
	pods := newRetryingPods(cs.CoreV1()).Pods("ns")
	stale := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "current", ResourceVersion: "5"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	out, err := pods.UpdateStatus(context.Background(), stale, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("UpdateStatus: %v; want the status written after the conflict", err)
	}
	if out.Status.Phase != corev1.PodRunning {
		t.Errorf("written phase %q, want Running", out.Status.Phase)
	}
	if got := *versions; len(got) != 2 || got[0] != "5" || got[1] != "7" {
		t.Errorf("status writes at versions %v, want [5 7]: the informer's, then the API server's", got)
	}
	if stale.ResourceVersion != "5" {
		t.Errorf("the caller's pod was changed (resourceVersion %s)", stale.ResourceVersion)
	}
}

func TestStatusWriteIsNotRetriedOnAnotherPodOfTheSameName(t *testing.T) {
	cs, versions := staleStatusWrites()
	pods := newRetryingPods(cs.CoreV1()).Pods("ns")
	gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "deleted", ResourceVersion: "5"}}
	if _, err := pods.UpdateStatus(context.Background(), gone, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("UpdateStatus: %v, want the conflict: the name is another pod's now", err)
	}
	if len(*versions) != 1 {
		t.Errorf("%d status writes, want 1", len(*versions))
	}
}

// TestStatusWritesWithAnInformerBehindGoWithoutAConflict: the informer's copy still
// has the version the node's last write replaced, and each next write goes with the
// version that write returned, with no conflict to answer.
func TestStatusWritesWithAnInformerBehindGoWithoutAConflict(t *testing.T) {
	cs := fake.NewClientset()
	version := 5
	var wrote []string
	cs.PrependReactor("update", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		pod := a.(k8stesting.UpdateAction).GetObject().(*corev1.Pod).DeepCopy()
		wrote = append(wrote, pod.ResourceVersion)
		if pod.ResourceVersion != strconv.Itoa(version) {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, pod.Name, nil)
		}
		version++
		pod.ResourceVersion = strconv.Itoa(version)
		return true, pod, nil
	})
	pods := newRetryingPods(cs.CoreV1()).Pods("ns")
	informers := []string{"5", "5", "6", "5", "9"} // behind by none, one, one, three, then caught up
	for _, v := range informers {
		cached := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u", ResourceVersion: v}}
		if _, err := pods.UpdateStatus(context.Background(), cached, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("a write with the informer at %s: %v", v, err)
		}
	}
	if want := []string{"5", "6", "7", "8", "9"}; !slices.Equal(wrote, want) {
		t.Errorf("status writes at versions %v, want %v: each at the version the last returned", wrote, want)
	}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "another", ResourceVersion: "5"}}
	if _, err := pods.UpdateStatus(context.Background(), other, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("another pod's write at a version this pod's writes replaced: %v, want it sent as it is, refused", err)
	}
}
