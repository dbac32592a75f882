package integration

import (
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestInstallHTTPS checks config/ with its https component against config/ alone:
// the same objects, plus the gateway's HTTPS listener behind port 443 of its Service
// with the right to read Secrets, and the controller's cert-manager provider with its
// rights, both given to the ServiceAccounts the Deployments run as; and the flags it
// adds are ferry's.
func TestInstallHTTPS(t *testing.T) {
	kustomization, err := os.ReadFile("../../config/kustomization.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// docs/install.md says to uncomment it.
	if !strings.Contains(string(kustomization), "\n# components: [https]\n") {
		t.Fatal("config/kustomization.yaml has no line '# components: [https]' to uncomment")
	}
	config, err := filepath.Abs("../../config")
	if err != nil {
		t.Fatal(err)
	}
	// A kustomization of config/ and its component, as uncommenting the line gives
	// (kustomize takes only relative paths).
	withHTTPS := t.TempDir()
	rel, err := filepath.Rel(withHTTPS, config)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(withHTTPS, "kustomization.yaml"),
		fmt.Appendf(nil, "resources: [%s]\ncomponents: [%s]\n", rel, filepath.Join(rel, "https")), 0o644); err != nil {
		t.Fatal(err)
	}
	plain, https := kustomizeBuild(t, config), kustomizeBuild(t, withHTTPS)
	added := map[string]bool{}
	for key, obj := range https {
		base, ok := plain[key]
		switch {
		case !ok:
			added[key] = true
		case key == "Deployment/ferry-gateway" || key == "Deployment/ferry-controller" || key == "Service/ferry-gateway":
		case !equality.Semantic.DeepEqual(base.Object, obj.Object):
			t.Errorf("%s differs from config/'s without https", key)
		}
	}
	for key := range plain {
		if _, ok := https[key]; !ok {
			t.Errorf("%s is gone with https", key)
		}
	}
	want := []string{"ClusterRole/ferry-controller-cert-manager", "ClusterRole/ferry-gateway-tls",
		"ClusterRoleBinding/ferry-controller-cert-manager", "ClusterRoleBinding/ferry-gateway-tls"}
	if got := slices.Sorted(maps.Keys(added)); !slices.Equal(got, want) {
		t.Errorf("https adds %v, want %v", got, want)
	}

	gatewaySA := nested(t, https["Deployment/ferry-gateway"], "spec", "template", "spec", "serviceAccountName")
	controllerSA := nested(t, https["Deployment/ferry-controller"], "spec", "template", "spec", "serviceAccountName")
	gatewayArgs := containerArgs(t, https["Deployment/ferry-gateway"])
	if want := append(containerArgs(t, plain["Deployment/ferry-gateway"]), "--https-addr=:8443"); !slices.Equal(gatewayArgs, want) {
		t.Errorf("gateway args %q, want %q", gatewayArgs, want)
	}
	controllerArgs := containerArgs(t, https["Deployment/ferry-controller"])
	if want := append(containerArgs(t, plain["Deployment/ferry-controller"]), "--cert-manager"); !slices.Equal(controllerArgs, want) {
		t.Errorf("controller args %q, want %q", controllerArgs, want)
	}
	ports := field(https["Deployment/ferry-gateway"], "spec", "template", "spec", "containers")
	if !strings.Contains(fmt.Sprint(ports), "map[containerPort:8443 name:https]") {
		t.Errorf("the gateway container does not name port 8443 https: %v", ports)
	}
	svcPorts := field(https["Service/ferry-gateway"], "spec", "ports")
	if !strings.Contains(fmt.Sprint(svcPorts), "map[name:https port:443 targetPort:https]") {
		t.Errorf("Service ferry-gateway does not send 443 to https: %v", svcPorts)
	}
	for _, b := range []struct{ binding, sa, rule string }{
		{"ferry-gateway-tls", gatewaySA, "map[apiGroups:[] resources:[secrets] verbs:[get list watch]]"},
		{"ferry-controller-cert-manager", controllerSA, "resources:[certificates]"},
	} {
		subjects := field(https["ClusterRoleBinding/"+b.binding], "subjects")
		if want := "map[kind:ServiceAccount name:" + b.sa + " namespace:ferry-system]"; fmt.Sprint(subjects) != "["+want+"]" {
			t.Errorf("ClusterRoleBinding %s binds %v, want %s", b.binding, subjects, want)
		}
		rules := field(https["ClusterRole/"+b.binding], "rules")
		if !strings.Contains(fmt.Sprint(rules), b.rule) {
			t.Errorf("ClusterRole %s: %v, want a rule with %s", b.binding, rules, b.rule)
		}
	}

	// The flags are ferry's: each command's help lists the one config/https adds.
	for cmd, flag := range map[string]string{"gateway": "--https-addr", "controller": "--cert-manager"} {
		out, err := exec.Command(ferryBinary(t), cmd, "--help").CombinedOutput()
		if err != nil || !strings.Contains(string(out), flag+" ") {
			t.Errorf("ferry %s --help (%v) does not list %s:\n%s", cmd, err, flag, out)
		}
	}
}

// kustomizeBuild builds dir as `kubectl apply -k` does, by kind/name.
func kustomizeBuild(t *testing.T, dir string) map[string]*unstructured.Unstructured {
	t.Helper()
	objs := map[string]*unstructured.Unstructured{}
	for _, obj := range kustomize(t, dir) {
		objs[obj.GetKind()+"/"+obj.GetName()] = obj
	}
	return objs
}

func containerArgs(t *testing.T, d *unstructured.Unstructured) []string {
	t.Helper()
	containers, _ := field(d, "spec", "template", "spec", "containers").([]any)
	if len(containers) != 1 {
		t.Fatalf("%s has %d containers, want 1", d.GetName(), len(containers))
	}
	var args []string
	for _, a := range containers[0].(map[string]any)["args"].([]any) {
		args = append(args, a.(string))
	}
	return args
}

// field is obj's value at fields, nil if absent. Not NestedSlice and the like, which
// copy it and refuse kustomize's ints.
func field(obj *unstructured.Unstructured, fields ...string) any {
	if obj == nil {
		return nil
	}
	v, _, _ := unstructured.NestedFieldNoCopy(obj.Object, fields...)
	return v
}

func nested(t *testing.T, obj *unstructured.Unstructured, fields ...string) string {
	t.Helper()
	s, ok, err := unstructured.NestedString(obj.Object, fields...)
	if !ok || err != nil {
		t.Fatalf("%s has no %v (%v)", obj.GetName(), fields, err)
	}
	return s
}
