package admission

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	revresources "github.com/ferry-serving/ferry/internal/reconciler/revision/resources"
)

// dryRunMode is whether and how the Pod a Service's or an unowned Configuration's
// Revision would run is checked by a dry-run create (dryRun=All), so that the API
// server's own validation and admission (quotas, PodSecurity, other webhooks) judge it
// before anything is stored.
type dryRunMode int

const (
	dryRunOff dryRunMode = iota
	// dryRunRequest: the request is itself a server-side dry run (kubectl apply
	// --dry-run=server), which Knative checks since v1.20. Only the Pod's own
	// validation refuses (Ferry's choice, docs/admission.md).
	dryRunRequest
	// dryRunEnabled: the podspec-dryrun annotation says "enabled", or config-features
	// kubernetes.podspec-dryrun is Enabled (Knative up to v1.19,
	// pkg/webhook/validate_unstructured.go). Any refusal refuses but "does not support
	// dry run" (a webhook on Pods with side effects), which is logged and let through.
	dryRunEnabled
	// dryRunStrict: the annotation says "strict": that one refuses too.
	dryRunStrict
)

// dryRunModeOf is Knative's choice: kubernetes.podspec-dryrun Disabled turns every
// check off, Enabled checks every request ("strict" on the object still applies),
// Allowed (the default) leaves it to the object's annotation. A dry-run request is
// checked whenever nothing else asks for more.
func dryRunModeOf(f *config.Features, annotations map[string]string, dryRunRequested bool) dryRunMode {
	if f.PodSpecDryRun == config.Disabled {
		return dryRunOff
	}
	mode := annotations[servingv1.PodSpecDryRunAnnotationKey]
	if f.PodSpecDryRun == config.Enabled && mode != "strict" {
		mode = "enabled"
	}
	switch {
	case mode == "strict":
		return dryRunStrict
	case mode == "enabled":
		return dryRunEnabled
	case dryRunRequested:
		return dryRunRequest
	}
	return dryRunOff
}

// dryRunPodSpec creates, as a dry run in namespace, the Pod of the Revision template t
// (Ferry's own Deployment builder); old is the template before an update, whose
// unchanged templates Knative does not check again outside a dry-run request. The
// error is Knative's, "dry run failed with <the API server's message>: spec.template",
// which the webhook reports as a failed validation callback.
func dryRunPodSpec(ctx context.Context, client kubernetes.Interface, mode dryRunMode, namespace string, t, old *servingv1.RevisionTemplateSpec) *FieldError {
	if client == nil || mode == dryRunOff || mode != dryRunRequest && old != nil && equality.Semantic.DeepEqual(t, old) {
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
	if err == nil || ignoreDryRunFailure(mode, err) {
		if err != nil {
			ctrl.Log.WithName("admission").V(1).Info("dry-run Pod check skipped", "namespace", namespace, "error", err.Error())
		}
		return nil
	}
	return ErrGeneric("dry run failed with "+err.Error(), "spec.template")
}

// ignoreDryRunFailure: on a dry-run request only the Pod's validation (Invalid)
// refuses: a refusal that depends on the cluster's state (a ServiceAccount,
// PriorityClass or RuntimeClass not there yet, a quota, the webhook's own RBAC) is no
// reason to refuse a Service that is valid. When the user asked for the check,
// Knative refuses for anything but a webhook on Pods that cannot dry-run, and "strict"
// for that too.
func ignoreDryRunFailure(mode dryRunMode, err error) bool {
	switch mode {
	case dryRunRequest:
		return !apierrors.IsInvalid(err)
	case dryRunEnabled:
		return strings.Contains(err.Error(), "does not support dry run")
	}
	return false
}
