package configmaps

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

var want = []string{"config-autoscaler", "config-certmanager", "config-defaults", "config-deployment", "config-domain", "config-features", "config-gc", "config-network", "config-observability"}

func TestAll(t *testing.T) {
	cms, err := All()
	if err != nil {
		t.Fatal(err)
	}
	if len(cms) != len(want) {
		t.Fatalf("%d ConfigMaps, want %d", len(cms), len(want))
	}
	for i, cm := range cms {
		if cm.Name != want[i] || cm.Namespace != "ferry-system" {
			t.Errorf("ConfigMap %d is %s/%s, want ferry-system/%s", i, cm.Namespace, cm.Name, want[i])
		}
		if cm.Kind != "ConfigMap" || cm.APIVersion != "v1" {
			t.Errorf("%s: kind %s/%s", cm.Name, cm.APIVersion, cm.Kind)
		}
		// Only documentation: shipped, they must change nothing of the defaults.
		if len(cm.Data) != 1 || cm.Data["_example"] == "" {
			t.Errorf("%s: data %v, want only a non-empty _example", cm.Name, cm.Data)
		}
	}
}

func TestCreateMissing(t *testing.T) {
	ctx := context.Background()
	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ferry-system", Name: "config-domain"},
		Data: map[string]string{"mine.test": ""}}
	cs := fake.NewClientset(mine)
	// Twice: a second ferry up on the same data directory finds them all.
	for range 2 {
		if err := CreateMissing(ctx, cs.CoreV1()); err != nil {
			t.Fatal(err)
		}
	}
	list, err := cs.CoreV1().ConfigMaps("ferry-system").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != len(want) {
		t.Fatalf("%d ConfigMaps, want %d", len(list.Items), len(want))
	}
	for _, cm := range list.Items {
		if cm.Name == "config-domain" {
			if _, ok := cm.Data["mine.test"]; !ok || len(cm.Data) != 1 {
				t.Errorf("the user's config-domain was changed: %v", cm.Data)
			}
		} else if cm.Data["_example"] == "" {
			t.Errorf("%s created without _example", cm.Name)
		}
	}
}
