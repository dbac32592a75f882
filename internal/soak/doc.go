// Package soak is the engine of `ferry soak`: for a duration it keeps load on a small
// fleet of Knative Services (plain, split, tagged, gradually rolled out, cluster-local,
// scaled to zero and back) while it does what a cluster's life does to them every
// cycle — template updates, traffic flips, a Service created and one deleted, a
// config-domain and a config-autoscaler change — and, when asked, what breaks: the
// leader controller killed, a gateway replica restarted, a program that starts
// crashing, the API server slowed.
//
// It records every request (status, latency, which Revision answered) and every
// object's readiness over time, samples each process's memory where it can see the
// processes, and judges the run against what a Knative user would call nothing lost:
//
//   - no failed request a client of Knative would not also see (a 404 on a host the
//     Route has just moved away from is not a failure; a 502 during a rollout is);
//   - no answer from a Revision that no traffic target of that host named around the
//     time of the request (the traffic log keeps each host's Revisions over time);
//   - every object Ready within a bound of its last change, a fault or a configuration
//     change (the readiness log), and a crashing program shown as a False condition;
//   - memory flat: no process grows more than 10 % after its first five minutes.
//
// The judging parts (traffic log, readiness log, memory trend, request classes) are
// pure and table-tested; Run wires them to the cluster. Where Ferry runs (`ferry up`
// in this process, or a cluster) is the caller's: it passes a Breaker that does the
// faults there and the gateways' addresses.
package soak
