package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	autoscalingv1alpha1 "github.com/ferry-serving/ferry/api/autoscaling/v1alpha1"
	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/explain"
	"github.com/ferry-serving/ferry/internal/localcluster"
	"github.com/ferry-serving/ferry/internal/reconciler"
	routeresources "github.com/ferry-serving/ferry/internal/reconciler/route/resources"
)

// explainRow is one failure Knative reports, made on the local cluster, and what
// `ferry explain` must say of it in its summary. In the strings "{ns}" stands for
// the row's namespace and "{name}" for the explained object's name.
type explainRow struct {
	name string
	// ferry is the Ferry that runs the row: "" the default configuration, else one
	// of explainTableConfigs. With ownFerry, make starts it once it has made what
	// must be there before Ferry sees the namespace.
	ferry    string
	ownFerry bool
	// make creates the failure in ns and returns what to explain.
	make func(t *testing.T, ns string) explain.Target
	// culprit starts the "not done" line, reason is in the culprit's kind, todo in
	// the first line of "to do". ok rows are not failures: the report is OK.
	culprit, reason, todo string
	ok                    bool
	// also must be in the report (it is waited for, with the rest), never must not.
	also, never []string
	// check, if set, checks more of the report.
	check func(t *testing.T, ns string, r explain.Report)
}

// explainTableConfigs are the configurations some rows need, each run by a Ferry of
// its own: config-network as its ConfigMap would say it.
var explainTableConfigs = map[string]map[string]string{
	// A Certificate class nobody serves (cert-manager's, which does not run here),
	// so the Route's Certificate is never Ready; http-protocol Redirected, so the
	// Route waits for it, and Enabled, so it is served on HTTP meanwhile.
	"tls-redirected": {"external-domain-tls": "Enabled", "http-protocol": "Redirected"},
	"tls-enabled":    {"external-domain-tls": "Enabled", "http-protocol": "Enabled"},
	// A template that passes config-network's load checks but gives hosts that are
	// not domain names.
	"bad-domain-template": {"domain-template": "{{.Name}}_{{.Namespace}}.{{.Domain}}"},
}

func create(t *testing.T, objs ...client.Object) {
	t.Helper()
	for _, o := range objs {
		if err := testClient.Create(context.Background(), o); err != nil {
			t.Fatalf("creating %T %s: %v", o, o.GetName(), err)
		}
	}
}

// service is a Service of image with the given traffic (none: Knative's default).
func service(ns, name, image string, traffic ...v1.TrafficTarget) *v1.Service {
	s := ksvc(ns, name, image)
	s.Spec.Traffic = traffic
	return s
}

func configuration(ns, name, image string) *v1.Configuration {
	c := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	c.Spec.Template.Spec.Containers = []corev1.Container{{Image: image}}
	return c
}

func route(ns, name string, traffic ...v1.TrafficTarget) *v1.Route {
	r := &v1.Route{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	r.Spec.Traffic = traffic
	return r
}

func target(kind explain.Kind, ns, name string) explain.Target {
	return explain.Target{Kind: kind, Namespace: ns, Name: name}
}

// explainTable is every failure Knative reports that the local cluster can make,
// one row each.
var explainTable = []explainRow{{
	name: "RevisionMissing, pinned",
	make: func(t *testing.T, ns string) explain.Target {
		create(t, service(ns, "pin", "ferry.test/pin", v1.TrafficTarget{RevisionName: "pin-99999", Percent: ptr(int64(100))}))
		return target(explain.KindService, ns, "pin")
	},
	culprit: `Route pin: its traffic names Revision "pin-99999", which does not exist (AllTrafficAssigned=False RevisionMissing)`,
	reason:  "RevisionMissing (not found)",
	todo:    `Revision "pin-99999" does not exist (Configuration pin has pin-00001 (latest ready)): name an existing one in ksvc pin's spec.traffic[0].revisionName, or remove that entry.`,
	never:   []string{"controller", "not done: KIngress"},
	check: func(t *testing.T, _ string, r explain.Report) {
		// The case as a user reads it: the first two lines say it all.
		lines := strings.SplitN(r.String(), "\n", 3)
		if !strings.Contains(lines[1], "Route pin") || !strings.Contains(lines[1], `Revision "pin-99999"`) {
			t.Errorf("the first two lines do not name the Route and the Revision:\n%s\n%s", lines[0], lines[1])
		}
	},
}, {
	name: "RevisionMissing, tagged",
	make: func(t *testing.T, ns string) explain.Target {
		create(t, service(ns, "tagged", "ferry.test/tagged", v1.TrafficTarget{LatestRevision: ptr(true), Percent: ptr(int64(100))},
			v1.TrafficTarget{Tag: "old", RevisionName: "tagged-00007", Percent: ptr(int64(0))}))
		return target(explain.KindService, ns, "tagged")
	},
	culprit: `Route tagged: its traffic names Revision "tagged-00007", which does not exist`,
	reason:  "RevisionMissing (not found)",
	todo:    `in ksvc tagged's spec.traffic[1].revisionName (tag old)`,
	never:   []string{"controller"},
}, {
	name: "RevisionMissing, latestRevision: false",
	make: func(t *testing.T, ns string) explain.Target {
		create(t, service(ns, "frozen", "ferry.test/frozen", v1.TrafficTarget{RevisionName: "frozen-00002", LatestRevision: ptr(false), Percent: ptr(int64(100))}))
		return target(explain.KindService, ns, "frozen")
	},
	culprit: `Route frozen: its traffic names Revision "frozen-00002", which does not exist`,
	reason:  "RevisionMissing (not found)",
	todo:    `Revision "frozen-00002" does not exist (Configuration frozen has frozen-00001 (latest ready))`,
}, {
	name: "ConfigurationMissing, pinned",
	make: func(t *testing.T, ns string) explain.Target {
		create(t, configuration(ns, "hello-world", "ferry.test/hello"),
			route(ns, "typo", v1.TrafficTarget{ConfigurationName: "hello-wrold", Percent: ptr(int64(100))}))
		return target(explain.KindRoute, ns, "typo")
	},
	culprit: `Route typo: its traffic names Configuration "hello-wrold", which does not exist (AllTrafficAssigned=False ConfigurationMissing)`,
	reason:  "ConfigurationMissing (not found)",
	todo:    `Configuration "hello-wrold" does not exist in namespace {ns} (similar: hello-world): name an existing one in route typo's spec.traffic[0].configurationName, or create it.`,
	never:   []string{"controller"},
}, {
	name: "ConfigurationMissing, tagged",
	make: func(t *testing.T, ns string) explain.Target {
		create(t, configuration(ns, "main", "ferry.test/main"),
			route(ns, "canary", v1.TrafficTarget{ConfigurationName: "main", Percent: ptr(int64(100))},
				v1.TrafficTarget{Tag: "next", ConfigurationName: "main-next", Percent: ptr(int64(0))}))
		return target(explain.KindRoute, ns, "canary")
	},
	culprit: `Route canary: its traffic names Configuration "main-next", which does not exist`,
	reason:  "ConfigurationMissing (not found)",
	todo:    `(similar: main): name an existing one in route canary's spec.traffic[1].configurationName (tag next)`,
}, {
	// The Revision pinned is the one the Configuration makes, and it is on its way:
	// explain waits for it, and explains it.
	name: "RevisionMissing while the pinned Revision is being created",
	make: func(t *testing.T, ns string) explain.Target {
		create(t, service(ns, "next", localcluster.NeverReadyImage, v1.TrafficTarget{RevisionName: "next-00001", Percent: ptr(int64(100))}))
		return target(explain.KindService, ns, "next")
	},
	culprit: "Pod next-00001-deployment-",
	reason:  "Pod Running Ready=False ContainersNotReady",
	todo:    "The pods are starting",
	// While the Configuration creates it, then while it is not Ready.
	also:  []string{"✗ Route next: waiting for "},
	never: []string{"does not exist"},
}, {
	// The same once the Revision exists: the Route waits for it to be Ready.
	name: "RevisionMissing while the pinned Revision is not Ready yet",
	make: func(t *testing.T, ns string) explain.Target {
		create(t, service(ns, "later", localcluster.NeverReadyImage, v1.TrafficTarget{RevisionName: "later-00001", Percent: ptr(int64(100))}))
		return target(explain.KindService, ns, "later")
	},
	culprit: "Pod later-00001-deployment-",
	reason:  "Pod Running Ready=False ContainersNotReady",
	todo:    "The pods are starting",
	also:    []string{`✗ Route later: waiting for Revision "later-00001" to become Ready`},
	never:   []string{"does not exist"},
}, {
	// Knative's RevisionFailed seen from a Route that names the failed Revision.
	name: "RevisionFailed, named by a Route",
	make: func(t *testing.T, ns string) explain.Target {
		create(t, configuration(ns, "crashing", localcluster.CrashingImage),
			route(ns, "oncrash", v1.TrafficTarget{RevisionName: "crashing-00001", Percent: ptr(int64(100))}))
		return target(explain.KindRoute, ns, "oncrash")
	},
	culprit: `Route oncrash: Revision "crashing-00001", which its traffic names, failed (AllTrafficAssigned=False RevisionMissing)`,
	reason:  "RevisionMissing (failed)",
	todo:    "`ferry explain revision crashing-00001 -n {ns}` says why it is not Ready",
}, {
	name: v1.ReasonContainerMissing,
	make: func(t *testing.T, ns string) explain.Target {
		create(t, ksvc(ns, "pullfail", localcluster.ImagePullErrorImage))
		return target(explain.KindService, ns, "pullfail")
	},
	culprit: "Pod pullfail-00001-deployment-",
	reason:  "ErrImagePull",
	todo:    `The image "ferry.test/image-pull-error" cannot be pulled`,
	also:    []string{"ContainerHealthy=False ContainerMissing", "waiting: ErrImagePull", "✗ Revision pullfail-00001 (latest created)"},
	check: func(t *testing.T, ns string, _ explain.Report) {
		// From the Revision: the same culprit.
		r, err := explain.Check(context.Background(), testClient, target(explain.KindRevision, ns, "pullfail-00001"), "")
		if err != nil || !strings.HasPrefix(r.Culprit, "Pod pullfail-00001-deployment-") {
			t.Errorf("from the Revision: %v\n%s", err, r)
		}
	},
}, {
	name: "ExitCode",
	make: func(t *testing.T, ns string) explain.Target {
		create(t, ksvc(ns, "crash", localcluster.CrashingImage))
		return target(explain.KindService, ns, "crash")
	},
	culprit: "Pod crash-00001-deployment-",
	reason:  "CrashLoopBackOff",
	todo:    "The container does not start or exits: its log says why: `kubectl logs -n {ns} crash-00001-deployment-",
	also:    []string{v1.ExitCodeReason(1), v1.ReasonRevisionFailed, "last exit 1 Error"},
}, {
	name: v1.ReasonProgressDeadlineExceeded,
	make: func(t *testing.T, ns string) explain.Target {
		s := ksvc(ns, "slow", localcluster.NeverReadyImage)
		s.Spec.Template.ObjectMeta.Annotations = map[string]string{v1.ProgressDeadlineAnnotationKey: "5s"}
		create(t, s)
		return target(explain.KindService, ns, "slow")
	},
	culprit: "Revision slow-00001: ResourcesAvailable=False ProgressDeadlineExceeded",
	reason:  v1.ReasonProgressDeadlineExceeded,
	todo:    "The pods did not become ready before the progress deadline",
}, {
	name: "Unschedulable",
	make: func(t *testing.T, ns string) explain.Target {
		s := ksvc(ns, "huge", "ferry.test/huge")
		// More than a kwok node has (1000 CPUs).
		s.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2000")}
		create(t, s)
		return target(explain.KindService, ns, "huge")
	},
	culprit: "Pod huge-00001-deployment-",
	reason:  "PodScheduled=False Unschedulable",
	todo:    "No node can run the pod",
}, {
	name: "a ResourceQuota",
	make: func(t *testing.T, ns string) explain.Target {
		quota(corev1.ResourcePods)(t, ns)
		create(t, ksvc(ns, "quota", "ferry.test/quota"))
		return target(explain.KindService, ns, "quota")
	},
	culprit: "ReplicaSet quota-00001-deployment-",
	reason:  "ReplicaFailure=True FailedCreate",
	todo:    "The API server refused the pods",
	also:    []string{"exceeded quota"},
}, {
	name: "NotOwned: Configuration",
	make: func(t *testing.T, ns string) explain.Target {
		create(t, configuration(ns, "cfgtaken", "ferry.test/squatter"))
		create(t, ksvc(ns, "cfgtaken", "ferry.test/cfgtaken"))
		return target(explain.KindService, ns, "cfgtaken")
	},
	culprit: "Configuration cfgtaken: not owned by ksvc cfgtaken",
	reason:  "Configuration not owned",
	todo:    "Another Configuration has the Service's name and the Service does not control it: `kubectl get configuration cfgtaken -n {ns} -o yaml`",
}, {
	name: "NotOwned: Route",
	make: func(t *testing.T, ns string) explain.Target {
		create(t, route(ns, "taken", v1.TrafficTarget{ConfigurationName: "elsewhere", Percent: ptr(int64(100))}))
		create(t, ksvc(ns, "taken", "ferry.test/taken"))
		return target(explain.KindService, ns, "taken")
	},
	culprit: "Route taken: not owned by ksvc taken",
	reason:  "Route not owned",
	todo:    "`kubectl get route taken -n {ns} -o yaml`",
	also:    []string{duck.ReasonNotOwned},
}, {
	name: "NotOwned: Revision (RevisionNameTaken)",
	make: func(t *testing.T, ns string) explain.Target {
		squatter := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "byo-blue"}}
		squatter.Spec.Containers = []corev1.Container{{Image: "ferry.test/squatter"}}
		s := ksvc(ns, "byo", "ferry.test/byo")
		s.Spec.Template.ObjectMeta.Name = "byo-blue"
		create(t, squatter, s)
		return target(explain.KindService, ns, "byo")
	},
	culprit: "Configuration byo: Ready=False RevisionNameTaken",
	reason:  v1.ReasonRevisionNameTaken,
	todo:    "Another Revision has the name the template gives",
}, {
	name: "NotOwned: Deployment",
	make: func(t *testing.T, ns string) explain.Target {
		labels := map[string]string{"app": "squatter"}
		dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "deptaken-00001-deployment"},
			Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "ferry.test/squatter"}}}}}}
		create(t, dep, ksvc(ns, "deptaken", "ferry.test/deptaken"))
		return target(explain.KindService, ns, "deptaken")
	},
	culprit: "Revision deptaken-00001: ResourcesAvailable=False NotOwned",
	reason:  "ResourcesAvailable=False NotOwned",
	todo:    "Another Deployment named \"deptaken-00001-deployment\" exists and Ferry does not control it: `kubectl get deployment deptaken-00001-deployment -n {ns} -o yaml`",
}, {
	name: "NotOwned: PodAutoscaler",
	make: func(t *testing.T, ns string) explain.Target {
		pa := &autoscalingv1alpha1.PodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pataken-00001"},
			Spec: autoscalingv1alpha1.PodAutoscalerSpec{ScaleTargetRef: corev1.ObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "other"},
				ProtocolType: "http1"}}
		create(t, pa, ksvc(ns, "pataken", "ferry.test/pataken"))
		return target(explain.KindService, ns, "pataken")
	},
	culprit: "Revision pataken-00001: ResourcesAvailable=False NotOwned",
	reason:  "ResourcesAvailable=False NotOwned",
	todo:    "`kubectl get podautoscalers.autoscaling.internal.knative.dev pataken-00001 -n {ns} -o yaml`",
}, {
	name: "NotOwned: KIngress",
	make: func(t *testing.T, ns string) explain.Target {
		ing := &netv1alpha1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ingtaken",
			// Another implementation's, so that Ferry's gateway leaves it alone.
			Annotations: map[string]string{netv1alpha1.IngressClassAnnotationKey: "other.ingress.networking.knative.dev"}},
			Spec: netv1alpha1.IngressSpec{Rules: []netv1alpha1.IngressRule{{Hosts: []string{"squatter.example.com"}, Visibility: netv1alpha1.IngressVisibilityExternalIP,
				HTTP: &netv1alpha1.HTTPIngressRuleValue{Paths: []netv1alpha1.HTTPIngressPath{{Splits: []netv1alpha1.IngressBackendSplit{{
					IngressBackend: netv1alpha1.IngressBackend{ServiceNamespace: ns, ServiceName: "squatter", ServicePort: intstr.FromInt32(80)}, Percent: 100}}}}}}}}}
		create(t, ing, ksvc(ns, "ingtaken", "ferry.test/ingtaken"))
		return target(explain.KindService, ns, "ingtaken")
	},
	culprit: "Route ingtaken: IngressReady=False NotOwned",
	reason:  "IngressReady=False NotOwned",
	todo:    "`kubectl get ingresses.networking.internal.knative.dev ingtaken -n {ns} -o yaml`",
}, {
	name: "NotOwned: placeholder Service",
	make: func(t *testing.T, ns string) explain.Target {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "phtaken"},
			Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
		create(t, svc, ksvc(ns, "phtaken", "ferry.test/phtaken"))
		return target(explain.KindService, ns, "phtaken")
	},
	culprit: "Route phtaken: IngressReady=False NotOwned",
	reason:  "IngressReady=False NotOwned",
	todo:    "Another placeholder Service named \"phtaken\" exists and Ferry does not control it: `kubectl get service phtaken -n {ns} -o yaml`",
}, {
	name: v1beta1.ReasonDomainAlreadyClaimed,
	make: func(t *testing.T, ns string) explain.Target {
		domain := "claimed." + ns + ".example.org"
		deleteClaimAtEnd(t, domain)
		create(t, &netv1alpha1.ClusterDomainClaim{ObjectMeta: metav1.ObjectMeta{Name: domain}, Spec: netv1alpha1.ClusterDomainClaimSpec{Namespace: "elsewhere"}},
			domainMapping(ns, domain, "anything"))
		return target(explain.KindDomainMapping, ns, domain)
	},
	culprit: "DomainMapping {name}: DomainClaimed=False DomainAlreadyClaimed",
	reason:  v1beta1.ReasonDomainAlreadyClaimed,
	todo:    "ClusterDomainClaim {name} gives the domain to namespace elsewhere",
}, {
	name: v1beta1.ReasonResolveFailed,
	make: func(t *testing.T, ns string) explain.Target {
		domain := "unresolved." + ns + ".example.org"
		deleteClaimAtEnd(t, domain)
		create(t, &netv1alpha1.ClusterDomainClaim{ObjectMeta: metav1.ObjectMeta{Name: domain}, Spec: netv1alpha1.ClusterDomainClaimSpec{Namespace: ns}},
			domainMapping(ns, domain, "nope"))
		return target(explain.KindDomainMapping, ns, domain)
	},
	culprit: "DomainMapping {name}: ReferenceResolved=False ResolveFailed",
	reason:  v1beta1.ReasonResolveFailed,
	todo:    `spec.ref names Service "nope", which does not resolve`,
}, {
	name:  "Certificate not ready",
	ferry: "tls-redirected",
	make: func(t *testing.T, ns string) explain.Target {
		create(t, ksvc(ns, "secure", "ferry.test/secure"))
		return target(explain.KindService, ns, "secure")
	},
	culprit: "Route secure: CertificateProvisioned=Unknown CertificateNotReady",
	reason:  v1.ReasonCertificateNotReady,
	todo:    "The Route's Certificate is not Ready",
}, {
	// The Certificate's name holds the Route's UID: the squatter is made after the
	// Route and before any Ferry sees it.
	name:     "NotOwned: Certificate",
	ferry:    "tls-redirected",
	ownFerry: true,
	make: func(t *testing.T, ns string) explain.Target {
		rt := route(ns, "certtaken", v1.TrafficTarget{ConfigurationName: "app", Percent: ptr(int64(100))})
		create(t, configuration(ns, "app", "ferry.test/app"), rt)
		create(t, &netv1alpha1.Certificate{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: routeresources.CertificateName(rt, "")},
			Spec: netv1alpha1.CertificateSpec{DNSNames: []string{"squatter.example.com"}, SecretName: "squatter"}})
		startFerryAndGatewayWith(t, explainTableOptions(t, "tls-redirected"), true, ns)
		return target(explain.KindRoute, ns, "certtaken")
	},
	culprit: "Route certtaken: CertificateProvisioned=False CertificateNotOwned",
	reason:  v1.ReasonCertificateNotOwned,
	todo:    "`kubectl get certificates.networking.internal.knative.dev route-",
}, {
	// Not a failure: Ready, on HTTP until the Certificate is.
	name:  v1.ReasonHTTPDowngrade,
	ferry: "tls-enabled",
	make: func(t *testing.T, ns string) explain.Target {
		create(t, ksvc(ns, "downgraded", "ferry.test/downgraded"))
		return target(explain.KindService, ns, "downgraded")
	},
	ok:   true,
	also: []string{"HTTP only (HTTPDowngrade): Certificate"},
}, {
	name: "a rollout in progress",
	make: func(t *testing.T, ns string) explain.Target {
		s := ksvc(ns, "roll", "ferry.test/roll-v1")
		s.Annotations = map[string]string{"serving.knative.dev/rollout-duration": "300s"}
		create(t, s)
		waitCondition(t, testClient, s, v1.ServiceConditionReady, corev1.ConditionTrue, "", 2*readyTimeout)
		s.Spec.Template.Spec.Containers[0].Image = "ferry.test/roll-v2"
		if err := testClient.Update(context.Background(), s); err != nil {
			t.Fatal(err)
		}
		return target(explain.KindService, ns, "roll")
	},
	culprit: "Route roll: IngressReady=Unknown RolloutInProgress",
	reason:  v1.ReasonRolloutInProgress,
	todo:    "Not stuck: a gradual rollout",
	also:    []string{"% → roll-00001 (latest), ", "% → roll-00002 (latest)"},
}, {
	name:  "ErrorConfig: a domain template that gives no domain name",
	ferry: "bad-domain-template",
	make: func(t *testing.T, ns string) explain.Target {
		create(t, ksvc(ns, "badhost", "ferry.test/badhost"))
		return target(explain.KindService, ns, "badhost")
	},
	culprit: `Route badhost: AllTrafficAssigned=False ErrorConfig "invalid domain name \"badhost_{ns}.example.com\"`,
	reason:  v1.ReasonErrorConfig,
	todo:    "Ferry's configuration gives the Route a host that is not a valid domain name",
	never:   []string{"controller"},
}, {
	// Not a failure: a Revision at zero pods is Ready.
	name: "scale to zero",
	make: func(t *testing.T, ns string) explain.Target {
		s := ksvc(ns, "zero", "ferry.test/zero")
		s.Spec.Template.ObjectMeta.Annotations = map[string]string{"autoscaling.knative.dev/window": "6s",
			"autoscaling.knative.dev/scale-to-zero-pod-retention-period": "0s"}
		create(t, s)
		return target(explain.KindService, ns, "zero")
	},
	ok:   true,
	also: []string{"✓ Deployment zero-00001-deployment: 0/0 available"},
}}

// TestExplainTable makes each failure of explainTable on the local cluster and
// checks what `ferry explain` says of it: the culprit, its reason and what to do.
func TestExplainTable(t *testing.T) {
	nss := make([]string, len(explainTable))
	byFerry := map[string][]string{}
	for i, row := range explainTable {
		nss[i] = testNamespace(t)
		if !row.ownFerry {
			byFerry[row.ferry] = append(byFerry[row.ferry], nss[i])
		}
	}
	for name, namespaces := range byFerry {
		startFerryAndGatewayWith(t, explainTableOptions(t, name), true, namespaces...)
	}
	for i, row := range explainTable {
		ns := nss[i]
		t.Run(row.name, func(t *testing.T) {
			t.Parallel()
			dumpOnFailure(t, testClient, ns)
			start := time.Now()
			tgt := row.make(t, ns)
			fill := strings.NewReplacer("{ns}", ns, "{name}", tgt.Name).Replace
			culprit, reason, todo := fill(row.culprit), fill(row.reason), fill(row.todo)
			also := fillAll(fill, row.also)
			r := explainUntil(t, tgt, "", func(r explain.Report) bool {
				for _, s := range also {
					if !strings.Contains(r.String(), s) {
						return false
					}
				}
				if row.ok {
					return r.OK
				}
				return !r.OK && strings.HasPrefix(r.Culprit, culprit) && strings.Contains(r.Kind, reason) &&
					len(r.Advice) > 0 && strings.Contains(r.Advice[0], todo)
			})
			t.Logf("explained as expected after %v", time.Since(start).Round(100*time.Millisecond))
			if row.ok && (r.Culprit != "" || len(r.Advice) != 0) {
				t.Errorf("a row that is no failure has a culprit %q or advice %q", r.Culprit, r.Advice)
			}
			for _, s := range fillAll(fill, row.never) {
				if strings.Contains(r.String(), s) {
					t.Errorf("the report says %q:\n%s", s, r)
				}
			}
			if row.check != nil {
				row.check(t, ns, r)
			}
		})
	}
}

// explainTableOptions are the reconcilers' options for the Ferry named name ("" the
// default configuration, else config-network from explainTableConfigs).
func explainTableOptions(t *testing.T, name string) reconciler.Options {
	t.Helper()
	if name == "" {
		return reconciler.Options{}
	}
	network, err := config.NewNetworkFromConfigMap(&corev1.ConfigMap{Data: explainTableConfigs[name]})
	if err != nil {
		t.Fatalf("config-network %s: %v", name, err)
	}
	cfg := config.Default()
	cfg.Network = network
	return reconciler.Options{Config: func() *config.Config { return cfg }}
}

func fillAll(fill func(string) string, ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fill(s)
	}
	return out
}
