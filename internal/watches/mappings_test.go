package watches

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// countingMapper knows the kinds it was given, and counts the questions it answers.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (c *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	c.asked++
	return c.RESTMapper.RESTMapping(gk, versions...)
}

// TestKnownMappingsAskOncePerKind: the owner handler's question for a kind reaches
// the manager's mapper once; a kind it does not know yet is asked again, and found
// once it is installed.
func TestKnownMappingsAskOncePerKind(t *testing.T) {
	services := schema.GroupVersionKind{Group: "serving.knative.dev", Version: "v1", Kind: "Service"}
	nodes := schema.GroupVersionKind{Version: "v1", Kind: "Node"}
	defaults := meta.NewDefaultRESTMapper([]schema.GroupVersion{nodes.GroupVersion(), services.GroupVersion()})
	defaults.Add(nodes, meta.RESTScopeRoot)
	inner := &countingMapper{RESTMapper: defaults}
	m := &knownMappings{RESTMapper: inner}

	for range 3 {
		mapping, err := m.RESTMapping(nodes.GroupKind())
		if err != nil {
			t.Fatal(err)
		}
		if mapping.Scope.Name() != meta.RESTScopeNameRoot {
			t.Fatalf("Node's scope %q, want root", mapping.Scope.Name())
		}
	}
	if inner.asked != 1 {
		t.Fatalf("the inner mapper was asked %d times for one kind, want 1", inner.asked)
	}

	if _, err := m.RESTMapping(services.GroupKind()); !meta.IsNoMatchError(err) {
		t.Fatalf("a kind not installed: %v, want a no-match error", err)
	}
	defaults.Add(services, meta.RESTScopeNamespace)
	mapping, err := m.RESTMapping(services.GroupKind())
	if err != nil {
		t.Fatalf("the kind once installed: %v", err)
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		t.Fatalf("Service's scope %q, want namespace", mapping.Scope.Name())
	}
}
