package admission

import (
	"context"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	revresources "github.com/ferry-serving/ferry/internal/reconciler/revision/resources"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
)

// dryRunPodSpec is Knative's extra check of a server-side dry run (kubectl apply
// --dry-run=server) of a Service or of a Configuration no Service owns: the Pod that
// the Revision would run is created with dryRun=All, so that the API server's own
// validation and admission (quotas, PodSecurity, other webhooks) judge it before
// anything is stored. config-features kubernetes.podspec-dryrun Disabled turns it off.
func dryRunPodSpec(ctx context.Context, client kubernetes.Interface, f *config.Features, namespace string, t *servingv1.RevisionTemplateSpec) *FieldError {
	if client == nil || f.PodSpecDryRun == config.Disabled {
		return nil
	}
	rev := &servingv1.Revision{
		ObjectMeta: metav1.ObjectMeta{Name: "dry-run-validation", Namespace: namespace, Annotations: t.ObjectMeta.Annotations},
		Spec:       *t.Spec.DeepCopy(),
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "dry-run-validation-", Namespace: namespace},
		Spec:       revresources.MakeDeployment(rev, 600, 1).Spec.Template.Spec,
	}
	_, err := client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	// Only the Pod's own validation (Invalid) refuses the request. A refusal that
	// depends on the cluster's state (a ServiceAccount, PriorityClass or RuntimeClass
	// not there yet, a quota, RBAC: the webhook's identity may not create Pods in a
	// cluster, config/rbac does not grant it) or a webhook on Pods that cannot dry-run
	// is no reason to refuse a Service that is valid.
	if err == nil || !apierrors.IsInvalid(err) {
		if err != nil {
			ctrl.Log.WithName("admission").V(1).Info("dry-run Pod check skipped", "namespace", namespace, "error", err.Error())
		}
		return nil
	}
	return ErrGeneric("dry run failed with "+err.Error(), "spec.template")
}
