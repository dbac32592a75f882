package localcluster

import (
	"context"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeat "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/kwok/pkg/apis/internalversion"
	kwokclientset "sigs.k8s.io/kwok/pkg/client/clientset/versioned"
	"sigs.k8s.io/kwok/pkg/config"
	"sigs.k8s.io/kwok/pkg/kwok/controllers"
	kwoklog "sigs.k8s.io/kwok/pkg/log"
	kwokclient "sigs.k8s.io/kwok/pkg/utils/client"
)

// Names of the fake node and of the images that make kwok simulate failures.
const (
	NodeName            = "ferry-node"
	ImagePullErrorImage = "ferry.test/image-pull-error"
	CrashingImage       = "ferry.test/exit-1"
	// NeverReadyImage runs, but its readiness probe never passes: a Revision of it
	// stays on its way to Ready until its progress deadline.
	NeverReadyImage    = "ferry.test/never-ready"
	fakeNodeAnnotation = "kwok.x-k8s.io/node"
	podCIDR            = "10.244.0.0/16"
)

// startKwok starts kwok's controllers in-process and creates the fake Node they manage.
func startKwok(ctx context.Context, cfg *rest.Config, kubeconfig string, logs io.Writer) error {
	ctx = kwoklog.NewContext(ctx, kwoklog.NewLogger(logs, kwoklog.LevelWarn))
	getDefaults := kwoklog.NewContext(context.Background(), kwoklog.NewLogger(io.Discard, kwoklog.LevelError))
	stages, err := kwokStages()
	if err != nil {
		return err
	}
	cs, err := kwokclient.NewClientset("", kubeconfig)
	if err != nil {
		return err
	}
	dynamicClient, err := cs.ToDynamicClient()
	if err != nil {
		return err
	}
	restMapper, err := cs.ToRESTMapper()
	if err != nil {
		return err
	}
	kwokRESTConfig, err := cs.ToRESTConfig()
	if err != nil {
		return err
	}
	restClient, err := rest.RESTClientFor(kwokRESTConfig)
	if err != nil {
		return err
	}
	typed, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	typedKwok, err := kwokclientset.NewForConfig(cfg)
	if err != nil {
		return err
	}
	defaults := config.GetKwokConfiguration(getDefaults).Options
	ctr, err := controllers.NewController(controllers.Config{
		Clock:                             clock.RealClock{},
		DynamicClient:                     dynamicClient,
		RESTClient:                        restClient,
		RESTMapper:                        restMapper,
		ImpersonatingDynamicClient:        cs.ToImpersonatingDynamicClient(),
		ImpersonatingTypedClient:          cs.ToImpersonatingTypedClient(),
		TypedClient:                       typed,
		TypedKwokClient:                   typedKwok,
		ManageNodesWithAnnotationSelector: fakeNodeAnnotation + "=fake",
		CIDR:                              podCIDR,
		NodeIP:                            "10.244.255.254",
		NodeName:                          NodeName,
		LocalStages:                       stages,
		PodPlayStageParallelism:           defaults.PodPlayStageParallelism * 4,
		NodePlayStageParallelism:          defaults.NodePlayStageParallelism,
		NodeLeaseDurationSeconds:          defaults.NodeLeaseDurationSeconds,
		NodeLeaseParallelism:              defaults.NodeLeaseParallelism,
		PodsOnNodeSyncParallelism:         defaults.PodsOnNodeSyncParallelism,
		ID:                                "ferry-localcluster",
	})
	if err != nil {
		return fmt.Errorf("kwok: %w", err)
	}
	if err := ctr.Start(ctx); err != nil {
		return fmt.Errorf("kwok: %w", err)
	}
	return createFakeNode(ctx, typed)
}

func createFakeNode(ctx context.Context, cs kubernetes.Interface) error {
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("1000"),
		corev1.ResourceMemory: resource.MustParse("4Ti"),
		corev1.ResourcePods:   resource.MustParse("100000"),
	}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        NodeName,
			Annotations: map[string]string{fakeNodeAnnotation: "fake"},
			Labels:      map[string]string{"type": "kwok", "kubernetes.io/hostname": NodeName, "kubernetes.io/os": "linux"},
		},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	_, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// kwokStages are kwok's "fast" node and pod stages, with pods of the failure images
// taken out of the ready stage and given stages of their own.
func kwokStages() (map[internalversion.StageResourceRef][]*internalversion.Stage, error) {
	notFailureImage := "    matchExpressions:\n" +
		"    - key: '.spec.containers.[0].image'\n" +
		"      operator: 'NotIn'\n" +
		"      values: ['" + ImagePullErrorImage + "', '" + CrashingImage + "', '" + NeverReadyImage + "']\n"
	podReady := strings.Replace(podfast.DefaultPodReady, "    matchExpressions:\n", notFailureImage, 1)
	if podReady == podfast.DefaultPodReady {
		return nil, fmt.Errorf("kwok's pod-ready stage has changed shape; update kwokStages")
	}
	out := map[internalversion.StageResourceRef][]*internalversion.Stage{}
	for _, raw := range []string{nodefast.DefaultNodeInit, nodeheartbeat.DefaultNodeHeartbeat,
		podReady, podfast.DefaultPodComplete, podfast.DefaultPodDelete, imagePullErrorStage, crashLoopStage, neverReadyStage} {
		stage, err := config.UnmarshalWithType[*internalversion.Stage](raw)
		if err != nil {
			return nil, fmt.Errorf("kwok stage: %w", err)
		}
		out[stage.Spec.ResourceRef] = append(out[stage.Spec.ResourceRef], stage)
	}
	return out, nil
}

// imagePullErrorStage leaves a pod Pending with its containers waiting on ErrImagePull,
// as a kubelet does for an image that cannot be pulled.
var imagePullErrorStage = notReadyStage("ferry-pod-image-pull-error", ImagePullErrorImage, `
    - key: '.status.containerStatuses'
      operator: 'DoesNotExist'`, `
        restartCount: 0
        state:
          waiting:
            reason: ErrImagePull
            message: {{ printf "failed to pull image %q: not found" .image | Quote }}`, `
      phase: Pending`)

// crashLoopStage runs a pod whose containers exit 1 and crash-loop.
var crashLoopStage = notReadyStage("ferry-pod-crash-loop", CrashingImage, "", `
        restartCount: 1
        lastState:
          terminated:
            exitCode: 1
            reason: Error
            message: "container exited with code 1"
            startedAt: {{ $now | Quote }}
            finishedAt: {{ $now | Quote }}
        state:
          waiting:
            reason: CrashLoopBackOff
            message: "back-off restarting failed container"`, running)

// neverReadyStage runs a pod whose containers never pass their readiness probe.
var neverReadyStage = notReadyStage("ferry-pod-never-ready", NeverReadyImage, "", `
        started: true
        restartCount: 0
        state:
          running:
            startedAt: {{ $now | Quote }}`, running)

// running is the end of a status that has the pod Running with its IPs.
const running = `
      {{ $podIPs := PodIPsWith .spec.nodeName ( or .spec.hostNetwork false ) ( or .metadata.uid "" ) ( or .metadata.name "" ) ( or .metadata.namespace "" ) }}
      {{ with $podIPs }}
      podIP: {{ index . 0 | Quote }}
      podIPs:
      {{ range . }}
      - ip: {{ . | Quote }}
      {{ end }}
      {{ end }}
      phase: Running
      startTime: {{ $now | Quote }}`

// notReadyStage is a stage for the Pending pods of image (and of the selector's further
// expressions): scheduled, not Ready, each container's status ending in containerState
// and the pod's in podState (YAML indented for them).
func notReadyStage(name, image, selector, containerState, podState string) string {
	return `apiVersion: kwok.x-k8s.io/v1alpha1
kind: Stage
metadata:
  name: ` + name + `
spec:
  resourceRef:
    apiGroup: v1
    kind: Pod
  selector:
    matchExpressions:
    - key: '.metadata.deletionTimestamp'
      operator: 'DoesNotExist'
    - key: '.status.phase'
      operator: 'In'
      values: ['Pending']
    - key: '.spec.containers.[0].image'
      operator: 'In'
      values: ['` + image + `']` + selector + `
  next:
    statusTemplate: |
      {{ $now := Now }}
      conditions:
      - lastTransitionTime: {{ $now | Quote }}
        status: "True"
        type: PodScheduled
      - lastTransitionTime: {{ $now | Quote }}
        status: "False"
        type: Ready
        reason: ContainersNotReady
      containerStatuses:
      {{ range .spec.containers }}
      - image: {{ .image | Quote }}
        name: {{ .name | Quote }}
        ready: false` + containerState + `
      {{ end }}` + podState + `
`
}
