// Package configmaps embeds Knative Serving's ConfigMaps as Ferry ships them (each
// with only an _example block), so that ferry up can create them on its local cluster
// from the same files that kubectl apply -k config/ installs on a real one.
package configmaps

import (
	"context"
	"embed"
	"fmt"
	"io/fs"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"sigs.k8s.io/yaml"
)

// The glob takes in kustomization.yaml too: All skips it.
//
//go:embed *.yaml
var files embed.FS

// All returns the shipped ConfigMaps, freshly parsed on each call: callers may change them.
func All() ([]*corev1.ConfigMap, error) {
	names, err := fs.Glob(files, "*.yaml")
	if err != nil {
		return nil, err
	}
	cms := make([]*corev1.ConfigMap, 0, len(names))
	for _, name := range names {
		if name == "kustomization.yaml" {
			continue
		}
		raw, err := files.ReadFile(name)
		if err != nil {
			return nil, err
		}
		cm := &corev1.ConfigMap{}
		if err := yaml.UnmarshalStrict(raw, cm); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		cms = append(cms, cm)
	}
	return cms, nil
}

// CreateMissing creates each shipped ConfigMap that does not exist yet, so that
// `kubectl edit cm config-domain` finds something to edit. One that exists is the
// user's and is left as it is, whatever it holds.
func CreateMissing(ctx context.Context, client typedcorev1.ConfigMapsGetter) error {
	cms, err := All()
	if err != nil {
		return err
	}
	for _, cm := range cms {
		if _, err := client.ConfigMaps(cm.Namespace).Create(ctx, cm, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating ConfigMap %s/%s: %w", cm.Namespace, cm.Name, err)
		}
	}
	return nil
}
