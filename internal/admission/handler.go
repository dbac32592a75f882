package admission

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	servingv1 "github.com/ferry-serving/ferry/api/serving/v1"
	servingv1beta1 "github.com/ferry-serving/ferry/api/serving/v1beta1"
	"github.com/ferry-serving/ferry/internal/config"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
)

// The paths the webhooks are served on.
const (
	MutatePath   = "/mutate"
	ValidatePath = "/validate"
	HoldPath     = "/hold"
)

// Mutator is the defaulting webhook: Knative's SetDefaults for the four kinds.
type Mutator struct{ Config func() *config.Config }

// Validator is the validating webhook: Knative's Validate for the four kinds. With a
// Client, a Service or an unowned Configuration that passes may also have the API
// server judge the Pod it would run (dryRunPodSpec, Knative's validation callback):
// on a server-side dry run, or when the podspec-dryrun annotation or flag asks.
type Validator struct {
	Config func() *config.Config
	Client kubernetes.Interface
}

var _, _ admission.Handler = (*Mutator)(nil), (*Validator)(nil)

func current(get func() *config.Config) *config.Config {
	if get != nil {
		if c := get(); c != nil && c.Defaults != nil && c.Features != nil {
			return c
		}
	}
	return config.Default()
}

// decode reads the request's object and, on update, its old object.
func decode[T any](req admission.Request) (obj, old *T, err error) {
	obj = new(T)
	if err := json.Unmarshal(req.Object.Raw, obj); err != nil {
		return nil, nil, fmt.Errorf("decoding the object: %w", err)
	}
	if req.Operation == admissionv1.Update && len(req.OldObject.Raw) > 0 {
		old = new(T)
		if err := json.Unmarshal(req.OldObject.Raw, old); err != nil {
			return nil, nil, fmt.Errorf("decoding the old object: %w", err)
		}
	}
	return obj, old, nil
}

// Handle defaults the object and answers with a JSON patch.
func (m *Mutator) Handle(_ context.Context, req admission.Request) admission.Response {
	if !applies(req) {
		return admission.Allowed("")
	}
	cfg := current(m.Config)
	user := req.UserInfo.Username
	var out any
	var err error
	switch req.Kind.Kind {
	case "Service":
		var s, old *servingv1.Service
		if s, old, err = decode[servingv1.Service](req); err == nil {
			DefaultService(cfg, s, old, user)
			out = s
		}
	case "Configuration":
		var c, old *servingv1.Configuration
		if c, old, err = decode[servingv1.Configuration](req); err == nil {
			DefaultConfiguration(cfg, c, old, user)
			out = c
		}
	case "Revision":
		var r, old *servingv1.Revision
		if r, old, err = decode[servingv1.Revision](req); err == nil {
			DefaultRevision(cfg, r, old)
			out = r
		}
	case "Route":
		var r, old *servingv1.Route
		if r, old, err = decode[servingv1.Route](req); err == nil {
			DefaultRoute(cfg, r, old, user)
			out = r
		}
	case "DomainMapping":
		var dm, old *servingv1beta1.DomainMapping
		if dm, old, err = decode[servingv1beta1.DomainMapping](req); err == nil {
			if dm.Namespace == "" && dm.Spec.Ref.Namespace == "" {
				// The namespace the request is for: a create need not name it.
				dm.Spec.Ref.Namespace = req.Namespace
			}
			DefaultDomainMapping(dm, old, user)
			out = dm
		}
	default:
		return admission.Allowed("")
	}
	if err != nil {
		// A value of the wrong type: leave it to the schema validation that follows,
		// which names the field.
		return admission.Allowed("")
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, raw)
}

// Handle validates the object; a denial carries Knative's message, in which every
// diagnostic names its field.
func (v *Validator) Handle(ctx context.Context, req admission.Request) admission.Response {
	if !applies(req) {
		return admission.Allowed("")
	}
	cfg := current(v.Config)
	var errs *FieldError
	var err error
	// The template the Pod dry run checks, and on update the one before: a Service's,
	// or a Configuration's that no Service owns (that one was checked as the Service).
	var annotations map[string]string
	var template, was *servingv1.RevisionTemplateSpec
	switch req.Kind.Kind {
	case "Service":
		var s, old *servingv1.Service
		if s, old, err = decode[servingv1.Service](req); err == nil {
			errs = ValidateService(cfg, s, old)
			annotations, template = s.Annotations, &s.Spec.Template
			if old != nil {
				was = &old.Spec.Template
			}
		}
	case "Configuration":
		var c, old *servingv1.Configuration
		if c, old, err = decode[servingv1.Configuration](req); err == nil {
			errs = ValidateConfiguration(cfg, c, old)
			if c.Labels[servingv1.ServiceLabelKey] == "" {
				annotations, template = c.Annotations, &c.Spec.Template
				if old != nil {
					was = &old.Spec.Template
				}
			}
		}
	case "Revision":
		var r, old *servingv1.Revision
		if r, old, err = decode[servingv1.Revision](req); err == nil {
			errs = ValidateRevision(cfg, r, old)
		}
	case "Route":
		var r, old *servingv1.Route
		if r, old, err = decode[servingv1.Route](req); err == nil {
			errs = ValidateRoute(cfg, r, old)
		}
	case "DomainMapping":
		var dm, old *servingv1beta1.DomainMapping
		if dm, old, err = decode[servingv1beta1.DomainMapping](req); err == nil {
			// The namespace the request is for: a create need not name it.
			if dm.Namespace == "" {
				dm.Namespace = req.Namespace
			}
			errs = ValidateDomainMapping(dm, old)
		}
	default:
		return admission.Allowed("")
	}
	if err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	// callback is the Pod dry run's refusal, which comes only after validation passed.
	var callback *FieldError
	if template != nil && errs.Errors() == nil {
		mode := dryRunModeOf(cfg.Features, annotations, dryRun(req))
		callback = dryRunPodSpec(ctx, v.Client, mode, req.Namespace, template, was)
	}
	return response(errs, callback)
}

// response turns diagnostics into an admission response: errors deny, and so does a
// refusal of the validation callback, with knative.dev/pkg's prefixes; warnings are
// passed on to the client (kubectl prints them).
func response(errs, callback *FieldError) admission.Response {
	var resp admission.Response
	switch e := errs.Errors(); {
	case e != nil:
		resp = denied("validation failed: " + e.Error())
	case callback != nil:
		resp = denied("validation callback failed: " + callback.Error())
	default:
		resp = admission.Allowed("")
	}
	resp.Warnings = errs.Warnings().Lines()
	return resp
}

func denied(message string) admission.Response {
	return admission.Response{AdmissionResponse: admissionv1.AdmissionResponse{
		Allowed: false,
		Result: &metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusBadRequest,
			Reason:  metav1.StatusReasonBadRequest,
			Message: message,
		},
	}}
}

func dryRun(req admission.Request) bool { return req.DryRun != nil && *req.DryRun }

// applies: only creates and updates of the objects themselves (never their status).
func applies(req admission.Request) bool {
	return req.SubResource == "" && (req.Operation == admissionv1.Create || req.Operation == admissionv1.Update)
}
