// Package routingstate keeps Knative's serving.knative.dev/routingState label on
// Revisions, so that what depends on it works as in Knative:
//   - the Revision's PodAutoscaler becomes Unreachable (resources.MakePodAutoscaler),
//     and min-scale no longer holds pods of a Revision no Route sends traffic to;
//   - the serving.knative.dev/routingStateModified annotation records when it last
//     had traffic, which config-gc's retain-since-last-active-time counts from.
//
// As in Knative, a new Revision is labelled at its creation, by its Configuration in
// the same write: active when a Route already follows the Configuration's latest
// Revision (its serving.knative.dev/routes annotation, which a Service's Configuration
// carries while its traffic follows the latest), else pending. This reconciler turns
// it active once a Route sends it traffic (a standalone Route's Revision: Knative's
// conformance test TestRouteCreation waits for that), reserve once it is neither
// routed nor its Configuration's latest (created or ready), and active again when
// routed again. A routed Revision an older Ferry made has no label; it is labelled
// active when the controller starts, which reconciles every Revision. The label and
// routingStateModified stay off the Deployment and the PodAutoscaler
// (revision/resources.Labels), so that a relabelling rolls no pods.
//
// The reconciler works per Revision, woken by its Revision, by the Routes whose
// status.traffic gains or loses it (index.RoutesByRevision), and by its Configuration
// when its latest Revisions change.
package routingstate
