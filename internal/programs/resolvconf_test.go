package programs

import (
	"net/netip"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestResolvConf(t *testing.T) {
	const host = "# from the host\nnameserver 127.0.0.53\nsearch corp.example\noptions edns0 trust-ad\n"
	dns := netip.MustParseAddr("10.96.0.10")
	two := "2"
	for _, tc := range []struct {
		name   string
		policy corev1.DNSPolicy
		config *corev1.PodDNSConfig
		dns    netip.Addr
		want   string
	}{
		{name: "ClusterFirst, the default", dns: dns,
			want: "nameserver 10.96.0.10\nsearch backend.svc.cluster.local svc.cluster.local cluster.local corp.example\noptions ndots:5\n"},
		{name: "ClusterFirst written out", policy: corev1.DNSClusterFirst, dns: dns,
			want: "nameserver 10.96.0.10\nsearch backend.svc.cluster.local svc.cluster.local cluster.local corp.example\noptions ndots:5\n"},
		{name: "ClusterFirst without cluster DNS is the host's",
			want: "nameserver 127.0.0.53\nsearch corp.example\noptions edns0 trust-ad\n"},
		{name: "Default is the host's", policy: corev1.DNSDefault, dns: dns,
			want: "nameserver 127.0.0.53\nsearch corp.example\noptions edns0 trust-ad\n"},
		{name: "None with dnsConfig", policy: corev1.DNSNone, dns: dns,
			config: &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.53"}, Searches: []string{"my.dns.search.suffix"},
				Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &two}, {Name: "edns0"}}},
			want: "nameserver 10.0.0.53\nsearch my.dns.search.suffix\noptions ndots:2 edns0\n"},
		{name: "dnsConfig's options replace the policy's of the same name", dns: dns,
			config: &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &two}}},
			want:   "nameserver 10.96.0.10\nsearch backend.svc.cluster.local svc.cluster.local cluster.local corp.example\noptions ndots:2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "backend"},
				Spec: corev1.PodSpec{DNSPolicy: tc.policy, DNSConfig: tc.config}}
			if got := resolvConf(pod, host, tc.dns); got != tc.want {
				t.Errorf("resolv.conf:\n%s\nwant:\n%s", got, tc.want)
			}
		})
	}
}
