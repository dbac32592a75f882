package programs

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/ferry-serving/ferry/internal/clusternet"
)

// resolvConf is a pod's /etc/resolv.conf as a kubelet with --cluster-dns writes it
// (pkg/kubelet/network/dns): with dnsPolicy ClusterFirst, the default, the cluster's
// DNS with the search paths <ns>.svc.<domain> svc.<domain> <domain> before the host's
// and ndots:5; with Default, the host's file; with None, nothing; and dnsConfig's
// nameservers, searches and options added to each. clusterDNS is not valid where the
// node has no cluster DNS: ClusterFirst is Default then, as a kubelet without
// --cluster-dns does it.
func resolvConf(pod *corev1.Pod, host string, clusterDNS netip.Addr) string {
	hostNS, hostSearch, hostOpts := parseResolvConf(host)
	var ns, search, opts []string
	switch pod.Spec.DNSPolicy {
	case corev1.DNSNone:
	case corev1.DNSDefault:
		ns, search, opts = hostNS, hostSearch, hostOpts
	default: // ClusterFirst, and ClusterFirstWithHostNet for a pod of its own network
		if !clusterDNS.IsValid() {
			ns, search, opts = hostNS, hostSearch, hostOpts
			break
		}
		d := clusternet.ClusterDomain
		ns = []string{clusterDNS.String()}
		search = append([]string{pod.Namespace + ".svc." + d, "svc." + d, d}, hostSearch...)
		opts = []string{"ndots:5"}
	}
	if c := pod.Spec.DNSConfig; c != nil {
		ns = append(ns, c.Nameservers...)
		search = append(search, c.Searches...)
		for _, o := range c.Options {
			opt := o.Name
			if o.Value != nil {
				opt += ":" + *o.Value
			}
			// An option of dnsConfig replaces the one of the same name.
			opts = slices.DeleteFunc(opts, func(have string) bool { n, _, _ := strings.Cut(have, ":"); return n == o.Name })
			opts = append(opts, opt)
		}
	}
	var b strings.Builder
	for _, s := range ns {
		fmt.Fprintf(&b, "nameserver %s\n", s)
	}
	if len(search) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(search, " "))
	}
	if len(opts) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(opts, " "))
	}
	return b.String()
}

// parseResolvConf reads a resolv.conf's nameservers, search paths (the last search or
// domain line) and options.
func parseResolvConf(s string) (nameservers, search, options []string) {
	for _, line := range strings.Split(s, "\n") {
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		switch f[0] {
		case "nameserver":
			nameservers = append(nameservers, f[1])
		case "search", "domain":
			search = f[1:]
		case "options":
			options = append(options, f[1:]...)
		}
	}
	return nameservers, search, options
}
