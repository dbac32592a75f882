package watches

import (
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// knownMappings is a REST mapper that answers RESTMapping from the first answer its
// inner mapper gave for the same kind. controller-runtime's owner handler asks for
// the owner's mapping on every event of a child, only to learn whether the owner is
// namespaced, and the manager's mapper answers through a priority and a multi mapper
// over every group each time: 4% of Ferry's CPU in a burst of 500 Services. A kind's
// mapping does not change while its CRD is installed; an error is not kept, so a
// kind whose CRD comes later is found then.
type knownMappings struct {
	meta.RESTMapper
	mappings sync.Map // mappingKey → *meta.RESTMapping
}

type mappingKey struct {
	kind     schema.GroupKind
	versions string
}

func (m *knownMappings) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	key := mappingKey{gk, strings.Join(versions, ",")}
	if known, ok := m.mappings.Load(key); ok {
		return known.(*meta.RESTMapping), nil
	}
	mapping, err := m.RESTMapper.RESTMapping(gk, versions...)
	if err == nil {
		m.mappings.Store(key, mapping)
	}
	return mapping, err
}
