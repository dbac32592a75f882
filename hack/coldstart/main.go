// Command coldstart times a Knative Service's cold starts, step by step, as a client
// of the cluster sees them: for each round it waits until the Service's latest
// Revision has no pod, sends one request through the gateway, and prints when, from
// the request, the Revision's Deployment asked for a pod, the pod was created,
// scheduled, and Ready, and the first byte came back. The steps on the node (sandbox,
// runc, readiness) are in ferry up's log, one line per pod ("ready ... after it
// reached the node"). docs/programs.md, "Cold start", has its use and results.
//
//	go run ./hack/coldstart --service hello-program --host hello-program.default.example.com
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"maps"
	"net/http"
	"net/http/httptrace"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

var steps = []string{"deployment scaled", "pod created", "pod scheduled", "pod ready", "first byte"}

func main() {
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	namespace := flag.String("namespace", "default", "the Service's namespace")
	service := flag.String("service", "", "the Service's name")
	url := flag.String("url", "http://127.0.0.1:8080/", "the gateway's URL")
	host := flag.String("host", "", "the Host header (the Service's host)")
	rounds := flag.Int("rounds", 10, "cold starts")
	settle := flag.Duration("settle", 3*time.Second, "wait after the last pod has gone")
	flag.Parse()
	if *service == "" || *host == "" {
		log.Fatal("--service and --host are required")
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		log.Fatal(err)
	}
	kube := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	ctx := context.Background()

	svc, err := dyn.Resource(schema.GroupVersionResource{Group: "serving.knative.dev", Version: "v1", Resource: "services"}).
		Namespace(*namespace).Get(ctx, *service, metav1.GetOptions{})
	if err != nil {
		log.Fatal(err)
	}
	revision, _, _ := unstructured.NestedString(svc.Object, "status", "latestReadyRevisionName")
	if revision == "" {
		log.Fatalf("service %s has no ready Revision", *service)
	}
	selector := "serving.knative.dev/revision=" + revision
	all := map[string][]time.Duration{}
	for round := 1; round <= *rounds; round++ {
		if err := waitNoPods(ctx, kube, *namespace, selector); err != nil {
			log.Fatal(err)
		}
		time.Sleep(*settle)
		got, err := coldStart(ctx, kube, *namespace, selector, *url, *host)
		if err != nil {
			log.Fatal(err)
		}
		var line []string
		for _, s := range steps {
			if d, ok := got[s]; ok {
				all[s] = append(all[s], d)
				line = append(line, fmt.Sprintf("%s %.1fms", s, ms(d)))
			}
		}
		fmt.Printf("round %d: %s\n", round, strings.Join(line, ", "))
	}
	fmt.Println("median (min-max) from the request, ms:")
	for _, s := range steps {
		d := all[s]
		if len(d) == 0 {
			continue
		}
		slices.Sort(d)
		fmt.Printf("  %-18s %6.1f  (%.1f-%.1f)\n", s, ms(d[len(d)/2]), ms(d[0]), ms(d[len(d)-1]))
	}
}

// coldStart sends one request and returns when each step was seen, from its start.
func coldStart(ctx context.Context, kube kubernetes.Interface, namespace, selector, url, host string) (map[string]time.Duration, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pods, err := kube.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	deployments, err := kube.AppsV1().Deployments(namespace).Watch(ctx, metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	got := map[string]time.Duration{}
	var start time.Time
	seen := func(step string) {
		mu.Lock()
		defer mu.Unlock()
		if _, ok := got[step]; !ok && !start.IsZero() {
			got[step] = time.Since(start)
		}
	}
	go watchSteps(pods, deployments, seen)

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Host = host
	req = req.WithContext(httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
		GotFirstResponseByte: func() { seen("first byte") },
	}))
	mu.Lock()
	start = time.Now()
	mu.Unlock()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("the request got %s", resp.Status)
	}
	// The watches may deliver the last steps after the answer.
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n == len(steps) {
			break
		}
	}
	mu.Lock()
	defer mu.Unlock()
	return maps.Clone(got), nil
}

func watchSteps(pods, deployments watch.Interface, seen func(string)) {
	for {
		select {
		case ev, ok := <-deployments.ResultChan():
			if !ok {
				return
			}
			if d, isDeployment := ev.Object.(*appsv1.Deployment); isDeployment && d.Spec.Replicas != nil && *d.Spec.Replicas > 0 {
				seen("deployment scaled")
			}
		case ev, ok := <-pods.ResultChan():
			if !ok {
				return
			}
			p, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type == watch.Deleted || p.DeletionTimestamp != nil {
				continue
			}
			seen("pod created")
			if p.Spec.NodeName != "" {
				seen("pod scheduled")
			}
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
					seen("pod ready")
				}
			}
		}
	}
}

func waitNoPods(ctx context.Context, kube kubernetes.Interface, namespace, selector string) error {
	for {
		list, err := kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			return err
		}
		if len(list.Items) == 0 {
			return nil
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
