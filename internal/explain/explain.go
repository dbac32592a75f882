package explain

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
)

// Kind names the object an explanation starts from.
type Kind string

// The kinds `ferry explain` takes.
const (
	KindService       Kind = "ksvc"
	KindConfiguration Kind = "configuration"
	KindRevision      Kind = "revision"
	KindRoute         Kind = "route"
	KindDomainMapping Kind = "domainmapping"
)

// ParseKind accepts the names kubectl accepts for Knative's kinds (singular, plural,
// short names), and "service" for a Knative Service.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSuffix(s, ".serving.knative.dev")) {
	case "ksvc", "kservice", "service", "services", "ksvcs":
		return KindService, nil
	case "configuration", "configurations", "config", "cfg":
		return KindConfiguration, nil
	case "revision", "revisions", "rev":
		return KindRevision, nil
	case "route", "routes", "rt":
		return KindRoute, nil
	case "domainmapping", "domainmappings", "dm":
		return KindDomainMapping, nil
	}
	return "", fmt.Errorf("cannot explain %q: want ksvc (service), configuration, revision, route or domainmapping", s)
}

// Chain is what is known of one object and the objects its readiness depends on: a
// Service's Configuration and that one's Revisions with their Deployments,
// ReplicaSets and pods, its Route and that one's KIngress, and the Events about
// them. Missing objects are nil (or absent from the maps).
type Chain struct {
	// Name is the root object's name; Root its kind ("" is a Service).
	Name      string
	Namespace string
	Root      Kind

	Service       *v1.Service
	Configuration *v1.Configuration
	Revisions     []v1.Revision
	Deployments   map[string]*appsv1.Deployment  // by Revision name
	ReplicaSets   map[string][]appsv1.ReplicaSet // by Revision name
	Pods          map[string][]corev1.Pod        // by Revision name
	Route         *v1.Route
	// Ingress is the Route's KIngress, or the DomainMapping's.
	Ingress       *netv1alpha1.Ingress
	DomainMapping *v1beta1.DomainMapping
	// Claim is the ClusterDomainClaim of the DomainMapping's domain.
	Claim *netv1alpha1.ClusterDomainClaim
	// Neighbours are the namespace's Revisions, or Configurations, when the Route's
	// traffic names one that does not exist: to say what exists instead.
	Neighbours []metav1.ObjectMeta
	// Events are the Events about any of the objects above.
	Events []corev1.Event
	// ReadErrors say which objects could not be read, and why.
	ReadErrors []string
	// Now is when the snapshot was taken, to say how old Events are (zero: not said).
	Now time.Time

	// CreateError is why the Service could not be created.
	CreateError string
	// Deadline is the time the Service had; ReadyAfter, when not 0, is when it
	// became Ready all the same.
	Deadline   time.Duration
	ReadyAfter time.Duration
	// Probed says a gateway was sent requests with the Route's host; LastAnswer is
	// what it last said when it did not route them ("" when it did).
	Probed     bool
	LastAnswer string
	// GatewayURL is where the requests went, and RoutedAnswer what the gateway said
	// when it routed one.
	GatewayURL   string
	RoutedAnswer string
}

func (c *Chain) root() Kind {
	if c.Root == "" {
		return KindService
	}
	return c.Root
}

// Explanation says why an object is not Ready, along its dependency chain.
type Explanation struct {
	// Culprit is the deepest object that is not ready, and why, in one line.
	Culprit string `json:"culprit"`
	// Kind is the culprit without names and messages, to group Services stuck for
	// the same reason: "Revision ResourcesAvailable=Unknown Deploying".
	Kind string `json:"kind"`
	// Lines walk the chain from the root down, indented by depth.
	Lines []string `json:"lines"`
	// Advice says what to do about the culprit (Advise), so that `ferry scale` and
	// `ferry explain` say the same.
	Advice []string `json:"advice,omitempty"`
}

func (e Explanation) String() string { return strings.Join(e.Lines, "\n") }

// Explain names the deepest object that holds the rest up, lists what is not True on
// each object from the root down (see walk for the order), and says what to do. A Service always
// gets a culprit; for the other roots the culprit is empty when the root is Ready.
func Explain(c Chain) Explanation {
	e := walk(&c).e
	if e.Culprit != "" {
		e.Advice = Advise(c, e)
	}
	return e
}
