package programs

import (
	"context"
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
	pods := retryingPods{cs.CoreV1()}.Pods("ns")
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
	pods := retryingPods{cs.CoreV1()}.Pods("ns")
	gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "deleted", ResourceVersion: "5"}}
	if _, err := pods.UpdateStatus(context.Background(), gone, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("UpdateStatus: %v, want the conflict: the name is another pod's now", err)
	}
	if len(*versions) != 1 {
		t.Errorf("%d status writes, want 1", len(*versions))
	}
}
