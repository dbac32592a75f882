package explain

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/ferry-serving/ferry/api/duck"
	netv1alpha1 "github.com/ferry-serving/ferry/api/networking/v1alpha1"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/api/serving/v1beta1"
	corev1 "k8s.io/api/core/v1"
)

// Advise says what to do about an explanation's culprit, in a line or two. The rules
// go by the culprit's kind (the reasons the kubelet, the API server and Ferry give),
// most specific first.
func Advise(c Chain, e Explanation) []string {
	kind := e.Kind
	ns := c.Namespace
	if ns == "" {
		ns = "default"
	}
	has := func(subs ...string) bool {
		for _, s := range subs {
			if strings.Contains(kind, s) {
				return true
			}
		}
		return false
	}
	image, container, revName := latestImage(c)
	pod := culpritName(e.Culprit, "Pod ")
	controller := "Is Ferry's controller running? (`ferry up` runs it; on a cluster: `kubectl -n ferry-system get pods` and its log.)"
	switch {
	case has("not created"):
		return []string{"The API server refused the Service: the message above names the field. Fix the manifest and apply it again."}
	case has("ksvc not found", "Configuration not found", "Revision not found", "Route not found"):
		return []string{fmt.Sprintf("Check the name and the namespace (-n): `kubectl get ksvc,configuration,revision,route -n %s`.", ns)}
	case has(v1.ReasonBuildingImage):
		return []string{fmt.Sprintf("ferry up is building the Go package of %s with the go command: run this again in a few seconds.", quoteOr(image, "the image"))}
	case has(v1.ReasonNeedsIsolation):
		return []string{
			"ferry up runs programs on this machine as plain processes of the host, without runc (macOS, not root, or --program-isolation=none): they cannot mount volumes at their mountPath.",
			"Run ferry up as root on Linux with runc installed (--program-isolation=auto or runc), or take the volumes out of the Service's template and have the program read its files from a path of the host.",
		}
	case has(v1.ReasonErrImageBuild), has(v1.ReasonContainerMissing) && strings.HasPrefix(image, "ko://"):
		return []string{
			fmt.Sprintf("ferry up could not make a program of %s: the message above says why (the go command's errors, or a missing executable).", quoteOr(image, "the image")),
			"A ko:// package builds in the directory ferry up was started in, within its Go module; an image mapped by --local-image runs the executable given there. Fix it: the pod tries again, 10 s after the first failure, doubling to 5 minutes.",
		}
	case has("ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull", v1.ReasonContainerMissing):
		return []string{
			fmt.Sprintf("The image %s cannot be pulled: check its name and tag, and that the cluster can reach the registry.", quoteOr(image, "of the Revision")),
			"For a private registry add imagePullSecrets (spec.template.spec, or the namespace's ServiceAccount); then change the Service's image: a new Revision is created and the old one keeps serving.",
		}
	case has("OOMKilled"):
		return []string{fmt.Sprintf("The container %s runs out of memory: raise spec.template.spec.containers[].resources.limits.memory.", quoteOr(container, ""))}
	case has("CreateContainerConfigError"):
		return []string{"The container cannot be made: the message above names the volume or env var and the ConfigMap, Secret or key it needs. " +
			"Create it, or mark it optional: the pod tries again with a back-off and starts once it is there."}
	case has("CrashLoopBackOff", v1.ReasonExitCode, "RunContainerError", "CreateContainerError"),
		strings.HasPrefix(kind, "Pod ") && has(" Error", " ContainerCannotRun"):
		logs := fmt.Sprintf("`kubectl logs -n %s %s -c %s --previous`", ns, orPlaceholder(pod, "POD"), orPlaceholder(container, v1.DefaultUserContainerName))
		return []string{
			"The container does not start or exits: its log says why: " + logs + ".",
			"Check the command, env and that it listens on $PORT (8080 unless containerPort says otherwise).",
		}
	case has("Unschedulable"):
		return []string{"No node can run the pod: the scheduler's message above says why (resources, node selectors, taints). Lower the template's resource requests or add capacity."}
	case has("ReplicaSet ReplicaFailure", "FailedCreate"):
		return []string{
			"The API server refused the pods (message above): a ResourceQuota, a LimitRange or an admission policy.",
			fmt.Sprintf("`kubectl describe resourcequota,limitrange -n %s`; raise the quota or lower the template's requests and limits.", ns),
		}
	case has("Deployment no pods"):
		return []string{fmt.Sprintf("The Deployment has no pods yet: the ReplicaSet's Events say why: `kubectl describe rs -n %s -l %s=%s`.", ns, v1.RevisionLabelKey, revName)}
	case has(v1.ReasonProgressDeadlineExceeded):
		return []string{"The pods did not become ready before the progress deadline: see the pod's state and Events above."}
	case has(v1beta1.ReasonDomainAlreadyClaimed) && c.DomainMapping != nil:
		if c.Claim != nil {
			return []string{fmt.Sprintf("ClusterDomainClaim %s gives the domain to namespace %s: only a DomainMapping there may map it. Delete that one and the claim (`kubectl delete clusterdomainclaim %s`), or map another domain.",
				c.Claim.Name, c.Claim.Spec.Namespace, c.Claim.Name)}
		}
		return []string{fmt.Sprintf("No ClusterDomainClaim gives %s to namespace %s, and config-network's autocreate-cluster-domain-claims is off: create one (spec.namespace: %s), or turn that on.",
			c.DomainMapping.Name, ns, ns)}
	case has(v1beta1.ReasonResolveFailed) && c.DomainMapping != nil:
		ref := c.DomainMapping.Spec.Ref
		resource := strings.ToLower(ref.Kind)
		if strings.HasPrefix(ref.APIVersion, "serving.knative.dev/") {
			resource += ".serving.knative.dev"
		}
		return []string{fmt.Sprintf("spec.ref names %s %q, which does not resolve (message above): it must exist in namespace %s and have an address; `kubectl get %s %s -n %s`.",
			ref.Kind, ref.Name, ns, resource, ref.Name, ns)}
	case has(duck.ReasonNotOwned, v1.ReasonCertificateNotOwned):
		kind, name := takenName(c)
		return []string{fmt.Sprintf("Another %s named %q exists and Ferry does not control it: `kubectl get %s %s -n %s -o yaml` shows whose it is. Delete it, or rename the object that needs the name.",
			orPlaceholder(kind, "object"), name, kubectlResource(kind), name, ns)}
	case has(v1.ReasonRevisionNameTaken):
		return []string{fmt.Sprintf("Another Revision has the name the template gives (message above): change spec.template.metadata.name (it must change with every template change), or delete that Revision (`kubectl get revisions -n %s`).", ns)}
	case has(v1.ReasonRolloutInProgress):
		return []string{"Not stuck: a gradual rollout (serving.knative.dev/rollout-duration) moves the traffic to the latest Revision step by step; the Route's status.traffic shows the split now. It is Ready when the rollout ends."}
	case has(v1.ReasonCertificateNotReady, v1.ReasonCertificateProvisionFailed):
		return []string{
			fmt.Sprintf("The Route's Certificate is not Ready (message above): `kubectl get kcert -n %s` and its conditions say why; the certificate class (config-network's certificate-class) must have a provider running.", ns),
			"Meanwhile the Route is not served on HTTPS; with http-protocol Enabled it is served on HTTP (HTTPDowngrade).",
		}
	case has(duck.ReasonCreationFailed, duck.ReasonUpdateFailed), has("KIngress missing") && refused(c):
		return []string{
			"The API server refused an object Ferry creates for it; the message above is the API server's: an invalid field, a ResourceQuota, an admission policy or Ferry's missing RBAC (config/rbac).",
			"Fix what it names; Ferry retries with a back-off (2s doubling to 5m).",
		}
	case has("Revision ResourcesAvailable=False", "Revision Ready=False"):
		return []string{
			"The Revision's resources could not be created or did not become available: the message above is the API server's or the kubelet's.",
			"Fix the Service's template and apply it: a new Revision is created; traffic stays on the last Ready one meanwhile.",
		}
	case has("not owned"):
		what := strings.Fields(kind)[0]
		return []string{fmt.Sprintf("Another %s has the Service's name and the Service does not control it: `kubectl get %s %s -n %s -o yaml` shows whose it is. Delete it, or name the Service differently.",
			what, strings.ToLower(what), c.Name, ns)}
	case has("Route AllTrafficAssigned=False", "Route AllTrafficAssigned=Unknown") && routeTrafficIssue(&c) != nil:
		return trafficAdvice(c, routeTrafficIssue(&c), ns)
	case has("KIngress missing"):
		return []string{"The Route has not created its KIngress: the Route's conditions above say why. " + controller}
	case has("KIngress"):
		return []string{
			"Ferry's gateway has not programmed the KIngress. Is the gateway running? (`ferry up` runs one; on a cluster: `ferry gateway`, or `kubectl -n ferry-system get pods`.)",
			"The gateway serves the class " + netv1alpha1.IngressClass + " (" + netv1alpha1.IngressClassAnnotationKey + ") and marks each KIngress Ready once it routes it.",
		}
	case has("gateway not routing"):
		return []string{
			fmt.Sprintf("The gateway at %s did not route the Route's host: check that it is Ferry's gateway's external address, and that the Route is public (a cluster-local Route is served on the gateway's local listener only).", orPlaceholder(c.GatewayURL, "the URL")),
		}
	case has("not reconciled", "no Ready condition", "Configuration missing", "Route missing", "Revision missing", "Deployment missing",
		"(its Deployment is available)", "Ready late"):
		return []string{"Ferry has not acted on the latest change yet. " + controller}
	case strings.HasPrefix(kind, "ksvc "), strings.HasPrefix(kind, "Configuration "), strings.HasPrefix(kind, "Route "):
		return []string{"Everything below is Ready; Ferry has not recorded it yet. Run this again in a few seconds. " + controller}
	case strings.HasPrefix(kind, "Pod "), strings.HasPrefix(kind, "Deployment "):
		return []string{"The pods are starting: run this again in a few seconds; if it stays so, the pod's Events above say why."}
	}
	return []string{"Read the conditions and Warning Events above from the bottom up: the deepest ✗ holds up the rest."}
}

// refused says the Route reports that the API server refused its KIngress.
func refused(c Chain) bool {
	if c.Route == nil {
		return false
	}
	cond := c.Route.Status.GetCondition(v1.RouteConditionIngressReady)
	return cond != nil && (cond.Reason == duck.ReasonCreationFailed || cond.Reason == duck.ReasonUpdateFailed)
}

// latestImage is the first container's image and name of the Revision the chain
// explains, and that Revision's name.
func latestImage(c Chain) (image, container, revision string) {
	var rev *v1.Revision
	switch {
	case c.Configuration != nil:
		rev = LatestRevision(c.Configuration, c.Revisions)
	case len(c.Revisions) > 0:
		rev = &c.Revisions[0]
	}
	if rev != nil {
		revision = rev.Name
		if len(rev.Spec.Containers) > 0 {
			image, container = rev.Spec.Containers[0].Image, rev.Spec.Containers[0].Name
		}
	}
	if image == "" && c.Service != nil && len(c.Service.Spec.Template.Spec.Containers) > 0 {
		image = c.Service.Spec.Template.Spec.Containers[0].Image
	}
	return image, container, revision
}

// culpritName is the object's name in a culprit line "Pod name: …" (prefix "Pod ").
func culpritName(culprit, prefix string) string {
	rest, ok := strings.CutPrefix(culprit, prefix)
	if !ok {
		return ""
	}
	name, _, _ := strings.Cut(rest, ":")
	return name
}

func quoteOr(s, or string) string {
	if s == "" {
		return or
	}
	return fmt.Sprintf("%q", s)
}

func orPlaceholder(s, placeholder string) string {
	if s == "" {
		return placeholder
	}
	return s
}

// takenMessage is Knative's NotOwned message (duck.NotOwnedMessage) and its
// certificate variant; they name the object that holds the name.
var takenMessage = regexp.MustCompile(`^There is an existing (.+?) "?([^" ]+)"? that we (?:do not|don't) own\.$`)

// takenName is the kind and name of the object whose name a child of the chain
// needs, from the first NotOwned condition on the Route or the latest Revision.
func takenName(c Chain) (kind, name string) {
	var statuses []*duck.Status
	if c.Route != nil {
		statuses = append(statuses, &c.Route.Status.Status)
	}
	if c.Configuration != nil {
		if rev := LatestRevision(c.Configuration, c.Revisions); rev != nil {
			statuses = append(statuses, &rev.Status.Status)
		}
	} else if len(c.Revisions) > 0 {
		statuses = append(statuses, &c.Revisions[0].Status.Status)
	}
	for _, s := range statuses {
		for _, cond := range s.Conditions {
			if m := takenMessage.FindStringSubmatch(cond.Message); m != nil && cond.Status != corev1.ConditionTrue {
				return m[1], m[2]
			}
		}
	}
	return "", c.Name
}

// kubectlResource is what kubectl calls the kind a NotOwned message names.
func kubectlResource(kind string) string {
	switch strings.ToLower(kind) {
	case "placeholder service":
		return "service"
	case "ingress":
		return "ingresses.networking.internal.knative.dev"
	case "certificate":
		return "certificates.networking.internal.knative.dev"
	case "podautoscaler":
		return "podautoscalers.autoscaling.internal.knative.dev"
	case "":
		return "all"
	}
	return strings.ToLower(kind)
}
