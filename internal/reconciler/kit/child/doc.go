// Package child is what every Ferry reconciler does with the objects it owns: read a
// child, create it if missing, refuse to touch it if another owner holds its name, put
// back what the owner sets if it drifted, and report a child the owner cannot have on
// the owner's status.
//
// A reconciler describes each kind of child once, as an update function that puts the
// owner's fields back on the child as read ("what is ours"), and calls Ensure. The
// rules around it are the same for every kind, and so live here once:
//
//   - reads go through created.Children, so a child created a moment ago counts as
//     existing before the cache shows it (no second create, no AlreadyExists);
//   - writes go through refusal.Writes, so a child the API server refused is reported
//     and retried after a back-off, never in a loop;
//   - a name taken by an object the owner does not control is NotOwned, as in Knative:
//     Ferry never adopts or overwrites someone else's object;
//   - Ensure returns the child as the API server last acknowledged it, so the owner's
//     status compares against the generation just written.
//
// Outcome turns what Ensure returned into the owner's condition (NotOwned or the
// refusal's CreationFailed/UpdateFailed, False, with Knative's messages) and collects
// the refusals whose back-off must requeue the owner.
package child
