// Package rollout is Knative's gradual rollout of a Route's traffic: when a
// Configuration target with latestRevision: true gets a new Revision, the new Revision
// starts at 1 % of that target's share and takes the rest over in equal steps spread
// over the rollout duration (serving.knative.dev/rollout-duration on the Route, else
// config-network's rollout-duration). As in Knative this happens per host: the
// Route's default split, and the own host of each tag on such a target, each roll
// from their own state, all on the same clock.
//
// It is pure functions of the previous state, the desired traffic and the time, so
// that the Route reconciler only reads and writes, the steps can be table-tested
// without an API server, and the convergence simulation's fake clock drives it like
// any other input. The state lives where Knative keeps it, as JSON in the KIngress's
// networking.internal.knative.dev/rollout annotation, in Knative's format, so that a
// KIngress carried over from Knative continues its rollout.
package rollout
