package admission

import (
	"context"
	"fmt"
	"time"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/backpressure"
	"github.com/ferry-serving/ferry/internal/config"
	admissionv1 "k8s.io/api/admission/v1"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

const (
	// holdTimeout is the back-pressure webhook's timeoutSeconds: the most the API
	// server allows.
	holdTimeout = 30 * time.Second
	// MaxHold is the longest a create is held, well inside holdTimeout so that the
	// API server hears the answer rather than its own timeout.
	MaxHold = 20 * time.Second
	// heldNotice: a wait shorter than this is not worth a warning.
	heldNotice = 100 * time.Millisecond
)

// Holder is the back-pressure webhook: it delays a Service create while its Backlog is
// at its limit (package backpressure) and then admits it, with a warning that says how
// long and why. It holds only what the validating webhook will admit: a bad Service is
// refused at once, whatever the backlog.
type Holder struct {
	Config  func() *config.Config
	Backlog *backpressure.Backlog
}

var _ admission.Handler = (*Holder)(nil)

// Handle holds a valid Service create, never a dry run, at most MaxHold.
func (h *Holder) Handle(ctx context.Context, req admission.Request) admission.Response {
	if h.Backlog == nil || !h.Backlog.Full() || req.Operation != admissionv1.Create || req.Kind.Kind != "Service" || dryRun(req) {
		return admission.Allowed("")
	}
	s, _, err := decode[servingv1.Service](req)
	if err != nil || ValidateService(current(h.Config), s, nil).Errors() != nil {
		return admission.Allowed("")
	}
	waited, inProgress := h.Backlog.Hold(ctx, MaxHold)
	resp := admission.Allowed("")
	if waited >= heldNotice {
		resp.Warnings = []string{heldWarning(waited, inProgress, h.Backlog.Limit())}
	}
	return resp
}

// HeldWarningPrefix begins the warning on a held create's response (kubectl prints it).
const HeldWarningPrefix = "Ferry held this create for "

func heldWarning(waited time.Duration, inProgress, limit int) string {
	return fmt.Sprintf(HeldWarningPrefix+"%s: Services on their way to Ready: %d (the limit is %d)",
		waited.Round(100*time.Millisecond), inProgress, limit)
}
