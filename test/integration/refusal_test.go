package integration

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/reconciler"
)

// TestRefusedChildren: whatever makes the API server refuse a Revision's Deployment or
// its pods, the user sees it within seconds on the Revision, the Configuration and the
// Service (Ready False with the API server's message), one Warning Event says it once,
// the controller retries with a back-off instead of a loop, and the Service becomes
// Ready by itself once the refusal is lifted.
func TestRefusedChildren(t *testing.T) {
	tests := []struct {
		name string
		// refuse makes the cluster refuse in ns and returns how to lift it.
		refuse func(t *testing.T, ns string) (lift func())
		// user is who the reconcilers act as ("" for the admin).
		user string
		// reason and message are what the Revision's ResourcesAvailable must show.
		reason, message string
		// posts bounds the Deployment creates; 0 when the Deployment is created.
		posts int
	}{{
		name:    "quota on Deployments",
		refuse:  quota(corev1.ResourceName("count/deployments.apps")),
		reason:  duck.ReasonCreationFailed,
		message: "exceeded quota",
		posts:   4,
	}, {
		name:    "quota on pods",
		refuse:  quota(corev1.ResourcePods),
		reason:  "FailedCreate",
		message: "exceeded quota",
	}, {
		name:    "denied by a ValidatingAdmissionPolicy",
		refuse:  denyDeployments,
		reason:  duck.ReasonCreationFailed,
		message: "no Deployments in this namespace, says the policy",
		posts:   4,
	}, {
		name:    "RBAC forbids creating Deployments",
		refuse:  func(t *testing.T, ns string) func() { return nil },
		user:    noDeploymentsUser(t),
		reason:  duck.ReasonCreationFailed,
		message: "cannot create resource \"deployments\"",
		posts:   4,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := testClient
			ns := testNamespace(t)
			dumpOnFailure(t, c, ns)
			lift := tc.refuse(t, ns)
			cfg := rest.CopyConfig(testConfig)
			if tc.user != "" {
				cfg.Impersonate = rest.ImpersonationConfig{UserName: tc.user}
			}
			f := startFerryWith(t, cfg, ns, reconciler.Options{})
			ctx := context.Background()

			start := time.Now()
			if err := c.Create(ctx, ksvc(ns, "hello", "ferry.test/hello")); err != nil {
				t.Fatal(err)
			}
			rev := &v1.Revision{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello-00001"}}
			// The bound is a loaded machine's (the time is logged below): the test asserts
			// what the user sees, not how fast.
			waitCondition(t, c, rev, v1.RevisionConditionResourcesAvailable, corev1.ConditionFalse, tc.reason, 60*time.Second)
			if msg := rev.Status.GetCondition(v1.RevisionConditionResourcesAvailable).Message; !strings.Contains(msg, tc.message) {
				t.Errorf("Revision ResourcesAvailable message = %q, want it to contain %q", msg, tc.message)
			}
			t.Logf("Revision shows %s after %v", tc.reason, time.Since(start).Round(time.Millisecond))
			cfgObj := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"}}
			waitCondition(t, c, cfgObj, v1.ConfigurationConditionReady, corev1.ConditionFalse, v1.ReasonRevisionFailed, 30*time.Second)
			svc := &v1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hello"}}
			waitCondition(t, c, svc, v1.ServiceConditionReady, corev1.ConditionFalse, v1.ReasonRevisionFailed, 30*time.Second)
			if msg := svc.Status.GetCondition(v1.ServiceConditionReady).Message; !strings.Contains(msg, tc.message) {
				t.Errorf("Service Ready message = %q, want it to contain %q", msg, tc.message)
			}

			// Retries back off: over 12 s, at most a handful of creates, not a loop. On a
			// machine so loaded that the failure showed later, the back-off (2 s,
			// doubling) allows one more for each doubling of the time.
			time.Sleep(12*time.Second - time.Since(start))
			elapsed := time.Since(start)
			most := max(tc.posts, 2+int(math.Log2(elapsed.Seconds()/2+1)))
			posts := f.writes.kinds(ns)["POST deployments"]
			if tc.posts > 0 && (posts < 2 || posts > most) {
				t.Errorf("%d Deployment creates in %v, want 2 to %d (retried, with a back-off)", posts, elapsed.Round(time.Second), most)
			}
			// One Event per refusal message. The API server's own answer may change once
			// while a new quota settles ("status unknown for quota", then "exceeded
			// quota"); that is a new failure and warns again, a repeat never does.
			said := warnings(t, ns, "hello-00001", tc.reason)
			found := false
			for msg, n := range said {
				if n != 1 {
					t.Errorf("Warning Event %s %q on the Revision %d times, want once", tc.reason, msg, n)
				}
				found = found || strings.Contains(msg, tc.message)
			}
			if !found || len(said) > 2 {
				t.Errorf("Warning Events %s on the Revision: %v, want one that says %q (and at most one earlier answer)", tc.reason, said, tc.message)
			}
			if tc.user != "" {
				return // the reconcilers' identity cannot be changed under them
			}

			lift()
			waitCondition(t, c, svc, v1.ServiceConditionReady, corev1.ConditionTrue, "", 45*time.Second)
		})
	}
}

// quota returns a refusal: a ResourceQuota of zero for resource in the namespace.
func quota(res corev1.ResourceName) func(t *testing.T, ns string) func() {
	return func(t *testing.T, ns string) func() {
		q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "nothing"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{res: resource.MustParse("0")}}}
		if err := testClient.Create(context.Background(), q); err != nil {
			t.Fatal(err)
		}
		// The quota admission plugin refuses with "exceeded quota" only once the quota
		// controller has computed its usage and the API server's own copy of the
		// quota shows it; before, it refuses with another message ("status unknown
		// for quota"), which would make a second, different failure. A dry-run create
		// of what the quota counts says when it is there.
		eventually(t, 20*time.Second, func() (bool, string) {
			err := testClient.Create(context.Background(), quotaProbe(ns, res), client.DryRunAll)
			return err != nil && strings.Contains(err.Error(), "exceeded quota"), fmt.Sprintf("dry-run create: %v", err)
		})
		return func() {
			if err := testClient.Delete(context.Background(), q); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// quotaProbe is an object the quota on res counts: a Deployment or a Pod.
func quotaProbe(ns string, res corev1.ResourceName) client.Object {
	labels := map[string]string{"app": "quota-probe"}
	podSpec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "ferry.test/probe"}}}
	if res == corev1.ResourcePods {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quota-probe"}, Spec: podSpec}
	}
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "quota-probe"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec}}}
}

// denyDeployments makes a ValidatingAdmissionPolicy deny every Deployment in ns.
func denyDeployments(t *testing.T, ns string) func() {
	ctx := context.Background()
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-deployments-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr(admissionregistrationv1.Fail),
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"},
						Resources: []string{"deployments"}},
				},
			}}},
			Validations: []admissionregistrationv1.Validation{{Expression: "false",
				Message: "no Deployments in this namespace, says the policy"}},
		},
	}
	binding := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{corev1.LabelMetadataName: ns}}},
		},
	}
	for _, o := range []client.Object{policy, binding} {
		if err := testClient.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	// The policy takes effect once the API server has loaded it: probe with dry runs.
	eventually(t, 30*time.Second, func() (bool, string) {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "probe"},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}}}
		err := testClient.Create(ctx, d, client.DryRunAll)
		return err != nil && strings.Contains(err.Error(), "says the policy"), fmt.Sprintf("dry run: %v", err)
	})
	lift := func() {
		for _, o := range []client.Object{binding, policy} {
			if err := testClient.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(lift)
	return lift
}

// noDeploymentsUser is a user who may do all Ferry does except create Deployments.
func noDeploymentsUser(t *testing.T) string {
	const user = "ferry-test-no-deployments"
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: []rbacv1.PolicyRule{
		{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{"", "serving.knative.dev", "networking.internal.knative.dev", "autoscaling.internal.knative.dev", "events.k8s.io"},
			Resources: []string{"*"}, Verbs: []string{"*"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"update", "patch", "delete"}},
	}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: user},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}}
	for _, o := range []client.Object{role, binding} {
		if err := testClient.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = testClient.Delete(ctx, o) })
	}
	return user
}

// warnings counts the Warning Events with reason about the named object by message,
// each Event counted as often as it was emitted (its series).
func warnings(t *testing.T, ns, name, reason string) map[string]int {
	list := &eventsv1.EventList{}
	if err := testClient.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	said := map[string]int{}
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason && e.Type == corev1.EventTypeWarning {
			said[e.Note]++
			if e.Series != nil {
				said[e.Note] += int(e.Series.Count) - 1
			}
		}
	}
	return said
}
