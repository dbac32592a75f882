package integration

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ferry-serving/ferry/api/duck"
	v1 "github.com/ferry-serving/ferry/api/serving/v1"
	"github.com/ferry-serving/ferry/internal/admission"
	"github.com/ferry-serving/ferry/internal/localcluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAdmissionBackPressure runs `ferry up --admission-in-progress-limit 1` as its own
// process (its own cluster: the shared one's webhooks hold nothing) and checks what a
// user sees: while one Service is on its way to Ready, the next create waits, and is
// admitted with a warning once the first is done; a dry run and a refused create never
// wait. It also checks that the user of ferry up's kubeconfig still goes through the
// webhooks for the kinds the in-process controller writes without them.
func TestAdmissionBackPressure(t *testing.T) {
	addrs := loopbackAddrs(t, 2)
	up := startProcess(t, "ferry up", nil, "up", "--data-dir", t.TempDir(),
		"--gateway-addr", addrs[0], "--gateway-local-addr", addrs[1], "--dashboard-addr", "0", "--admission-in-progress-limit", "1")
	kubeconfig := regexp.MustCompile(`export KUBECONFIG=(\S+)`)
	eventually(t, 2*time.Minute, func() (bool, string) {
		if up.Exited() {
			t.Fatalf("ferry up exited:\n%s", up.Output())
		}
		return kubeconfig.MatchString(up.Output()), "ferry up has not said it is up"
	})
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig.FindStringSubmatch(up.Output())[1])
	if err != nil {
		t.Fatal(err)
	}
	warnings := &warningRecorder{}
	cfg.WarningHandlerWithContext = warnings
	c, err := client.New(cfg, client.Options{Scheme: testScheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	// A Service whose pod never passes its readiness probe stays on its way to Ready.
	stuck := ksvc("default", "never-ready", localcluster.NeverReadyImage)
	if err := c.Create(ctx, stuck); err != nil {
		t.Fatal(err)
	}
	eventually(t, readyTimeout, func() (bool, string) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(stuck), stuck); err != nil {
			return false, err.Error()
		}
		ready := stuck.Status.GetCondition(duck.ConditionReady)
		return stuck.Status.ObservedGeneration == 1 && ready != nil && ready.IsUnknown(), fmt.Sprintf("Ready %+v", ready)
	})

	// Neither a dry run nor a create that validation refuses waits.
	start := time.Now()
	if err := c.Create(ctx, ksvc("default", "dry", "example.com/app"), client.DryRunAll); err != nil {
		t.Fatal(err)
	}
	bad := ksvc("default", "bad", "example.com/app")
	bad.Spec.Template.Spec.NodeSelector = map[string]string{"disk": "ssd"}
	if err := c.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "spec.template.spec.nodeSelector") {
		t.Errorf("a Service with a nodeSelector: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("a dry run and a refused create took %v", took)
	}
	// The controller's own Configurations skip admission (matchConditions); a user's do not.
	badConfig := &v1.Configuration{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "bad"}}
	badConfig.Spec.Template.Spec = bad.Spec.Template.Spec
	if err := c.Create(ctx, badConfig); err == nil || !strings.Contains(err.Error(), "spec.template.spec.nodeSelector") {
		t.Errorf("a user's Configuration with a nodeSelector: %v", err)
	}
	if w := warnings.held(); len(w) > 0 {
		t.Errorf("held: %q", w)
	}

	// The next create waits while the first Service is in progress ...
	created := make(chan error, 1)
	start = time.Now()
	go func() { created <- c.Create(ctx, ksvc("default", "next", "example.com/app")) }()
	select {
	case err := <-created:
		t.Fatalf("the create returned after %v (%v) while a Service was in progress, limit 1", time.Since(start), err)
	case <-time.After(2 * time.Second):
	}
	// ... and goes through as soon as that one is done (here: deleted), with a
	// warning that says why it waited.
	if err := c.Delete(ctx, stuck); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-created:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(admission.MaxHold - 2*time.Second):
		t.Fatal("the create was not let through when the Service in progress was deleted")
	}
	held := warnings.held()
	if len(held) != 1 || !regexp.MustCompile(`^Ferry held this create for \d+(\.\d)?s: Services on their way to Ready: 1 \(the limit is 1\)$`).MatchString(held[0]) {
		t.Errorf("warnings on the held create: %q", held)
	}
	t.Logf("held %v: %q", time.Since(start).Round(time.Millisecond), held)
}

// warningRecorder keeps the warnings a client was answered with.
type warningRecorder struct {
	mu   sync.Mutex
	text []string
}

func (w *warningRecorder) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.text = append(w.text, text)
}

// held returns the back-pressure warnings among them.
func (w *warningRecorder) held() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var held []string
	for _, t := range w.text {
		if strings.HasPrefix(t, admission.HeldWarningPrefix) {
			held = append(held, t)
		}
	}
	return held
}
