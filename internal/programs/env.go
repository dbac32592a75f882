package programs

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corev1listers "k8s.io/client-go/listers/core/v1"
	"k8s.io/kubernetes/pkg/api/v1/resource"
	"k8s.io/kubernetes/pkg/fieldpath"
	"k8s.io/kubernetes/pkg/kubelet/envvars"
	"k8s.io/kubernetes/third_party/forked/golang/expansion"
)

// The node resolves a container's environment itself, as the kubelet does when it
// starts the container: after the pod's sandbox, so that status.podIP is the pod's
// address. virtual-kubelet resolves it before the provider's CreatePod, before there
// is an address, and refuses status.podIP and status.hostIP outright, so a pod that
// reads them (Knative's own autoscaler and activator do, as many programs do) never
// started; the node runs with its resolution off (SkipDownwardAPIResolution). Nothing
// exported does this whole step (the kubelet's is a method of the kubelet,
// virtual-kubelet's internal), so it is assembled here from the kubelet's own pieces:
// envvars for the Services' variables, fieldpath and resource for the downward API,
// expansion for $(VAR).

// envSources is what a container's environment is read from.
type envSources struct {
	// client reads the ConfigMaps and Secrets that env and envFrom name, fresh, as
	// the pod's volumes are read.
	client kubernetes.Interface
	// services, if not nil, lists the Services whose variables each container gets
	// (the node's informer: no request on a pod's start).
	services corev1listers.ServiceLister
	// allocatable stands in for the limits a container does not set, for
	// resourceFieldRef, as the kubelet uses its node's.
	allocatable corev1.ResourceList
}

// configError is an environment that cannot be made: the container waits with the
// kubelet's CreateContainerConfigError until a later try succeeds.
func configError(err error) error {
	return &waitError{reason: "CreateContainerConfigError", err: err}
}

// containerEnv is ctr's environment in pod at podIP, as the kubelet makes it: PATH,
// HOSTNAME and HOME as a container runtime sets them, the Services' variables, then
// envFrom, then env (each value's $(VAR) expanded over what came before), later
// entries overriding earlier ones except the Services' variables, which fill only
// names left unset.
func (s *envSources) containerEnv(ctx context.Context, pod *corev1.Pod, ctr *corev1.Container, podIP string) (map[string]string, error) {
	env := map[string]string{"PATH": defaultPath, "HOSTNAME": pod.Name, "HOME": "/"}
	serviceEnv, err := s.serviceEnv(pod)
	if err != nil {
		return nil, configError(err)
	}
	own := map[string]string{}
	for _, from := range ctr.EnvFrom {
		data, err := s.envFrom(ctx, pod.Namespace, from)
		if err != nil {
			return nil, configError(err)
		}
		for k, v := range data {
			own[from.Prefix+k] = v
		}
	}
	mapping := expansion.MappingFuncFor(own, serviceEnv)
	for _, e := range ctr.Env {
		v, set, err := s.value(ctx, pod, ctr, e, podIP, mapping)
		if err != nil {
			return nil, configError(fmt.Errorf("env %s: %w", e.Name, err))
		}
		if set {
			own[e.Name] = v
		}
	}
	for k, v := range serviceEnv {
		if _, ok := own[k]; !ok {
			env[k] = v
		}
	}
	for k, v := range own {
		env[k] = v
	}
	return env, nil
}

// serviceEnv is the variables of the Services a pod sees: with enableServiceLinks
// (the default), those of its namespace, and always the API server's ("kubernetes"
// in default) unless a Service of the pod's namespace has its name.
func (s *envSources) serviceEnv(pod *corev1.Pod) (map[string]string, error) {
	if s.services == nil {
		return nil, nil
	}
	links := pod.Spec.EnableServiceLinks == nil || *pod.Spec.EnableServiceLinks
	byName := map[string]*corev1.Service{}
	if api, err := s.services.Services(metav1.NamespaceDefault).Get("kubernetes"); err == nil {
		byName[api.Name] = api
	} else if !apierrors.IsNotFound(err) {
		return nil, err
	}
	if links {
		own, err := s.services.Services(pod.Namespace).List(labels.Everything())
		if err != nil {
			return nil, err
		}
		for _, svc := range own {
			byName[svc.Name] = svc
		}
	}
	list := make([]*corev1.Service, 0, len(byName))
	for _, svc := range byName {
		list = append(list, svc)
	}
	env := map[string]string{}
	for _, e := range envvars.FromServices(list) {
		env[e.Name] = e.Value
	}
	return env, nil
}

// envFrom is what one envFrom entry adds, before its prefix: nothing for an optional
// source that does not exist.
func (s *envSources) envFrom(ctx context.Context, namespace string, from corev1.EnvFromSource) (map[string]string, error) {
	switch {
	case from.ConfigMapRef != nil:
		data, err := s.configMapData(ctx, namespace, from.ConfigMapRef.Name)
		return data, optionalMissing(err, from.ConfigMapRef.Optional)
	case from.SecretRef != nil:
		data, err := s.secretData(ctx, namespace, from.SecretRef.Name)
		return data, optionalMissing(err, from.SecretRef.Optional)
	}
	return nil, nil
}

func (s *envSources) configMapData(ctx context.Context, namespace, name string) (map[string]string, error) {
	cm, err := s.client.CoreV1().ConfigMaps(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return cm.Data, nil
}

func (s *envSources) secretData(ctx context.Context, namespace, name string) (map[string]string, error) {
	sec, err := s.client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	data := make(map[string]string, len(sec.Data))
	for k, v := range sec.Data {
		data[k] = string(v)
	}
	return data, nil
}

// keyValue is one key of a ConfigMap's or Secret's data (read with err); set is false
// where the source or the key is missing and optional.
func keyValue(kind, namespace, name, key string, optional *bool, data map[string]string, err error) (v string, set bool, _ error) {
	if err != nil {
		return "", false, optionalMissing(err, optional)
	}
	v, ok := data[key]
	if !ok && !isTrue(optional) {
		return "", false, fmt.Errorf("couldn't find key %s in %s %s/%s", key, kind, namespace, name)
	}
	return v, ok, nil
}

// value is one env entry's value; set is false where an optional source or key is
// missing, which leaves the name unset.
func (s *envSources) value(ctx context.Context, pod *corev1.Pod, ctr *corev1.Container, e corev1.EnvVar, podIP string,
	mapping func(string) string) (v string, set bool, err error) {
	from := e.ValueFrom
	if e.Value != "" || from == nil {
		return expansion.Expand(e.Value, mapping), true, nil
	}
	switch {
	case from.FieldRef != nil:
		v, err = podField(pod, from.FieldRef.FieldPath, podIP)
		return v, err == nil, err
	case from.ResourceFieldRef != nil:
		name := from.ResourceFieldRef.ContainerName
		if name == "" {
			name = ctr.Name
		}
		v, err = resource.ExtractResourceValueByContainerNameAndNodeAllocatable(from.ResourceFieldRef, pod, name, s.allocatable)
		return v, err == nil, err
	case from.ConfigMapKeyRef != nil:
		ref := from.ConfigMapKeyRef
		data, err := s.configMapData(ctx, pod.Namespace, ref.Name)
		return keyValue("ConfigMap", pod.Namespace, ref.Name, ref.Key, ref.Optional, data, err)
	case from.SecretKeyRef != nil:
		ref := from.SecretKeyRef
		data, err := s.secretData(ctx, pod.Namespace, ref.Name)
		return keyValue("Secret", pod.Namespace, ref.Name, ref.Key, ref.Optional, data, err)
	}
	return "", false, fmt.Errorf("valueFrom names no source this node serves")
}

// podField is a downward API field of the pod: its address and the node's, which
// the kubelet knows only once the pod runs, and the rest from the pod itself.
func podField(pod *corev1.Pod, path, podIP string) (string, error) {
	switch path {
	case "status.podIP", "status.podIPs":
		return podIP, nil
	case "status.hostIP", "status.hostIPs":
		return nodeIP, nil
	case "spec.nodeName", "spec.host":
		return pod.Spec.NodeName, nil
	case "spec.serviceAccountName":
		return pod.Spec.ServiceAccountName, nil
	}
	return fieldpath.ExtractFieldPathAsString(pod, path)
}

// optionalMissing is nil where err says that an optional source does not exist.
func optionalMissing(err error, optional *bool) error {
	if apierrors.IsNotFound(err) && isTrue(optional) {
		return nil
	}
	return err
}

func isTrue(b *bool) bool { return b != nil && *b }
