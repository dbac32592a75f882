// Package routingstate keeps Knative's serving.knative.dev/routingState label on
// Revisions that leave their Routes, so that what depends on it works as in Knative:
//   - the Revision's PodAutoscaler becomes Unreachable (resources.MakePodAutoscaler),
//     and min-scale no longer holds pods of a Revision no Route sends traffic to;
//   - the serving.knative.dev/routingStateModified annotation records when it last
//     had traffic, which config-gc's retain-since-last-active-time counts from.
//
// A Revision that is neither routed nor its Configuration's latest (created or ready)
// is labelled reserve; a reserve Revision that a Route sends traffic to again is
// labelled active. Knative also labels every new Revision pending, then active once
// routed: two writes per Revision that change nothing a user sees (no label and active
// both mean Reachable enough to keep min-scale), which Ferry leaves out so that a burst
// of new Services costs no extra write. So a Revision without the label has never left
// its Routes.
//
// The reconciler works per Revision, woken by its Revision, by the Routes whose
// status.traffic gains or loses it (index.RoutesByRevision), and by its Configuration
// when its latest Revisions change.
package routingstate
