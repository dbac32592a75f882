package defaulting

import (
	"bytes"
	"sync"
	"text/template"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults is config-defaults: what defaulting fills into a Revision template.
type Defaults struct {
	RevisionTimeoutSeconds    int64
	MaxRevisionTimeoutSeconds int64
	// RevisionResponseStartTimeoutSeconds defaults to RevisionTimeoutSeconds as
	// configured; as in Knative it is applied to a Revision only when it is positive and
	// below the Revision's timeoutSeconds.
	RevisionResponseStartTimeoutSeconds int64
	RevisionIdleTimeoutSeconds          int64
	ContainerConcurrency                int64
	ContainerConcurrencyMaxLimit        int64
	AllowContainerConcurrencyZero       bool
	// UserContainerNameTemplate is a Go template over the parent's (Service's or
	// Configuration's) ObjectMeta ("user-container" by default);
	// InitContainerNameTemplate likewise.
	UserContainerNameTemplate string
	InitContainerNameTemplate string
	// EnableServiceLinks is nil when unset (Knative's default is false).
	EnableServiceLinks *bool

	RevisionCPURequest              *resource.Quantity
	RevisionCPULimit                *resource.Quantity
	RevisionMemoryRequest           *resource.Quantity
	RevisionMemoryLimit             *resource.Quantity
	RevisionEphemeralStorageRequest *resource.Quantity
	RevisionEphemeralStorageLimit   *resource.Quantity
}

// DefaultDefaults are Knative's config-defaults defaults.
func DefaultDefaults() *Defaults {
	f := false
	return &Defaults{
		RevisionTimeoutSeconds:              300,
		MaxRevisionTimeoutSeconds:           600,
		RevisionResponseStartTimeoutSeconds: 300,
		ContainerConcurrencyMaxLimit:        1000,
		AllowContainerConcurrencyZero:       true,
		UserContainerNameTemplate:           "user-container",
		InitContainerNameTemplate:           "init-container",
		EnableServiceLinks:                  &f,
	}
}

// UserContainerName is container-name-template run against the parent's (Service's or
// Configuration's) metadata: the name of a container that has none. A template that
// fails gives "" as in Knative (validation then reports the unnamed container).
func (d *Defaults) UserContainerName(parent metav1.ObjectMeta) string {
	return runNameTemplate(d.UserContainerNameTemplate, parent)
}

// InitContainerName is init-container-name-template run against the parent's metadata.
func (d *Defaults) InitContainerName(parent metav1.ObjectMeta) string {
	return runNameTemplate(d.InitContainerNameTemplate, parent)
}

// templates caches the parsed name templates: the reconcilers default at every
// reconcile. string → *template.Template (nil when it does not parse).
var templates sync.Map

func runNameTemplate(text string, parent metav1.ObjectMeta) string {
	if text == "" {
		return ""
	}
	v, ok := templates.Load(text)
	if !ok {
		t, err := template.New("container-name").Parse(text)
		if err != nil {
			t = nil
		}
		v, _ = templates.LoadOrStore(text, t)
	}
	t, _ := v.(*template.Template)
	if t == nil {
		return ""
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, parent); err != nil {
		return ""
	}
	return buf.String()
}
