package localcluster

import (
	"context"
	"fmt"
	"time"

	"github.com/ferry-serving/ferry/config/crd"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// installCRDs creates or updates Ferry's CRDs and waits until each is Established, so
// that the caller can use the kinds as soon as Start returns.
func installCRDs(ctx context.Context, cfg *rest.Config) error {
	crds, err := crd.All()
	if err != nil {
		return err
	}
	cs, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return err
	}
	api := cs.ApiextensionsV1().CustomResourceDefinitions()
	for _, want := range crds {
		got, err := api.Get(ctx, want.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			_, err = api.Create(ctx, want, metav1.CreateOptions{})
		case err == nil:
			want.ResourceVersion = got.ResourceVersion
			_, err = api.Update(ctx, want, metav1.UpdateOptions{})
		}
		if err != nil {
			return fmt.Errorf("installing CRD %s: %w", want.Name, err)
		}
	}
	// Established is not enough: clients (kubectl, controller-runtime's REST mapper)
	// find kinds through discovery, which is updated a moment later.
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	for _, want := range crds {
		err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
			got, err := api.Get(ctx, want.Name, metav1.GetOptions{})
			if err != nil || !established(got) {
				return false, nil
			}
			list, err := dc.ServerResourcesForGroupVersion(want.Spec.Group + "/" + want.Spec.Versions[0].Name)
			if err != nil {
				return false, nil
			}
			for _, r := range list.APIResources {
				if r.Name == want.Spec.Names.Plural {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			return fmt.Errorf("CRD %s was not established: %w", want.Name, err)
		}
	}
	return nil
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
