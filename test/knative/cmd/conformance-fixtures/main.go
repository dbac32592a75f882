// Command conformance-fixtures makes what Knative's conformance suite expects on the
// cluster of `make conformance` (hack/conformance.sh), without kubectl, which a fresh
// machine does not have: Knative's own fixture manifests (namespaces serving-tests and
// serving-tests-alt, ConfigMap conformance-test-configmap, Secret
// conformance-test-secret), applied server-side as they are, and the ingress Service
// whose port 80 nodePort the suite's spoofing client dials. It returns once each test
// namespace has its default ServiceAccount, without which no pod can be created.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "the cluster's kubeconfig")
	ingress := flag.String("ingress", "ferry-system/conformance-ingress", "NAMESPACE/NAME of the ingress Service to make")
	httpPort := flag.Int("http-node-port", 31080, "the nodePort of its port 80: the gateway's port")
	httpsPort := flag.Int("https-node-port", 31443, "the nodePort of its port 443: the gateway's HTTPS port")
	flag.Parse()
	if err := run(*kubeconfig, *ingress, int32(*httpPort), int32(*httpsPort), flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "conformance-fixtures:", err)
		os.Exit(1)
	}
}

func run(kubeconfig, ingress string, httpPort, httpsPort int32, manifests []string) error {
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	namespaces := map[string]bool{}
	for _, path := range manifests {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := &unstructured.Unstructured{}
			if err := dec.Decode(&obj.Object); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			if len(obj.Object) == 0 {
				continue
			}
			gvk := obj.GroupVersionKind()
			mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return fmt.Errorf("%s: %s: %w", path, gvk, err)
			}
			body, err := obj.MarshalJSON()
			if err != nil {
				return err
			}
			force := true
			r := dyn.Resource(mapping.Resource)
			if gvk.Kind == "Namespace" {
				namespaces[obj.GetName()] = true
				_, err = r.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "conformance-fixtures", Force: &force})
			} else {
				_, err = r.Namespace(obj.GetNamespace()).Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "conformance-fixtures", Force: &force})
			}
			if err != nil {
				return fmt.Errorf("%s: %s %s: %w", path, gvk.Kind, obj.GetName(), err)
			}
		}
	}
	ns, name, ok := strings.Cut(ingress, "/")
	if !ok || ns == "" || name == "" {
		return fmt.Errorf("--ingress %q: want NAMESPACE/NAME", ingress)
	}
	// No selector: nothing is behind it; the suite reads only its nodePorts.
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceTypeNodePort,
		Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, NodePort: httpPort},
			{Name: "https", Port: 443, NodePort: httpsPort},
		},
	}}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("service %s: %w", ingress, err)
	}
	deadline := time.Now().Add(time.Minute)
	for n := range namespaces {
		for {
			_, err := cs.CoreV1().ServiceAccounts(n).Get(ctx, "default", metav1.GetOptions{})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("namespace %s has no default ServiceAccount after a minute: %w", n, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	return nil
}
