package resources

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/reconciler/route/rollout"
)

// configWith is Ferry's default configuration with config-domain and config-network
// parsed from data (nil: the defaults).
func configWith(t *testing.T, domain, network map[string]string) *config.Config {
	t.Helper()
	c := config.Default()
	if domain != nil {
		d, err := config.NewDomainFromConfigMap(&corev1.ConfigMap{Data: domain})
		if err != nil {
			t.Fatal(err)
		}
		c.Domain = d
	}
	if network != nil {
		n, err := config.NewNetworkFromConfigMap(&corev1.ConfigMap{Data: network})
		if err != nil {
			t.Fatal(err)
		}
		c.Network = n
	}
	return c
}

func TestMakeHosts(t *testing.T) {
	domains := map[string]string{
		"ferry.test":        "",
		"example.org":       "selector:\n  app: nonprofit",
		"prod.example.org":  "selector:\n  app: nonprofit\n  env: prod",
		"svc.cluster.local": "selector:\n  app: secret",
	}
	local := map[string]string{v1.VisibilityLabelKey: v1.VisibilityClusterLocal}
	tests := []struct {
		name         string
		domain       map[string]string
		network      map[string]string
		labels       map[string]string
		annotations  map[string]string
		url, tagURL  string // tag "v2"
		clusterLocal bool
		localHosts   []string // of tag v2
		wantErr      string
	}{{
		name: "no ConfigMaps: example.com",
		url:  "http://hello.ns.example.com", tagURL: "http://v2-hello.ns.example.com",
		localHosts: []string{"v2-hello.ns", "v2-hello.ns.svc", "v2-hello.ns.svc.cluster.local"},
	}, {
		name: "catch-all", domain: domains,
		url: "http://hello.ns.ferry.test", tagURL: "http://v2-hello.ns.ferry.test",
	}, {
		name: "selector", domain: domains, labels: map[string]string{"app": "nonprofit"},
		url: "http://hello.ns.example.org", tagURL: "http://v2-hello.ns.example.org",
	}, {
		name: "the most specific selector", domain: domains, labels: map[string]string{"app": "nonprofit", "env": "prod"},
		url: "http://hello.ns.prod.example.org", tagURL: "http://v2-hello.ns.prod.example.org",
	}, {
		name: "svc.cluster.local entry makes it cluster-local", domain: domains, labels: map[string]string{"app": "secret"},
		network: map[string]string{"domain-template": "{{.Name}}-{{.Namespace}}.{{.Domain}}", "default-external-scheme": "https"},
		url:     "http://hello.ns.svc.cluster.local", tagURL: "http://v2-hello.ns.svc.cluster.local", clusterLocal: true,
	}, {
		name: "visibility label wins over config-domain", domain: domains, labels: map[string]string{"app": "nonprofit", v1.VisibilityLabelKey: v1.VisibilityClusterLocal},
		url: "http://hello.ns.svc.cluster.local", tagURL: "http://v2-hello.ns.svc.cluster.local", clusterLocal: true,
	}, {
		name: "domain-template and scheme", domain: domains,
		network: map[string]string{"domain-template": "{{.Name}}-{{.Namespace}}.{{.Domain}}", "default-external-scheme": "https"},
		url:     "https://hello-ns.ferry.test", tagURL: "https://v2-hello-ns.ferry.test",
	}, {
		name:        "domain-template with annotations and labels",
		network:     map[string]string{"domain-template": `{{.Name}}.{{index .Annotations "team"}}.{{index .Labels "env"}}.{{.Domain}}`},
		labels:      map[string]string{"env": "dev"},
		annotations: map[string]string{"team": "blue"},
		url:         "http://hello.blue.dev.example.com", tagURL: "http://v2-hello.blue.dev.example.com",
	}, {
		name:    "tag-template names the tag's hosts, in-cluster ones too",
		network: map[string]string{"tag-template": "{{.Name}}-{{.Tag}}"},
		url:     "http://hello.ns.example.com", tagURL: "http://hello-v2.ns.example.com",
		localHosts: []string{"hello-v2.ns", "hello-v2.ns.svc", "hello-v2.ns.svc.cluster.local"},
	}, {
		name: "cluster-local ignores domain-template but not tag-template", labels: local,
		network: map[string]string{"domain-template": "{{.Name}}.{{.Domain}}", "tag-template": "{{.Name}}-{{.Tag}}"},
		url:     "http://hello.ns.svc.cluster.local", tagURL: "http://hello-v2.ns.svc.cluster.local", clusterLocal: true,
	}, {
		name:    "a host that is no FQDN",
		network: map[string]string{"domain-template": "{{.Name}}.{{.Namespace}}.Example.com"},
		wantErr: `invalid domain name "hello.ns.Example.com"`,
	}, {
		name:    "a missing annotation leaves an empty label",
		network: map[string]string{"domain-template": `{{.Name}}.{{index .Annotations "team"}}.{{.Domain}}`},
		wantErr: "invalid domain name",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := configWith(t, tc.domain, tc.network)
			r := &v1.Route{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "ns", Labels: tc.labels, Annotations: tc.annotations}}
			h, err := MakeHosts(cfg, r, []v1.TrafficTarget{{Tag: "v2"}, {RevisionName: "x"}})
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if h.URL("") != tc.url || h.URL("v2") != tc.tagURL || h.ClusterLocal != tc.clusterLocal {
				t.Errorf("URL = %q, tag URL = %q, cluster-local %v", h.URL(""), h.URL("v2"), h.ClusterLocal)
			}
			if tc.localHosts != nil && !reflect.DeepEqual(h.ClusterLocalHosts("v2"), tc.localHosts) {
				t.Errorf("ClusterLocalHosts = %v", h.ClusterLocalHosts("v2"))
			}
			targets := []v1.TrafficTarget{{RevisionName: "x", Percent: p(100)}, {RevisionName: "x", Tag: "v2", Percent: p(0)}}
			ing := MakeIngress(r, targets, rollout.TagHosts(targets, nil), h, false)
			var external []string
			for _, rule := range ing.Spec.Rules {
				if rule.Visibility == netv1alpha1.IngressVisibilityExternalIP {
					external = append(external, rule.Hosts...)
				}
			}
			if tc.clusterLocal != (len(external) == 0) || (!tc.clusterLocal && !reflect.DeepEqual(external, []string{h.Host(""), h.Host("v2")})) {
				t.Errorf("external hosts %v", external)
			}
		})
	}
}

// TestWithClusterLocal: a tag (or the Route itself) made cluster-local by its
// placeholder Service's label has only its in-cluster host, http, whatever
// domain-template, tag-template and default-external-scheme say for the external one;
// the other names keep theirs. A cluster-local Route is so for every tag already.
func TestWithClusterLocal(t *testing.T) {
	traffic := []v1.TrafficTarget{{Tag: "v1"}, {Tag: "v2"}}
	tests := []struct {
		name    string
		network map[string]string
		labels  map[string]string
		local   map[string]bool
		// URLs of "", v1, v2, then the external hosts the KIngress has.
		urls     [3]string
		external []string
		certs    bool // an external host is left for a Certificate
	}{{
		name:     "none labelled",
		local:    map[string]bool{},
		urls:     [3]string{"http://hello.ns.example.com", "http://v1-hello.ns.example.com", "http://v2-hello.ns.example.com"},
		external: []string{"hello.ns.example.com", "v1-hello.ns.example.com", "v2-hello.ns.example.com"},
		certs:    true,
	}, {
		name:     "one tag labelled",
		local:    map[string]bool{"v2": true},
		urls:     [3]string{"http://hello.ns.example.com", "http://v1-hello.ns.example.com", "http://v2-hello.ns.svc.cluster.local"},
		external: []string{"hello.ns.example.com", "v1-hello.ns.example.com"},
		certs:    true,
	}, {
		name:     "a tag labelled under other templates and https",
		network:  map[string]string{"domain-template": "{{.Name}}-{{.Namespace}}.{{.Domain}}", "tag-template": "{{.Name}}-{{.Tag}}", "default-external-scheme": "https"},
		local:    map[string]bool{"v1": true},
		urls:     [3]string{"https://hello-ns.example.com", "http://hello-v1.ns.svc.cluster.local", "https://hello-v2-ns.example.com"},
		external: []string{"hello-ns.example.com", "hello-v2-ns.example.com"},
		certs:    true,
	}, {
		name:     "the Route's own placeholder labelled: its tags stay external",
		local:    map[string]bool{"": true},
		urls:     [3]string{"http://hello.ns.svc.cluster.local", "http://v1-hello.ns.example.com", "http://v2-hello.ns.example.com"},
		external: []string{"v1-hello.ns.example.com", "v2-hello.ns.example.com"},
		certs:    true,
	}, {
		name:  "all labelled: nothing external",
		local: map[string]bool{"": true, "v1": true, "v2": true},
		urls:  [3]string{"http://hello.ns.svc.cluster.local", "http://v1-hello.ns.svc.cluster.local", "http://v2-hello.ns.svc.cluster.local"},
	}, {
		name:   "a cluster-local Route: every tag, labelled or not",
		labels: map[string]string{v1.VisibilityLabelKey: v1.VisibilityClusterLocal},
		local:  map[string]bool{"v1": true},
		urls:   [3]string{"http://hello.ns.svc.cluster.local", "http://v1-hello.ns.svc.cluster.local", "http://v2-hello.ns.svc.cluster.local"},
	}, {
		name:     "a tag no longer in traffic is not added",
		local:    map[string]bool{"gone": true, "v1": false},
		urls:     [3]string{"http://hello.ns.example.com", "http://v1-hello.ns.example.com", "http://v2-hello.ns.example.com"},
		external: []string{"hello.ns.example.com", "v1-hello.ns.example.com", "v2-hello.ns.example.com"},
		certs:    true,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := &v1.Route{ObjectMeta: metav1.ObjectMeta{Name: "hello", Namespace: "ns", Labels: tc.labels}}
			plain, err := MakeHosts(configWith(t, nil, tc.network), r, traffic)
			if err != nil {
				t.Fatal(err)
			}
			before := [3]string{plain.URL(""), plain.URL("v1"), plain.URL("v2")}
			h := plain.WithClusterLocal(tc.local)
			if got := [3]string{h.URL(""), h.URL("v1"), h.URL("v2")}; got != tc.urls {
				t.Errorf("URLs %v, want %v", got, tc.urls)
			}
			if after := [3]string{plain.URL(""), plain.URL("v1"), plain.URL("v2")}; after != before {
				t.Errorf("WithClusterLocal changed the hosts it was called on: %v, were %v", after, before)
			}
			if !reflect.DeepEqual(h.Tags(), []string{"", "v1", "v2"}) {
				t.Errorf("tags %v", h.Tags())
			}
			targets := []v1.TrafficTarget{{RevisionName: "x", Percent: p(100)}, {RevisionName: "x", Tag: "v1", Percent: p(0)}, {RevisionName: "y", Tag: "v2", Percent: p(0)}}
			ing := MakeIngress(r, targets, rollout.TagHosts(targets, nil), h, false)
			var external, local []string
			for _, rule := range ing.Spec.Rules {
				if rule.Visibility == netv1alpha1.IngressVisibilityExternalIP {
					external = append(external, rule.Hosts...)
				} else {
					local = append(local, rule.Hosts[0])
				}
			}
			if !reflect.DeepEqual(external, tc.external) {
				t.Errorf("external hosts %v, want %v", external, tc.external)
			}
			// Every name is still served in the cluster, whatever its visibility.
			if n := h.ServiceName("v1"); !reflect.DeepEqual(local, []string{"hello.ns", n + ".ns", h.ServiceName("v2") + ".ns"}) {
				t.Errorf("cluster-local rules' hosts %v", local)
			}
			if h.AnyExternal() != tc.certs {
				t.Errorf("AnyExternal = %v", h.AnyExternal())
			}
		})
	}
}
