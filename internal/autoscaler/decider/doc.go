// Package decider is Ferry's KPA decider: how many pods a Revision should have,
// given its load, and what to do about it.
//
// One concept, in pure functions. Nothing here starts a goroutine, reads a clock
// or talks to the API server; every time is passed in, so each rule is a table
// test. The pieces, in the order the KPA reconciler uses them:
//
//   - SettingsFor resolves a Revision's Settings from config-autoscaler, its
//     autoscaling.knative.dev annotations and its containerConcurrency.
//   - A Window holds the Revision's load, as the gateway reports it, in 1-second
//     buckets; Average gives the stable and panic averages.
//   - State.Decide is Knative's decider tick (pkg/autoscaler/scaling
//     autoscaler.go): the desired pod count from those averages, panic mode,
//     rate limits, activation-scale, scale-down-delay, excess burst capacity.
//   - Scale is Knative's scaler step (pkg/reconciler/autoscaling/kpa scaler.go and
//     computeActiveCondition): min/max/initial bounds, scale to zero, activation
//     and its timeout, and the Active condition.
//
// The caller owns the Window and the State of each Revision and serializes calls
// for one Revision; none of these types lock.
//
// # Where Ferry differs from Knative
//
// Ferry's gateway sees every request and is always in the request path: it holds
// requests for a Revision with no ready pod and pokes the autoscaler at once.
// Knative's activator moves in and out of the path and queue-proxy is scraped.
// The differences below all follow from that.
//
// Load windows. Knative scrapes every pod every second and records zeros, so a
// second with no stat is a failed scrape and is left out of the average. Ferry's
// gateway reports only Revisions that had load, so a second with no Record is a
// second with none and counts as 0. Both average a partial window over the time
// since the first record. Knative's buckets also restart that partial window on
// the first stat after a silence of a whole window, which in practice happens
// only at zero pods (nothing to scrape); Ferry leaves this to the caller:
// Window.Reset when the Revision has been at zero, so the first requests after a
// scale from zero are not diluted by a window of zeros.
//
// Scale to zero has no grace period. Knative waits, once the PodAutoscaler is
// Inactive, until the activator is known to be in the path: up to
// scale-to-zero-grace-period (30s) after the SKS went to Proxy mode. Ferry's
// gateway is always in the path, so ScaleToZeroGracePeriod is an upper bound that
// Ferry never needs to wait out: a Revision goes Inactive after a stable window
// without traffic and to zero as soon as scale-to-zero-pod-retention-period has
// passed (at once by default). Knative behaves the same when the activator was
// already in the path: in handleScaleToZero's Inactive branch, once the retention
// has passed, it computes ScaleToZeroGracePeriod − sks.Status.ProxyFor() and
// scales to zero at once if that is ≤ 0 ("Fast path scaling to 0",
// knative/serving pkg/reconciler/autoscaling/kpa/scaler.go), where ProxyFor is
// the time since the SKS's ActivatorEndpointsPopulated condition became True
// (knative/networking pkg/apis/networking/v1alpha1/serverlessservice_lifecycle.go).
// The KPA keeps the SKS in Proxy unless want > 0 and excess burst capacity ≥ 0
// (kpa.go). With target-burst-capacity -1 that is always; with the default 211
// and the default total of 100 it is whenever fewer than three pods are ready,
// and a reachable Revision is only ever asked for 0 with at most one ready pod
// (floor(ready/2) must be 0). So the activator has usually been in the path for
// a while, and Knative, too, scales to zero without waiting.
//
// Active means one ready pod. Knative keeps Active=Unknown (Activating) until
// max(min-scale, 1) pods are ready (max(min-scale, initial-scale) before
// initialization). Ferry's gateway can route as soon as one pod is ready, so
// Active is "a pod is ready"; reaching the initial and minimum scale is what
// Initialized (ScaleTargetInitialized) says, with Knative's threshold.
//
// Holding before zero. Knative, asked for 0 by an Active PodAutoscaler that has
// been active for less than a stable window, scales to 1 and waits; Ferry keeps
// the current scale and waits. Both go Inactive at the end of that window.
//
// Activation timeout. Knative fails an activation (scale 0, TimedOut) only once
// the desired scale has dropped to 0 while activating, so a Revision that keeps
// receiving requests but cannot start keeps its pods trying forever. Ferry times
// out after ActivationTimeout (progress-deadline + 30s) with no pod ready, whether
// or not requests are still arriving, but only where zero is allowed
// (scale-to-zero enabled and min-scale 0 or ignored as Unreachable): a min-scale
// is never dropped. A TimedOut Revision stays at zero until the decider asks for
// pods (Desired > 0, i.e. traffic; min-scale and initial-scale do not count) at
// least a stable window after it timed out. By then the load that was waiting at
// the timeout has left the stable window, so the demand is new, and a Revision
// that cannot start is retried at most once per activation timeout plus a
// window, not in a tight loop. When the demand drops to 0 while pods are
// starting, both keep the pods starting until the timeout.
//
// Initial scale. Knative applies initial-scale as a minimum only when it is > 1
// and the Revision is reachable, because its Deployment is created with
// initial-scale replicas. Scale applies it until Initialized in every case, so a
// Revision comes up once whoever created its Deployment.
//
// Scale-down-delay is the maximum over the decisions of the last delay, bucketed by
// the 2 s tick they fall in, as Knative's max.TimeWindow buckets them.
package decider
