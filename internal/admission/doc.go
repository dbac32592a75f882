// Package admission is Knative Serving's validation and defaulting for Ferry's
// serving.knative.dev/v1 kinds, served as Kubernetes admission webhooks.
//
// Why a webhook and not only CEL in the CRDs: most of Knative's rules depend on
// config-features and config-defaults (the PodSpec field allowlist, timeout and
// concurrency bounds, the defaults themselves), on the requesting user (the creator and
// lastModifier annotations) or on the old object (a template change must change a
// user-chosen revision name), and some need real parsers (image references, Go
// durations). CEL cannot read a ConfigMap per request or parse an image reference, and a
// MutatingAdmissionPolicy cannot fill defaults that depend on the ConfigMaps and the
// object's shape the way Knative does. The traffic rules that CEL expresses stay in the
// CRDs (they hold even where no webhook is registered); the webhook repeats them with
// Knative's messages. docs/admission.md has the whole choice.
//
// The package has three layers:
//   - pure functions (Validate*, Default*) over the typed objects and a *config.Config,
//     returning Knative-style field errors (FieldError), unit-tested without a cluster;
//   - HTTP handlers (controller-runtime admission.Handler) for /mutate and /validate;
//   - Start/Runner: the HTTPS server, its certificates and the registration of
//     the MutatingWebhookConfiguration and ValidatingWebhookConfiguration, locally
//     (ferry up, tests: a URL on 127.0.0.1 and an in-memory CA) or in a cluster (a
//     Service reference and a CA kept in a Secret, as Knative's webhook does).
package admission
