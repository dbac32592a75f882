package programs

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sync/errgroup"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/pkg/api/v1/resource"
	"k8s.io/kubernetes/pkg/fieldpath"
)

// podFiles writes what a pod's containers mount: its /etc/hosts, /etc/hostname and
// /etc/resolv.conf, and its volumes (emptyDir, configMap, secret, projected: the kinds
// Knative allows), under dir/volumes/<name>.
//
// Its resolv.conf names clusterDNS as a kubelet's --cluster-dns (resolvConf); a
// downward API item's resourceFieldRef reads allocatable for a limit the container
// does not set.
func podFiles(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, ip, dir string, clusterDNS netip.Addr, allocatable corev1.ResourceList) error {
	etc := filepath.Join(dir, "etc")
	if err := os.MkdirAll(etc, 0o755); err != nil {
		return err
	}
	host, err := os.ReadFile("/etc/resolv.conf")
	if err != nil {
		host = nil // a machine without one: no resolver of the host's
	}
	for name, content := range map[string]string{
		"hosts":       fmt.Sprintf("127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n%s\t%s\n", ip, pod.Name),
		"hostname":    pod.Name + "\n",
		"resolv.conf": resolvConf(pod, string(host), clusterDNS),
	} {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	// Volumes, and a projected volume's sources, are written at once: most are a read
	// from the API server (every pod's kube-api-access a token and a ConfigMap), and a
	// pod's start waits for the last.
	var g errgroup.Group
	for _, v := range pod.Spec.Volumes {
		g.Go(func() error {
			d := filepath.Join(dir, "volumes", v.Name)
			if err := os.MkdirAll(d, 0o755); err != nil {
				return err
			}
			if err := writeVolume(ctx, cs, pod, v, allocatable, d); err != nil {
				return &mountError{volume: v.Name, err: err}
			}
			return nil
		})
	}
	return g.Wait()
}

// mountError is a volume the node could not write: the containers wait with it, and
// the pod gets the kubelet's FailedMount Event for it (makeSandbox).
type mountError struct {
	volume string
	err    error
}

func (e *mountError) Error() string { return fmt.Sprintf("volume %q: %v", e.volume, e.err) }
func (e *mountError) Unwrap() error { return e.err }

// event is the kubelet's FailedMount message.
func (e *mountError) event() string {
	return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", e.volume, e.err)
}

func writeVolume(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, v corev1.Volume, allocatable corev1.ResourceList, dir string) error {
	switch {
	case v.EmptyDir != nil:
		return os.Chmod(dir, 0o777) // as the kubelet makes it: any user may write
	case v.ConfigMap != nil:
		return writeConfigMap(ctx, cs, pod.Namespace, v.ConfigMap.LocalObjectReference.Name, v.ConfigMap.Items,
			v.ConfigMap.Optional, mode(v.ConfigMap.DefaultMode), dir)
	case v.Secret != nil:
		return writeSecret(ctx, cs, pod.Namespace, v.Secret.SecretName, v.Secret.Items, v.Secret.Optional, mode(v.Secret.DefaultMode), dir)
	case v.Projected != nil:
		var g errgroup.Group
		for _, src := range v.Projected.Sources {
			g.Go(func() error {
				switch m := mode(v.Projected.DefaultMode); {
				case src.ConfigMap != nil:
					return writeConfigMap(ctx, cs, pod.Namespace, src.ConfigMap.Name, src.ConfigMap.Items, src.ConfigMap.Optional, m, dir)
				case src.Secret != nil:
					return writeSecret(ctx, cs, pod.Namespace, src.Secret.Name, src.Secret.Items, src.Secret.Optional, m, dir)
				case src.ServiceAccountToken != nil:
					return writeToken(ctx, cs, pod, src.ServiceAccountToken, m, dir)
				case src.DownwardAPI != nil:
					return writeDownward(pod, src.DownwardAPI.Items, allocatable, m, dir)
				}
				return fmt.Errorf("a projected source of a kind Ferry's program node does not serve")
			})
		}
		return g.Wait()
	}
	return fmt.Errorf("Ferry's program node serves emptyDir, configMap, secret and projected volumes only")
}

func mode(m *int32) os.FileMode {
	if m == nil {
		return 0o644
	}
	return os.FileMode(*m)
}

func writeConfigMap(ctx context.Context, cs kubernetes.Interface, ns, name string, items []corev1.KeyToPath, optional *bool, m os.FileMode, dir string) error {
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil
	}
	if err != nil {
		return fmt.Errorf("configmap %q: %w", name, err)
	}
	data := map[string][]byte{}
	for k, v := range cm.Data {
		data[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		data[k] = v
	}
	return writeKeys("configmap "+name, data, items, optional, m, dir)
}

func writeSecret(ctx context.Context, cs kubernetes.Interface, ns, name string, items []corev1.KeyToPath, optional *bool, m os.FileMode, dir string) error {
	s, err := cs.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) && optional != nil && *optional {
		return nil
	}
	if err != nil {
		return fmt.Errorf("secret %q: %w", name, err)
	}
	return writeKeys("secret "+name, s.Data, items, optional, m, dir)
}

// writeKeys writes every key of data as a file, or only items, each at its path.
func writeKeys(what string, data map[string][]byte, items []corev1.KeyToPath, optional *bool, m os.FileMode, dir string) error {
	if len(items) == 0 {
		for k, v := range data {
			if err := writeFile(dir, k, v, m); err != nil {
				return err
			}
		}
		return nil
	}
	for _, it := range items {
		v, ok := data[it.Key]
		if !ok {
			if optional != nil && *optional {
				continue
			}
			return fmt.Errorf("%s has no key %q", what, it.Key)
		}
		fm := m
		if it.Mode != nil {
			fm = os.FileMode(*it.Mode)
		}
		if err := writeFile(dir, it.Path, v, fm); err != nil {
			return err
		}
	}
	return nil
}

func writeToken(ctx context.Context, cs kubernetes.Interface, pod *corev1.Pod, src *corev1.ServiceAccountTokenProjection, m os.FileMode, dir string) error {
	sa := pod.Spec.ServiceAccountName
	if sa == "" {
		sa = "default"
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: src.ExpirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{Kind: "Pod", APIVersion: "v1", Name: pod.Name, UID: pod.UID},
	}}
	if src.Audience != "" {
		req.Spec.Audiences = []string{src.Audience}
	}
	tok, err := cs.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, sa, req, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("a token for service account %q: %w", sa, err)
	}
	return writeFile(dir, src.Path, []byte(tok.Status.Token), m)
}

// writeDownward writes the downward API's items as the kubelet does: a field of the
// pod's metadata as fieldpath formats it (labels and annotations one per line, sorted),
// or a container's resource (resourceFieldRef), its limit where it sets none being the
// node's allocatable.
func writeDownward(pod *corev1.Pod, items []corev1.DownwardAPIVolumeFile, allocatable corev1.ResourceList, m os.FileMode, dir string) error {
	for _, it := range items {
		var v string
		var err error
		switch {
		case it.FieldRef != nil:
			v, err = fieldpath.ExtractFieldPathAsString(pod, it.FieldRef.FieldPath)
		case it.ResourceFieldRef != nil:
			v, err = resource.ExtractResourceValueByContainerNameAndNodeAllocatable(it.ResourceFieldRef, pod, it.ResourceFieldRef.ContainerName, allocatable)
		default:
			err = errors.New("names neither a fieldRef nor a resourceFieldRef")
		}
		if err != nil {
			return fmt.Errorf("downward API item %q: %w", it.Path, err)
		}
		fm := m
		if it.Mode != nil {
			fm = os.FileMode(*it.Mode)
		}
		if err := writeFile(dir, it.Path, []byte(v), fm); err != nil {
			return err
		}
	}
	return nil
}

// writeFile writes one key's file at rel, a relative path without "..".
func writeFile(dir, rel string, data []byte, m os.FileMode) error {
	if filepath.IsAbs(rel) || strings.Contains(rel, "..") {
		return fmt.Errorf("path %q must be relative and without ..", rel)
	}
	p := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(p, data, m.Perm()); err != nil {
		return err
	}
	return os.Chmod(p, m.Perm())
}

// podVolumes are the pod's volumes as podFiles wrote them under dir; only an emptyDir
// is writable, as the kubelet mounts them.
func podVolumes(pod *corev1.Pod, dir string) map[string]mount {
	vols := map[string]mount{}
	for _, v := range pod.Spec.Volumes {
		vols[v.Name] = mount{source: filepath.Join(dir, "volumes", v.Name), readOnly: v.EmptyDir == nil}
	}
	return vols
}

// containerMounts are the pod files and volumes a container mounts, subPath included.
func containerMounts(ctr *corev1.Container, podDir string, vols map[string]mount) ([]mount, error) {
	etc := filepath.Join(podDir, "etc")
	ms := []mount{
		{source: filepath.Join(etc, "hosts"), destination: "/etc/hosts"},
		{source: filepath.Join(etc, "hostname"), destination: "/etc/hostname"},
		{source: filepath.Join(etc, "resolv.conf"), destination: "/etc/resolv.conf"},
	}
	for _, vm := range ctr.VolumeMounts {
		vol, ok := vols[vm.Name]
		src := vol.source
		if !ok {
			return nil, fmt.Errorf("volumeMount %q names no volume of the pod", vm.Name)
		}
		if vm.SubPath != "" {
			if filepath.IsAbs(vm.SubPath) || strings.Contains(vm.SubPath, "..") {
				return nil, fmt.Errorf("volumeMount %q: subPath %q must be relative and without ..", vm.Name, vm.SubPath)
			}
			src = filepath.Join(src, vm.SubPath)
			if _, err := os.Stat(src); os.IsNotExist(err) {
				if err := os.MkdirAll(src, 0o777); err != nil {
					return nil, err
				}
			}
		}
		ms = append(ms, mount{source: src, destination: vm.MountPath, readOnly: vm.ReadOnly || vol.readOnly})
	}
	return ms, nil
}
