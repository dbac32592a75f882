package gateway

import (
	"context"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
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

// endpointsReconciler keeps the serviceRegistry in step with Services and their
// EndpointSlices; it is keyed by Service, and touches nothing but that Service's
// snapshot.
type endpointsReconciler struct {
	client   client.Reader
	services *serviceRegistry
	// simulatedPods treats every endpoint as simulated (ferry up, where kwok runs
	// every pod).
	simulatedPods bool
	// dialSimulated treats no endpoint as simulated (Options.DialSimulatedPods).
	dialSimulated bool
}

func (r *endpointsReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
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
		r.services.update(req.NamespacedName, nil)
		return reconcile.Result{}, nil
	}
	simulated, err := r.simulatedNodes(ctx, sliceList.Items)
	if err != nil {
		return reconcile.Result{}, err
	}
	r.services.update(req.NamespacedName, buildEndpoints(svc, sliceList.Items, simulated))
	return reconcile.Result{}, nil
}

// simulatedNodes reports, for each node that hosts an endpoint, whether kwok simulates
// it. Only node metadata is read, so the cache holds no full Node objects.
func (r *endpointsReconciler) simulatedNodes(ctx context.Context, endpointSlices []discoveryv1.EndpointSlice) (func(node string) bool, error) {
	switch {
	case r.dialSimulated:
		return func(string) bool { return false }, nil
	case r.simulatedPods:
		return func(string) bool { return true }, nil
	}
	fake := map[string]bool{}
	for _, s := range endpointSlices {
		for _, ep := range s.Endpoints {
			if ep.NodeName == nil || *ep.NodeName == "" {
				continue
			}
			name := *ep.NodeName
			if _, seen := fake[name]; seen {
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
	}
	return func(node string) bool { return fake[node] }, nil
}

// buildEndpoints indexes the ready endpoints of a Service's slices by slice port. svc
// may be nil when the Service is gone but its slices are not yet.
func buildEndpoints(svc *corev1.Service, endpointSlices []discoveryv1.EndpointSlice, simulated func(node string) bool) *serviceEndpoints {
	se := &serviceEndpoints{byName: map[string]*targetSet{}, byNumber: map[int32]*targetSet{}}
	if svc != nil {
		se.revision = svc.Labels[servingv1.RevisionLabelKey]
		for _, p := range svc.Spec.Ports {
			se.specPorts = append(se.specPorts, specPort{name: p.Name, port: p.Port})
		}
		se.concurrency = positiveAnnotation(svc, servingv1.ContainerConcurrencyAnnotationKey)
		se.timeout = time.Duration(positiveAnnotation(svc, servingv1.TimeoutSecondsAnnotationKey)) * time.Second
	}
	// Each address gets an in-flight counter; the registry replaces it with the one
	// the address already has.
	pods := map[string]*podSlot{}
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
				t := target{addr: net.JoinHostPort(ip, strconv.Itoa(int(*port.Port))), ip: ip, simulated: simulated(node)}
				if t.pod = pods[t.addr]; t.pod == nil {
					t.pod = new(podSlot)
					pods[t.addr] = t.pod
				}
				if !seenByName[name+"/"+t.addr] {
					seenByName[name+"/"+t.addr] = true
					se.byName[name] = addTarget(se.byName[name], t)
				}
				if !seenByNumber[t.addr] {
					seenByNumber[t.addr] = true
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

// positiveAnnotation reads a whole number the Revision reconciler put on the Service;
// absent, malformed or not positive, it is 0 (the default applies).
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

func addTarget(ts *targetSet, t target) *targetSet {
	if ts == nil {
		ts = &targetSet{}
	}
	ts.targets = append(ts.targets, t)
	return ts
}

// sortTargets fixes the order in which ties are broken, so that it does not follow
// slice order.
func sortTargets(ts *targetSet) {
	slices.SortFunc(ts.targets, func(a, b target) int { return strings.Compare(a.addr, b.addr) })
}
