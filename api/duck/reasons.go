package duck

import "fmt"

// Reasons that every kind's conditions share, as Knative spells them. They are part
// of the API: users, `kubectl wait`, `kn` and `ferry explain` match on them.
const (
	// ReasonNotOwned: a child's name is taken by an object its owner does not control.
	ReasonNotOwned = "NotOwned"
	// ReasonCreationFailed and ReasonUpdateFailed: the API server refused to create or
	// update a child (an invalid field, a quota, a policy, RBAC). They are also the
	// reasons of the Warning Events that report it.
	ReasonCreationFailed = "CreationFailed"
	ReasonUpdateFailed   = "UpdateFailed"
	// ReasonInternalError is the reason of the Warning Event by which Knative reports a
	// reconcile's error.
	ReasonInternalError = "InternalError"
	// ReasonInvalidConfig is the reason of the Warning Event on a ConfigMap whose value
	// does not parse (the last good value is kept).
	ReasonInvalidConfig = "InvalidConfig"
	// ReasonNoEffect is the reason of the Warning Event on a ConfigMap that sets a key
	// Ferry accepts but does not act on.
	ReasonNoEffect = "NoEffect"
)

// NotOwnedMessage is Knative's message for ReasonNotOwned: kind is what users call the
// child ("Configuration", "placeholder Service").
func NotOwnedMessage(kind, name string) string {
	return fmt.Sprintf("There is an existing %s %q that we do not own.", kind, name)
}
