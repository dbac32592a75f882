package reconcilertest

import (
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
)

// Event is one Event a reconciler recorded.
type Event struct {
	// Type is Normal or Warning.
	Type, Reason string
	// Regarding is the name of the object the Event is about.
	Regarding string
	Note      string
}

// String is "Type Reason name: note", the form tables list Events in.
func (e Event) String() string {
	return fmt.Sprintf("%s %s %s: %s", e.Type, e.Reason, e.Regarding, e.Note)
}

// Events is a fake events.EventRecorder that keeps what it is given. It is safe for
// concurrent use.
type Events struct {
	mu  sync.Mutex
	all []Event
}

var _ events.EventRecorder = (*Events)(nil)

// Eventf implements events.EventRecorder.
func (r *Events) Eventf(regarding runtime.Object, _ runtime.Object, eventtype, reason, _ string, note string, args ...any) {
	name := ""
	if m, err := meta.Accessor(regarding); err == nil {
		name = m.GetName()
	}
	r.mu.Lock()
	r.all = append(r.all, Event{Type: eventtype, Reason: reason, Regarding: name, Note: fmt.Sprintf(note, args...)})
	r.mu.Unlock()
}

// All returns the Events so far, in order.
func (r *Events) All() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.all)
}

// List returns the Events so far as strings (Event.String), in order.
func (r *Events) List() []string {
	var out []string
	for _, e := range r.All() {
		out = append(out, e.String())
	}
	return out
}

// Reset forgets the Events so far.
func (r *Events) Reset() {
	r.mu.Lock()
	r.all = nil
	r.mu.Unlock()
}
