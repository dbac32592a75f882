// Package stats is what the gateway tells the autoscaler, and how.
//
// Ferry measures load where every request already passes: the gateway. There is no
// sidecar in user pods and nothing to scrape. Every ReportInterval each gateway
// replica sends one Report with a Stat per Revision that had requests in flight or
// arriving during the period; a Revision it does not mention had none. The autoscaler
// sums the replicas' reports.
//
// A request for a Revision with no ready pod cannot wait for the next report: the
// gateway pokes the autoscaler at once, which decides for that Revision on the spot.
//
// In `ferry up` the gateway calls the autoscaler in-process (the autoscaler is a
// Sink). When they run as separate processes, the gateway's Client posts JSON to the
// controller's stats listener (Handler), to every address its host name resolves to,
// so that each controller replica, leader or standby, holds the same history and a
// failover loses none of it.
package stats
