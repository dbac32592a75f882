// Package reconcilertest runs Ferry's reconcilers against a fake API server, in the
// style of Knative's table tests (pkg/reconciler/*/table_test.go): each case seeds a
// fake client with objects, reconciles one key, and states every write the reconcile
// must make (creates, updates, patches, status writes, scale writes, deletes), the
// Events it must record and the result it must return.
//
// It exists so that a reconciler's body can be rewritten with confidence: the tables
// pin what a user sees of each reconcile (which children are written, the conditions
// with their reasons and messages, the Warning Events, when the key comes back) in
// milliseconds, where the integration tests need a real API server and seconds per
// case. Writes are recorded by an interceptor, so an extra or a missing write fails
// the table, and any write can be made to fail with a chosen API error (a refusal:
// Forbidden, Invalid, a quota) to pin how the reconciler reports it.
//
// The fake client indexes the cache like the manager's (package index), gives the
// Knative kinds their status subresource, and applies a Deployment's scale
// subresource patch, which controller-runtime's fake client does not support. Like
// the API server (and unlike the plain fake client) it makes a created object
// generation 1 with a UID and raises the generation when an update changes anything
// but metadata and status: the reconcilers compare generations with observed ones.
//
// The reconcilers take no clock, so conditions are compared without their
// transition times (CheckConditions).
package reconcilertest
