// Package dashboard is Ferry's web dashboard: the Services by namespace with their
// readiness and traffic, one Service's rollout over time and why it is not Ready, and
// one Revision's autoscaler at work, live in a browser (docs/dashboard.md).
//
// `ferry explain` says why in text and `ferry scale` reports after the fact; what
// moves (a traffic split during a rollout, a chain filling in, pods rising under load
// and going to zero) is best seen, and seen as it happens.
//
// It is its own package because two commands serve it: `ferry up` next to the
// controller in its process, and `ferry dashboard` against any cluster with the
// user's kubeconfig, as kubectl proxy would. Either way it acts with the credentials
// it is given and never writes: its transport refuses every request but a GET
// (requests.go), and its handlers take no form.
//
// The parts:
//
//   - Model (model.go) is an informer cache, one list and one watch per kind, of the
//     Knative kinds and of what explain reads along a Service's chain, so that every
//     page, and the explain line of every Service not Ready, comes from memory. Only
//     the traffic split over time is the dashboard's own record, taken from the
//     Service watch since it started: the cluster keeps no history of it.
//   - The autoscaler's numbers (numbers.go) are the leader's: the controller serves a
//     Revision's on its metrics listener (NumbersHandler, so whoever may read its
//     metrics may read them), or ferry up's dashboard asks the Autoscaler in-process.
//     The Autoscaler keeps windows, not history, so the dashboard samples the
//     Revisions whose pages are open once a second.
//   - Pages (server.go, views.go, assets/templates) are rendered on the server and
//     complete without JavaScript; assets/static/dashboard.js keeps them live over
//     server-sent events, which carry the same server-rendered HTML, and draws the
//     time series with uPlot, vendored (assets/static/uplot, `make dashboard-assets`)
//     and embedded, because a user's machine may have no internet.
package dashboard
