// Package clusternet gives the pods of ferry up's program node the network a
// Kubernetes node gives its pods: Service ClusterIPs that lead to their endpoints,
// cluster DNS, the API server behind the kubernetes Service, and the host's own
// listeners, Ferry's gateway among them.
//
// The node is a network namespace of its own (node.go), as a node is a machine of its
// own: the pods' veth pairs end in it, it forwards between them, and kube-proxy
// (Kubernetes' own, v1.37.2, in nftables mode, run by internal/localcluster as a
// process in that namespace) programs its rules there. So two ferry ups on one machine
// never share kube-proxy's table (its name is fixed), and the host's own rules are
// left as they are. The host forwards nothing that comes from the node, so a pod's
// packet for an address outside the machine is dropped on it and never leaves. A link joins the
// host to the node; the host's end has an address of its own (Plan.HostAddr) where
// the API server, CoreDNS and the gateway's cluster-local listener also listen, and
// their Services' endpoints name it (services.go).
//
// This package only plans and makes the namespaces, links and Services; the
// components (CoreDNS in ferry up's process, kube-proxy) run in internal/localcluster
// beside the rest of the control plane, and the pods join the node in
// internal/programs.
package clusternet
