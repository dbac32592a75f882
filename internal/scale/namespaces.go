package scale

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// NamespaceNames are the namespaces of a run spread over k: base itself when k ≤ 1
// (as before there was a choice), else base-0 … base-<k-1>.
func NamespaceNames(base string, k int) []string {
	if k <= 1 {
		return []string{base}
	}
	out := make([]string, k)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", base, i)
	}
	return out
}

// NamespaceIndex is the index of the namespace the i-th Service of a run over k
// namespaces goes to: round-robin, so that the creates interleave the namespaces.
func NamespaceIndex(i, k int) int {
	if k <= 1 {
		return 0
	}
	return i % k
}

// validNamespaces says why names are not all namespace names, if they are not.
func validNamespaces(names []string) error {
	for _, ns := range names {
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return fmt.Errorf("scale: %q is no valid namespace name: %s", ns, errs[0])
		}
	}
	return nil
}

// describeNamespaces is "namespace ns", or "K namespaces (first … last)".
func describeNamespaces(names []string) string {
	switch len(names) {
	case 0:
		return "namespace ?"
	case 1:
		return "namespace " + names[0]
	}
	return fmt.Sprintf("%d namespaces (%s … %s)", len(names), names[0], names[len(names)-1])
}

// AllNamespaces are the run's namespaces: Namespaces, or Namespace alone for a
// Result that does not list them.
func (r *Result) AllNamespaces() []string {
	if len(r.Namespaces) > 0 {
		return r.Namespaces
	}
	return []string{r.Namespace}
}

// createdNamespaces are the namespaces the run created (Cleanup deletes them).
func (r *Result) createdNamespaces() map[string]bool {
	created := map[string]bool{}
	for _, ns := range r.NamespacesCreated {
		created[ns] = true
	}
	if r.NamespaceCreated {
		created[r.Namespace] = true
	}
	return created
}

// ensureNamespaces creates those of names that do not exist, one after the other,
// and returns the ones it created.
func ensureNamespaces(ctx context.Context, c client.Client, names []string) ([]string, error) {
	var created []string
	for _, ns := range names {
		ok, err := ensureNamespace(ctx, c, ns)
		if err != nil {
			return created, err
		}
		if ok {
			created = append(created, ns)
		}
	}
	return created, nil
}

// ensureNamespace creates ns unless it exists, and says whether it did.
func ensureNamespace(ctx context.Context, c client.Client, ns string) (bool, error) {
	err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsAlreadyExists(err):
		return false, nil
	}
	return false, fmt.Errorf("creating namespace %s: %w", ns, err)
}

// namespaceOf is obj's namespace, "" when it has none.
func namespaceOf(obj any) string {
	if o, ok := obj.(metav1.Object); ok {
		return o.GetNamespace()
	}
	return ""
}

// inNamespaces says whether obj is in one of the namespaces of in.
func inNamespaces(obj any, in map[string]bool) bool {
	ns := namespaceOf(obj)
	return ns != "" && in[ns]
}

// filterList drops the items of list that are not in the namespaces of in.
func filterList(list runtime.Object, in map[string]bool) error {
	items, err := meta.ExtractList(list)
	if err != nil {
		return err
	}
	kept := items[:0]
	for _, item := range items {
		if inNamespaces(item, in) {
			kept = append(kept, item)
		}
	}
	return meta.SetList(list, kept)
}

// filterWatch drops the events of w about objects that are not in the namespaces
// of in; bookmarks and errors pass.
func filterWatch(w watch.Interface, in map[string]bool) watch.Interface {
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		switch e.Type {
		case watch.Bookmark, watch.Error:
			return e, true
		}
		return e, inNamespaces(e.Object, in)
	})
}

// nsOf is the namespace of the i-th Service.
func (r *runner) nsOf(i int) string { return r.namespaces[NamespaceIndex(i, len(r.namespaces))] }

// sampleNamespace is the i-th Service's namespace for its Sample: only when the run
// has several (else it is the Result's).
func (r *runner) sampleNamespace(i int) string {
	if len(r.namespaces) == 1 {
		return ""
	}
	return r.nsOf(i)
}

// scope is where the run's watches and lists look: its namespace, or the whole
// cluster when it has several (with the run's label, or filtered to its
// namespaces).
func (r *runner) scope() string {
	if len(r.namespaces) == 1 {
		return r.namespaces[0]
	}
	return metav1.NamespaceAll
}

// where names ns for a message: the namespace, or the run's namespaces.
func (r *runner) where(ns string) string {
	if ns != metav1.NamespaceAll {
		return "namespace " + ns
	}
	return describeNamespaces(r.namespaces)
}
