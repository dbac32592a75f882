package child

import (
	"errors"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/ferry-serving/ferry/api/duck"
	"github.com/ferry-serving/ferry/internal/reconciler/kit/refusal"
)

// Outcome collects, over one reconcile, the children the owner cannot have.
type Outcome struct {
	refused []*refusal.Error
}

// Mark shows on condition t of the owner a child it cannot have, and reports whether
// err was one: a name taken by another owner (NotOwned) or a write the API server
// refused (CreationFailed or UpdateFailed, whose back-off Result adds). Other errors
// (conflicts, timeouts) are the caller's to return, for the workqueue to retry.
func (o *Outcome) Mark(m duck.ConditionManager, t duck.ConditionType, err error) bool {
	var notOwned *NotOwnedError
	if errors.As(err, &notOwned) {
		m.MarkFalse(t, duck.ReasonNotOwned, "%s", notOwned.Error())
		return true
	}
	if refused, ok := refusal.As(err); ok {
		m.MarkFalse(t, refused.Reason(), "%s", refused.Error())
		o.refused = append(o.refused, refused)
		return true
	}
	return false
}

// Refused records a refusal that the owner shows in its own way, for Result.
func (o *Outcome) Refused(e *refusal.Error) { o.refused = append(o.refused, e) }

// Result adds to the owner's reconcile result the retry of every refused write: the
// owner is reconciled again when the first back-off ends.
func (o *Outcome) Result(res reconcile.Result, err error) (reconcile.Result, error) {
	for _, e := range o.refused {
		res, err = refusal.Result(res, err, e)
	}
	return res, err
}
