package programs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// resolvedEnv is ctr's environment on a node without Services, ConfigMaps or Secrets.
func resolvedEnv(t *testing.T, pod *corev1.Pod, ctr *corev1.Container) map[string]string {
	t.Helper()
	env, err := (&envSources{}).containerEnv(context.Background(), pod, ctr, "10.42.0.7")
	if err != nil {
		t.Fatal(err)
	}
	return env
}

func serviceLister(t *testing.T, svcs ...*corev1.Service) corev1listers.ServiceLister {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, s := range svcs {
		if err := idx.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	return corev1listers.NewServiceLister(idx)
}

func clusterIPService(ns, name, ip string, port int32) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Port: port, Protocol: corev1.ProtocolTCP}}}}
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

func configMapEnv(name, cm, key string, optional bool) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: cm}, Key: key, Optional: &optional}}}
}

// TestContainerEnv: a container's environment as the kubelet gives it, from each
// source a pod may name.
func TestContainerEnv(t *testing.T) {
	yes, no := true, false
	objects := fake.NewClientset(
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "settings"},
			Data: map[string]string{"greeting": "hello", "LEVEL": "debug"}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "creds"},
			Data: map[string][]byte{"token": []byte("s3cret")}})
	services := serviceLister(t,
		clusterIPService("default", "kubernetes", "10.96.0.1", 443),
		clusterIPService("ns", "backend", "10.96.0.20", 80),
		clusterIPService("other", "elsewhere", "10.96.0.30", 80),
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "headless"},
			Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Ports: []corev1.ServicePort{{Port: 80}}}})
	src := envSources{client: objects, services: services,
		allocatable: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourceCPU: resource.MustParse("2")}}
	pod := func(ctr corev1.Container, links *bool) *corev1.Pod {
		ctr.Name = "app"
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "u-1", Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeName: NodeName, ServiceAccountName: "runner", EnableServiceLinks: links, Containers: []corev1.Container{ctr}}}
	}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		want    map[string]string
		unset   []string
		wantErr string
	}{{
		name: "the pod's own fields, its address and the node's",
		pod: pod(corev1.Container{Env: []corev1.EnvVar{fieldEnv("POD_IP", "status.podIP"), fieldEnv("POD_IPS", "status.podIPs"),
			fieldEnv("HOST_IP", "status.hostIP"), fieldEnv("NAME", "metadata.name"), fieldEnv("NS", "metadata.namespace"),
			fieldEnv("UID", "metadata.uid"), fieldEnv("APP", "metadata.labels['app']"), fieldEnv("NODE", "spec.nodeName"),
			fieldEnv("SA", "spec.serviceAccountName")}}, nil),
		want: map[string]string{"POD_IP": "10.42.0.7", "POD_IPS": "10.42.0.7", "HOST_IP": nodeIP, "NAME": "web-1", "NS": "ns",
			"UID": "u-1", "APP": "web", "NODE": NodeName, "SA": "runner", "HOSTNAME": "web-1", "PATH": defaultPath},
	}, {
		name: "ConfigMaps and Secrets, by key and whole, an optional one missing",
		pod: pod(corev1.Container{
			EnvFrom: []corev1.EnvFromSource{
				{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "settings"}}},
				{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "absent"}, Optional: &yes}}},
			Env: []corev1.EnvVar{configMapEnv("GREETING", "settings", "greeting", false), configMapEnv("MAYBE", "settings", "nope", true),
				configMapEnv("GONE", "absent", "x", true),
				{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
					LocalObjectReference: corev1.LocalObjectReference{Name: "creds"}, Key: "token"}}}}}, nil),
		want:  map[string]string{"CFG_greeting": "hello", "CFG_LEVEL": "debug", "GREETING": "hello", "TOKEN": "s3cret"},
		unset: []string{"MAYBE", "GONE"},
	}, {
		name: "Services of the namespace and the API server's; $(VAR) over them and earlier entries",
		pod: pod(corev1.Container{Env: []corev1.EnvVar{{Name: "FIRST", Value: "a"},
			{Name: "URL", Value: "http://$(BACKEND_SERVICE_HOST):$(BACKEND_SERVICE_PORT)/$(FIRST)/$(LATER)"},
			{Name: "LATER", Value: "b"}, {Name: "BACKEND_PORT", Value: "mine"}}}, nil),
		want: map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443",
			"BACKEND_SERVICE_HOST": "10.96.0.20", "BACKEND_PORT_80_TCP_ADDR": "10.96.0.20", "BACKEND_PORT": "mine",
			"URL": "http://10.96.0.20:80/a/$(LATER)"},
		unset: []string{"ELSEWHERE_SERVICE_HOST", "HEADLESS_SERVICE_HOST"},
	}, {
		name:  "enableServiceLinks false: the API server's only",
		pod:   pod(corev1.Container{}, &no),
		want:  map[string]string{"KUBERNETES_SERVICE_HOST": "10.96.0.1"},
		unset: []string{"BACKEND_SERVICE_HOST"},
	}, {
		name: "limits and requests, the node's allocatable where no limit is set",
		pod: pod(corev1.Container{Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")}},
			Env: []corev1.EnvVar{
				{Name: "MEM", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Gi")}}},
				{Name: "CPU_M", ValueFrom: &corev1.EnvVarSource{ResourceFieldRef: &corev1.ResourceFieldSelector{Resource: "requests.cpu", Divisor: resource.MustParse("1m")}}}}}, nil),
		want: map[string]string{"MEM": "64", "CPU_M": "250"},
	}, {
		name:    "a ConfigMap that is not there",
		pod:     pod(corev1.Container{Env: []corev1.EnvVar{configMapEnv("GREETING", "missing", "greeting", false)}}, nil),
		wantErr: `env GREETING: configmaps "missing" not found`,
	}, {
		name:    "a key that is not there",
		pod:     pod(corev1.Container{Env: []corev1.EnvVar{configMapEnv("GREETING", "settings", "nope", false)}}, nil),
		wantErr: "env GREETING: couldn't find key nope in ConfigMap ns/settings",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			env, err := src.containerEnv(context.Background(), tc.pod, &tc.pod.Spec.Containers[0], "10.42.0.7")
			if tc.wantErr != "" {
				var we *waitError
				if err == nil || err.Error() != tc.wantErr || !errors.As(err, &we) || we.reason != "CreateContainerConfigError" {
					t.Fatalf("error %v, want CreateContainerConfigError %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for k, v := range tc.want {
				if env[k] != v {
					t.Errorf("%s=%q, want %q", k, env[k], v)
				}
			}
			for _, k := range tc.unset {
				if v, ok := env[k]; ok {
					t.Errorf("%s=%q, want it unset", k, v)
				}
			}
		})
	}
}

// TestContainerWaitsForItsConfigMap: a container whose env names a ConfigMap that is
// not there waits with CreateContainerConfigError, saying which, with an Event, and
// starts, with the pod's address in its env, once the ConfigMap is created.
func TestContainerWaitsForItsConfigMap(t *testing.T) {
	out := filepath.Join(t.TempDir(), "env")
	pod := shPod(corev1.RestartPolicyAlways, nil, `echo "$POD_IP $GREETING" > `+out+`; exec sleep 60`)
	pod.Spec.Containers[0].Env = []corev1.EnvVar{fieldEnv("POD_IP", "status.podIP"), configMapEnv("GREETING", "settings", "greeting", false)}
	client := fake.NewClientset()
	r, _ := runPod(t, pod, envSources{client: client})
	waitFor(t, "the container waiting for its ConfigMap", func() (bool, string) {
		cs := r.snapshot().Status.ContainerStatuses[0]
		w := cs.State.Waiting
		return w != nil && w.Reason == "CreateContainerConfigError" && strings.Contains(w.Message, `configmaps "settings" not found`), cs.String()
	})
	var events []string
	waitFor(t, "an Event for the container that cannot start", func() (bool, string) {
		select {
		case e := <-r.n.events.(*record.FakeRecorder).Events:
			events = append(events, e)
			return strings.HasPrefix(e, "Warning Failed Error: env GREETING: "), fmt.Sprint(events)
		default:
			return false, fmt.Sprint(events)
		}
	})
	if _, err := client.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "settings"}, Data: map[string]string{"greeting": "hello"}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the container started with its env", func() (bool, string) {
		b, _ := os.ReadFile(out)
		return string(b) == "127.0.0.1 hello\n", string(b) + " " + r.snapshot().Status.String()
	})
}
