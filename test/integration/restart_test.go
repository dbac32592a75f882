package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ferry-serving/ferry/internal/localcluster"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// The restart test runs each life of its cluster in a child process, as `ferry up`
// runs: kube-controller-manager and kube-scheduler register process-wide names, so a
// second control plane cannot share a process with the one TestMain started.
const (
	restartPhaseEnv = "FERRY_TEST_RESTART_PHASE"
	restartDirEnv   = "FERRY_TEST_RESTART_DIR"
)

// TestRestartKeepsObjects stops a local cluster and starts it again on the same data
// directory: what the user created is still there, unchanged, and the kubeconfig
// written the first time still works.
func TestRestartKeepsObjects(t *testing.T) {
	dir := t.TempDir()
	for _, phase := range []string{"create", "verify"} {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), restartPhaseEnv+"="+phase, restartDirEnv+"="+dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s phase: %v\n%s", phase, err, out)
		}
	}
}

// restartPhase is the body of a child process of TestRestartKeepsObjects.
func restartPhase(phase, dir string) error {
	ctx := context.Background()
	uidFile := filepath.Join(dir, "test-uids")
	// The kubeconfig of the first life must keep working in the second.
	cluster, err := localcluster.Start(ctx, localcluster.Options{DataDir: dir})
	if err != nil {
		return err
	}
	defer cluster.Stop()
	cfgPath := filepath.Join(dir, "kubeconfig")
	c, err := clientFromKubeconfig(cfgPath)
	if err != nil {
		return err
	}
	ksvc := manifestFromString("apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata: {name: kept, namespace: default}\nspec:\n  template:\n    spec:\n      containers: [{image: example.com/app}]")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kept"}, Data: map[string]string{"k": "v"}}
	switch phase {
	case "create":
		if err := c.Create(ctx, ksvc); err != nil {
			return err
		}
		if err := c.Create(ctx, cm); err != nil {
			return err
		}
		return os.WriteFile(uidFile, []byte(string(ksvc.GetUID())+" "+string(cm.UID)), 0o600)
	case "verify":
		raw, err := os.ReadFile(uidFile)
		if err != nil {
			return err
		}
		uids := strings.Fields(string(raw))
		if err := c.Get(ctx, client.ObjectKeyFromObject(ksvc), ksvc); err != nil {
			return fmt.Errorf("the Service is gone after a restart: %w", err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), cm); err != nil {
			return fmt.Errorf("the ConfigMap is gone after a restart: %w", err)
		}
		if string(ksvc.GetUID()) != uids[0] || string(cm.UID) != uids[1] || cm.Data["k"] != "v" {
			return fmt.Errorf("objects changed across the restart: uids %s %s, want %v; data %v", ksvc.GetUID(), cm.UID, uids, cm.Data)
		}
		return nil
	}
	return fmt.Errorf("unknown phase %q", phase)
}
