package backends

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	networkingv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/internal/watches"
)

// Kwok runs simulated pods on nodes that carry this annotation.
const (
	kwokNodeAnnotation = "kwok.x-k8s.io/node"
	kwokNodeFake       = "fake"
)

// endpointSliceServiceIndex indexes EndpointSlices by the Service they belong to.
const endpointSliceServiceIndex = "ferry.gateway.serviceName"

func endpointSliceService(o client.Object) []string {
	if name := o.GetLabels()[discoveryv1.LabelServiceName]; name != "" {
		return []string{name}
	}
	return nil
}

// podRevisionIndex indexes the pods of Revisions by the Revision they run. It is the
// gateway's own (the Revision reconciler has one too): `ferry gateway` runs without
// the reconcilers.
const podRevisionIndex = "ferry.gateway.podRevision"

func podRevision(o client.Object) []string {
	if name := o.GetLabels()[servingv1.RevisionLabelKey]; name != "" {
		return []string{name}
	}
	return nil
}

// endpointsReconciler keeps the serviceRegistry in step with what a KIngress split
// can name, keyed by namespace and name, and touches nothing but that key's snapshot:
//   - a Revision: its ready pods, which the gateway follows itself (there is no
//     Kubernetes Service per Revision, so no EndpointSlice controller work and no
//     write per Revision to expose it);
//   - otherwise a Service: its EndpointSlices' ready endpoints.
type endpointsReconciler struct {
	client   client.Reader
	services *Registry
	// simulatedPods treats every endpoint as simulated (ferry up, where kwok runs
	// every pod).
	simulatedPods bool
	// dialSimulated treats no endpoint as simulated (Options.DialSimulatedPods).
	dialSimulated bool
}

func (r *endpointsReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	rev := &servingv1.Revision{}
	switch err := r.client.Get(ctx, req.NamespacedName, rev); {
	case err == nil:
		return reconcile.Result{}, r.reconcileRevision(ctx, req.NamespacedName, rev)
	case !apierrors.IsNotFound(err):
		return reconcile.Result{}, err
	}
	var svc *corev1.Service
	var got corev1.Service
	switch err := r.client.Get(ctx, req.NamespacedName, &got); {
	case err == nil:
		svc = &got
	case !apierrors.IsNotFound(err):
		return reconcile.Result{}, err
	}
	var sliceList discoveryv1.EndpointSliceList
	if err := r.client.List(ctx, &sliceList, client.InNamespace(req.Namespace),
		client.MatchingFields{endpointSliceServiceIndex: req.Name}); err != nil {
		return reconcile.Result{}, err
	}
	if svc == nil && len(sliceList.Items) == 0 {
		r.services.Update(req.NamespacedName, nil)
		return reconcile.Result{}, nil
	}
	var nodes []string
	for _, s := range sliceList.Items {
		for _, ep := range s.Endpoints {
			if ep.NodeName != nil {
				nodes = append(nodes, *ep.NodeName)
			}
		}
	}
	simulated, err := r.simulatedNodes(ctx, nodes)
	if err != nil {
		return reconcile.Result{}, err
	}
	r.services.Update(req.NamespacedName, BuildEndpoints(svc, sliceList.Items, simulated))
	return reconcile.Result{}, nil
}

// reconcileRevision publishes the Revision's ready pods.
func (r *endpointsReconciler) reconcileRevision(ctx context.Context, key types.NamespacedName, rev *servingv1.Revision) error {
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(rev.Namespace), client.MatchingFields{podRevisionIndex: rev.Name}); err != nil {
		return err
	}
	nodes := make([]string, 0, len(pods.Items))
	for i := range pods.Items {
		nodes = append(nodes, pods.Items[i].Spec.NodeName)
	}
	simulated, err := r.simulatedNodes(ctx, nodes)
	if err != nil {
		return err
	}
	r.services.Update(key, BuildRevisionEndpoints(rev, pods.Items, simulated))
	return nil
}

// simulatedNodes reports, for each node that hosts an endpoint, whether kwok simulates
// it. Only node metadata is read, so the cache holds no full Node objects.
func (r *endpointsReconciler) simulatedNodes(ctx context.Context, nodes []string) (func(node string) bool, error) {
	switch {
	case r.dialSimulated:
		return func(string) bool { return false }, nil
	case r.simulatedPods:
		return func(string) bool { return true }, nil
	}
	fake := map[string]bool{}
	for _, name := range nodes {
		if _, seen := fake[name]; seen || name == "" {
			continue
		}
		node := &metav1.PartialObjectMetadata{}
		node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
		switch err := r.client.Get(ctx, client.ObjectKey{Name: name}, node); {
		case apierrors.IsNotFound(err):
			fake[name] = false
		case err != nil:
			return nil, err
		default:
			fake[name] = node.Annotations[kwokNodeAnnotation] == kwokNodeFake
		}
	}
	return func(node string) bool { return fake[node] }, nil
}

// BuildRevisionEndpoints indexes a Revision's ready pods under its port: 80, named
// "http", to the Revision's user port. A pod is ready as an EndpointSlice would say:
// it has an address, its Ready condition is True, and it is not terminating. A pod
// stays Ready while its preStop sleep runs; that sleep is the drain, and it counts on
// every gateway sending the pod nothing new from its deletionTimestamp on (requests
// already sent finish on their connections). containerConcurrency, the timeouts and
// the protocol (a first port named h2c) come from the Revision's spec, how simulated
// pods answer from its annotations.
func BuildRevisionEndpoints(rev *servingv1.Revision, pods []corev1.Pod, simulated func(node string) bool) *Endpoints {
	port := rev.Spec.UserPort()
	se := &Endpoints{
		revision:      rev.Name,
		service:       rev.Labels[servingv1.ServiceLabelKey],
		configuration: rev.Labels[servingv1.ConfigurationLabelKey],
		specPorts:     []specPort{{name: networkingv1alpha1.ServicePortNameHTTP1, port: networkingv1alpha1.ServiceHTTPPort}},
		byName:        map[string]*TargetSet{},
		byNumber:      map[int32]*TargetSet{},
	}
	se.Simulation = simulationOf(rev.Annotations)
	if cc := rev.Spec.ContainerConcurrency; cc != nil && *cc > 0 {
		se.concurrency = *cc
	}
	se.timeout = seconds(rev.Spec.TimeoutSeconds)
	se.responseStart = seconds(rev.Spec.ResponseStartTimeoutSeconds)
	se.idle = seconds(rev.Spec.IdleTimeoutSeconds)
	h2c := rev.Spec.Protocol() == servingv1.ProtocolH2C
	var ready *TargetSet
	for i := range pods {
		pod := &pods[i]
		if pod.DeletionTimestamp != nil || pod.Status.PodIP == "" || !podReady(pod) {
			continue
		}
		ip, podPort := pod.Status.PodIP, port
		// ferry up's program node, running pods as host processes, gives each its own.
		if p, err := strconv.ParseUint(pod.Annotations[servingv1.ServingPortAnnotationKey], 10, 16); err == nil && p > 0 {
			podPort = int32(p)
		}
		ready = addTarget(ready, Target{Addr: net.JoinHostPort(ip, strconv.Itoa(int(podPort))), IP: ip,
			Simulated: simulated(pod.Spec.NodeName), H2C: h2c, Pod: &PodSlot{name: pod.Name}})
	}
	if ready != nil {
		sortTargets(ready)
		se.byName[networkingv1alpha1.ServicePortNameHTTP1] = ready
		se.byNumber[port] = ready
	}
	return se
}

// seconds reads a timeout field; absent or not positive is 0 (none, or the default).
func seconds(s *int64) time.Duration {
	if s == nil || *s <= 0 {
		return 0
	}
	return time.Duration(*s) * time.Second
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// BuildEndpoints indexes the ready endpoints of a Service's slices by slice port. svc
// may be nil when the Service is gone but its slices are not yet.
func BuildEndpoints(svc *corev1.Service, endpointSlices []discoveryv1.EndpointSlice, simulated func(node string) bool) *Endpoints {
	se := &Endpoints{byName: map[string]*TargetSet{}, byNumber: map[int32]*TargetSet{}}
	if svc != nil {
		se.revision = svc.Labels[servingv1.RevisionLabelKey]
		se.service, se.configuration = svc.Labels[servingv1.ServiceLabelKey], svc.Labels[servingv1.ConfigurationLabelKey]
		for _, p := range svc.Spec.Ports {
			se.specPorts = append(se.specPorts, specPort{name: p.Name, port: p.Port})
		}
		se.concurrency = positiveAnnotation(svc, servingv1.ContainerConcurrencyAnnotationKey)
		se.timeout = time.Duration(positiveAnnotation(svc, servingv1.TimeoutSecondsAnnotationKey)) * time.Second
	}
	// Each address gets an in-flight counter; the registry replaces it with the one
	// the address already has.
	pods := map[string]*PodSlot{}
	// Slices may overlap while the endpoint controller moves endpoints between them.
	seenByName, seenByNumber := map[string]bool{}, map[string]bool{}
	for _, s := range endpointSlices {
		for _, port := range s.Ports {
			if port.Port == nil {
				continue
			}
			name := ""
			if port.Name != nil {
				name = *port.Name
			}
			h2c := speaksH2C(name, port.AppProtocol)
			for _, ep := range s.Endpoints {
				// A nil Ready means unknown, which the API says to treat as ready.
				if len(ep.Addresses) == 0 || ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
					continue
				}
				node := ""
				if ep.NodeName != nil {
					node = *ep.NodeName
				}
				// Addresses are fungible; consumers use the first.
				ip := ep.Addresses[0]
				t := Target{Addr: net.JoinHostPort(ip, strconv.Itoa(int(*port.Port))), IP: ip, Simulated: simulated(node), H2C: h2c}
				if t.Pod = pods[t.Addr]; t.Pod == nil {
					t.Pod = &PodSlot{name: endpointPod(ep)}
					pods[t.Addr] = t.Pod
				}
				if !seenByName[name+"/"+t.Addr] {
					seenByName[name+"/"+t.Addr] = true
					se.byName[name] = addTarget(se.byName[name], t)
				}
				if !seenByNumber[t.Addr] {
					seenByNumber[t.Addr] = true
					se.byNumber[*port.Port] = addTarget(se.byNumber[*port.Port], t)
				}
			}
		}
	}
	for _, ts := range se.byName {
		sortTargets(ts)
	}
	for _, ts := range se.byNumber {
		sortTargets(ts)
	}
	return se
}

// endpointPod names the pod behind an endpoint, or, for one that is not a pod's,
// gives its address.
func endpointPod(ep discoveryv1.Endpoint) string {
	if ref := ep.TargetRef; ref != nil && ref.Kind == "Pod" && ref.Name != "" {
		return ref.Name
	}
	return ep.Addresses[0]
}

// appProtocolH2C is the appProtocol of a port that speaks HTTP/2 without TLS
// (KEP-3726), as Knative's private Service ports say.
const appProtocolH2C = "kubernetes.io/h2c"

// speaksH2C says whether an EndpointSlice port speaks HTTP/2 without TLS: its
// appProtocol says so, or, without one, its name is h2c or http2 (Knative names a
// Revision Service's h2c port http2).
func speaksH2C(name string, appProtocol *string) bool {
	if appProtocol != nil && *appProtocol != "" {
		return *appProtocol == appProtocolH2C
	}
	return name == "h2c" || name == "http2"
}

// positiveAnnotation reads a whole number set on the Service; absent, malformed or not
// positive, it is 0 (the default applies).
func positiveAnnotation(svc *corev1.Service, key string) int64 {
	v, ok := svc.Annotations[key]
	if !ok {
		return 0
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 32)
	if err != nil || n < 0 {
		return 0
	}
	return n
}

func addTarget(ts *TargetSet, t Target) *TargetSet {
	if ts == nil {
		ts = &TargetSet{}
	}
	ts.targets = append(ts.targets, t)
	return ts
}

// sortTargets fixes the order in which ties are broken, so that it does not follow
// slice order.
func sortTargets(ts *TargetSet) {
	slices.SortFunc(ts.targets, func(a, b Target) int { return strings.Compare(a.Addr, b.Addr) })
}

// sliceOwner maps an EndpointSlice to its Service. Deletions arrive with the last
// known object, tombstones unwrapped by controller-runtime, so the label is there.
func sliceOwner(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[discoveryv1.LabelServiceName]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// podOwner maps a pod to its Revision, by the label the Revision's Deployment gives
// its pods (the cache holds only such pods).
func podOwner(_ context.Context, o client.Object) []reconcile.Request {
	name := o.GetLabels()[servingv1.RevisionLabelKey]
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}

// endpointView is what of a pod its Revision's endpoints are built from.
type endpointView struct {
	ip, node           string
	ready, terminating bool
}

func asEndpoint(pod *corev1.Pod) endpointView {
	return endpointView{ip: pod.Status.PodIP, node: pod.Spec.NodeName, ready: podReady(pod), terminating: pod.DeletionTimestamp != nil}
}

// SetupEndpoints registers the endpoints reconciler with mgr, and the indexes it lists
// by: Services and their EndpointSlices, Revisions and their pods. It keeps services
// in step; simulatedPods and dialSimulated are Options.SimulatedPods and
// Options.DialSimulatedPods of the gateway.
func SetupEndpoints(mgr ctrl.Manager, services *Registry, simulatedPods, dialSimulated bool) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &discoveryv1.EndpointSlice{},
		endpointSliceServiceIndex, endpointSliceService); err != nil {
		return fmt.Errorf("indexing EndpointSlices by Service: %w", err)
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &corev1.Pod{}, podRevisionIndex, podRevision); err != nil {
		return fmt.Errorf("indexing pods by Revision: %w", err)
	}
	ctl := EndpointsController(mgr.GetClient(), services, simulatedPods, dialSimulated)
	if err := ctl.Register(mgr, 2); err != nil {
		return fmt.Errorf("setting up the endpoints reconciler: %w", err)
	}
	return nil
}

// EndpointsController is the endpoints reconciler and what wakes it, in every replica:
// Services, their EndpointSlices, Revisions' specs and their pods' addresses and
// readiness. It keeps services in step (SetupEndpoints says the rest).
func EndpointsController(c client.Client, services *Registry, simulatedPods, dialSimulated bool) watches.Controller {
	return watches.Controller{
		Name: "gateway-endpoints",
		Watches: []watches.Watch{
			{Object: &corev1.Service{}, Handler: watches.Enqueue()},
			{Object: &discoveryv1.EndpointSlice{}, Handler: handler.EnqueueRequestsFromMapFunc(sliceOwner)},
			// A Revision's spec says its port, concurrency and timeout; its status
			// changes nothing here.
			{Object: &servingv1.Revision{}, Handler: watches.Enqueue(), Predicates: []predicate.Predicate{predicate.GenerationChangedPredicate{}}},
			{Object: &corev1.Pod{}, Handler: handler.EnqueueRequestsFromMapFunc(podOwner), Predicates: []predicate.Predicate{predicate.Funcs{
				UpdateFunc: func(e event.UpdateEvent) bool {
					return asEndpoint(e.ObjectOld.(*corev1.Pod)) != asEndpoint(e.ObjectNew.(*corev1.Pod))
				},
			}}},
		},
		Reconciler:   &endpointsReconciler{client: c, services: services, simulatedPods: simulatedPods, dialSimulated: dialSimulated},
		EveryReplica: true,
	}
}
