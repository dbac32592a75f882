package explain

import (
	"strings"
	"testing"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	"github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// mapping is a DomainMapping of www.example.org to ksvc hello, Ready with its
// KIngress.
func mapping() Chain {
	dm := &v1beta1.DomainMapping{ObjectMeta: om("www.example.org", 1)}
	dm.Spec.Ref = v1beta1.KReference{APIVersion: "serving.knative.dev/v1", Kind: "Service", Name: "hello"}
	dm.Status.Status = status(1, cond(duck.ConditionReady, T, "", ""), cond(v1beta1.DomainMappingConditionDomainClaimed, T, "", ""),
		cond(v1beta1.DomainMappingConditionReferenceResolved, T, "", ""), cond(v1beta1.DomainMappingConditionIngressReady, T, "", ""))
	ing := readyIngress()
	ing.Name = dm.Name
	return Chain{Name: dm.Name, Namespace: "ns", Root: KindDomainMapping, DomainMapping: dm, Ingress: ing}
}

func TestDomainMapping(t *testing.T) {
	failing := func(typ duck.ConditionType, reason, msg string) func() Chain {
		return func() Chain {
			c := mapping()
			c.DomainMapping.Status.Status = status(1, cond(duck.ConditionReady, F, reason, msg), cond(typ, F, reason, msg))
			return c
		}
	}
	for _, tc := range []struct {
		name        string
		chain       func() Chain
		wantCulprit string
		wantKind    string
		wantAdvice  string
	}{{
		name: "the domain is another namespace's",
		chain: func() Chain {
			c := failing(v1beta1.DomainMappingConditionDomainClaimed, v1beta1.ReasonDomainAlreadyClaimed, v1beta1.MessageDomainAlreadyClaimed)()
			c.Claim = &netv1alpha1.ClusterDomainClaim{ObjectMeta: metav1.ObjectMeta{Name: "www.example.org"}, Spec: netv1alpha1.ClusterDomainClaimSpec{Namespace: "other"}}
			return c
		},
		wantCulprit: `DomainMapping www.example.org: DomainClaimed=False DomainAlreadyClaimed "The domain name is already in use by another DomainMapping"`,
		wantKind:    "DomainMapping DomainClaimed=False DomainAlreadyClaimed",
		wantAdvice:  "ClusterDomainClaim www.example.org gives the domain to namespace other",
	}, {
		name:        "no claim and no autocreate",
		chain:       failing(v1beta1.DomainMappingConditionDomainClaimed, v1beta1.ReasonDomainAlreadyClaimed, v1beta1.MessageDomainAlreadyClaimed),
		wantCulprit: "DomainMapping www.example.org: DomainClaimed=False DomainAlreadyClaimed",
		wantKind:    "DomainMapping DomainClaimed=False DomainAlreadyClaimed",
		wantAdvice:  "No ClusterDomainClaim gives www.example.org to namespace ns",
	}, {
		name:        "the reference does not resolve",
		chain:       failing(v1beta1.DomainMappingConditionReferenceResolved, v1beta1.ReasonResolveFailed, `failed to get object ns/hello: services.serving.knative.dev "hello" not found`),
		wantCulprit: `DomainMapping www.example.org: ReferenceResolved=False ResolveFailed`,
		wantKind:    "DomainMapping ReferenceResolved=False ResolveFailed",
		wantAdvice:  "`kubectl get service.serving.knative.dev hello -n ns`",
	}, {
		name: "the KIngress is not programmed",
		chain: func() Chain {
			c := mapping()
			c.DomainMapping.Status.Status = status(1, cond(duck.ConditionReady, U, v1.ReasonIngressNotConfigured, ""),
				cond(v1beta1.DomainMappingConditionDomainClaimed, T, "", ""), cond(v1beta1.DomainMappingConditionReferenceResolved, T, "", ""),
				cond(v1beta1.DomainMappingConditionIngressReady, U, v1.ReasonIngressNotConfigured, ""))
			c.Ingress.Status.Status = status(1, cond(duck.ConditionReady, U, "", ""))
			return c
		},
		wantCulprit: "KIngress www.example.org: Ready=Unknown",
		wantKind:    "KIngress Ready=Unknown",
		wantAdvice:  "Is the gateway running?",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := Build(tc.chain())
			if r.OK || !strings.HasPrefix(r.Culprit, tc.wantCulprit) || r.Kind != tc.wantKind || len(r.Advice) == 0 || !strings.Contains(r.Advice[0], tc.wantAdvice) {
				t.Errorf("got culprit %q\n kind %q\n advice %q\nwant culprit %q\n kind %q\n advice holding %q", r.Culprit, r.Kind, r.Advice, tc.wantCulprit, tc.wantKind, tc.wantAdvice)
			}
		})
	}
	if r := Build(mapping()); !r.OK || r.Culprit != "" {
		t.Errorf("a Ready DomainMapping: %s", r)
	}
}
