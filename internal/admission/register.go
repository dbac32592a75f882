package admission

import (
	"context"
	"fmt"

	admissionregv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Register creates or updates both webhook configurations to point at this server.
func (s *Server) Register(ctx context.Context) error {
	mwc, vwc := WebhookConfigurations(s.clientConfig(MutatePath), s.clientConfig(ValidatePath), s.clientConfig(HoldPath), s.opts.ControllerUser)
	api := s.client.AdmissionregistrationV1()
	if err := createOrUpdate(ctx, api.MutatingWebhookConfigurations(), mwc, func(cur *admissionregv1.MutatingWebhookConfiguration) {
		cur.Webhooks = mwc.Webhooks
	}); err != nil {
		return err
	}
	return createOrUpdate(ctx, api.ValidatingWebhookConfigurations(), vwc, func(cur *admissionregv1.ValidatingWebhookConfiguration) {
		cur.Webhooks = vwc.Webhooks
	})
}

// webhookConfigurations is the client of one kind of webhook configuration.
type webhookConfigurations[T any] interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error)
}

// createOrUpdate creates want, or gives the configuration there want's webhooks (with
// setWebhooks) and labels.
func createOrUpdate[T metav1.Object](ctx context.Context, api webhookConfigurations[T], want T, setWebhooks func(cur T)) error {
	cur, err := api.Get(ctx, want.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		if _, err := api.Create(ctx, want, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
			return createOrUpdate(ctx, api, want, setWebhooks) // another replica was first: update theirs
		} else if err != nil {
			return fmt.Errorf("registering %s: %w", want.GetName(), err)
		}
		return nil
	case err != nil:
		return fmt.Errorf("reading %s: %w", want.GetName(), err)
	}
	setWebhooks(cur)
	cur.SetLabels(want.GetLabels())
	if _, err := api.Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("updating %s: %w", want.GetName(), err)
	}
	return nil
}
