package integration

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/ferry-serving/ferry/internal/config"
	"github.com/ferry-serving/ferry/internal/scale"
)

// haLease is the lease duration of the test's controllers: shorter than the 15 s
// default so that a failover costs CI less, long enough that a leader on the loaded
// shared machine renews within the renew deadline (two thirds of it, each request
// timing out at half that). At 4 s, Lease requests that took over 1.3 s made the new
// leader lose its lease seconds after taking it.
const haLease = 10 * time.Second

// haServicesEnv sets how many Services the failover test creates (default 200; the
// long form is 500).
const haServicesEnv = "FERRY_HA_N"

// TestHAControllerFailover runs Ferry as a user runs it for high availability: two
// `ferry controller --leader-elect` replicas and two gateways, as separate processes.
// Half-way through a burst of Services the leader is killed with SIGKILL, as a node
// failure or an OOM kill does. The other replica must take the lease within the
// protocol's bound, every Service must become Ready with exactly one Revision, no
// Ready Service may fall back to not Ready, and both gateways must route every host.
// (TestInstallAsPods deletes the leader where it is a pod of config/'s install.)
func TestHAControllerFailover(t *testing.T) {
	n := 200
	if s := os.Getenv(haServicesEnv); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 2 {
			t.Fatalf("%s=%q: want a number of Services, at least 2", haServicesEnv, s)
		}
	}
	ctx := context.Background()
	ensureNamespace(t, config.SystemNamespace) // where the Lease lives
	ns := testNamespace(t)
	dumpOnFailure(t, testClient, ns)

	// Each controller takes the gateways' load reports, as behind the headless Service
	// ferry-autoscaler; without them a Revision scaled to zero would never wake.
	stats := map[string][]string{"controller-a": {"--stats-addr", freeLoopbackAddr(t)}, "controller-b": {"--stats-addr", freeLoopbackAddr(t)}}
	autoscaler := stats["controller-a"][1] + "," + stats["controller-b"][1]
	// The gateway replicas count each other by their Leases in the test's namespace.
	gateways := []string{startGatewayProcess(t, "gateway-a", autoscaler, ns), startGatewayProcess(t, "gateway-b", autoscaler, ns)}
	controllers := startReplicas(t, []string{"controller-a", "controller-b"}, stats, "controller",
		"--leader-elect", "--leader-election-namespace", config.SystemNamespace,
		"--leader-election-lease-duration", haLease.String(),
		"--metrics-addr", "0", "--health-addr", "0", "--kubeconfig", testCluster.KubeconfigPath())
	leader := controllers.waitLeader(t)
	t.Logf("%s leads", leader)

	// Every Service of the run is followed from before its creation, to see each
	// Ready transition and to kill the leader half-way through the creates.
	runID := fmt.Sprintf("ha-%d", n)
	obs := newHAObserver(runID, n/2, gateways)
	watchCtx, stopWatching := context.WithCancel(ctx)
	defer stopWatching()
	obs.watch(t, watchCtx, ns)

	type runResult struct {
		res *scale.Result
		err error
	}
	done := make(chan runResult, 1)
	go func() {
		res, err := scale.Run(ctx, scale.Options{
			Config: testConfig, Namespace: ns, N: n, Concurrency: 50, RunID: runID,
			// A Service created just before the kill waits out the lease; the shared
			// machine is slow: the deadline is generous, it only bounds a stuck run.
			TimeoutPerService: 3*time.Minute + time.Duration(n)*time.Second,
			GatewayURL:        "http://" + gateways[0], Warmup: true, Progress: testLogWriter{t},
		})
		done <- runResult{res, err}
	}()

	var takeover failover
	select {
	case <-obs.half:
		created := obs.created()
		takeover = controllers.killLeader(t, leader)
		takeover.created = created
	case r := <-done:
		t.Fatalf("the run ended before half its Services were created: %v", r.err)
	}
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	var summary strings.Builder
	scale.WriteSummary(&summary, r.res, 5)
	t.Log(summary.String())
	t.Logf("failover: %s killed %v after the run started, with %d of %d Services created; "+
		"the Lease named %s %v after the kill (acquireTime %v), its workers started %v after the kill; "+
		"the run took %v",
		leader, takeover.killedAt.Sub(r.res.Started).Round(time.Millisecond), takeover.created, n,
		takeover.newLeader, takeover.leaseTaken.Round(time.Millisecond), takeover.acquired.Round(time.Millisecond),
		takeover.workers.Round(time.Millisecond), r.res.Total.Round(time.Millisecond))

	// The follower counts the lease from when it sees the leader's last renewal, at
	// most one retry after it was made, and notices the expiry at most one retry after
	// the lease ends; client-go jitters each retry up to 2.2 times the retry period.
	// Beyond that only the Lease's GET and PUT count, each of which client-go gives up
	// on after half the renew deadline.
	retry, renew := haLease*2/15, haLease*2/3
	bound := haLease + 2*time.Duration(2.2*float64(retry)) + renew
	if takeover.leaseTaken > bound {
		t.Errorf("the lease was taken %v after the kill, more than the protocol's bound %v", takeover.leaseTaken, bound)
	}

	if got := r.res.ReadyCount(); got != n {
		t.Errorf("%d/%d Services Ready", got, n)
	}
	if stuck := r.res.Stuck(); len(stuck) != 0 {
		t.Errorf("%d Services stuck, e.g.\n%s", len(stuck), stuck[0].Explanation)
	}
	if got := len(r.res.RoutedTimes()); got != n {
		t.Errorf("%d/%d Services routed through %s", got, n, gateways[0])
	}
	stopWatching()
	for _, reg := range obs.regressions() {
		t.Errorf("Ready regressed without a spec change: %s", reg)
	}
	added, deleted := obs.revisionsAdded()
	checkOneRevisionPerGeneration(t, ns, runID, n, added, deleted)
	probed, notRouted := obs.probedAtReady()
	if probed != n {
		t.Errorf("%d/%d Services seen turning Ready and requested through both gateways at once", probed, n)
	}
	for i, f := range notRouted {
		if i == 5 {
			t.Errorf("... and %d more", len(notRouted)-5)
			break
		}
		t.Errorf("not routed right after Ready: %s", f)
	}
	t.Logf("%d Services requested through each of %v as they turned Ready: %d requests not routed", probed, gateways, len(notRouted))
	checkEveryGatewayRoutes(t, ns, runID, gateways)
	// The race the kill may not have produced: a late write of the old leader. The
	// replicas are still restarted when they exit by themselves, as the kubelet
	// would: once, with the restarts stopped before this check, the one replica left
	// exited on a lost lease and the stale status stayed, with no controller to put
	// it right (the Revision and Configuration were repaired, the Route was not).
	checkStaleStatusRepaired(t, ns, r.res.Samples[0].Name, controllers.leader)
	t.Logf("replicas restarted after exiting by themselves: %v", controllers.stop())
}

// ensureNamespace creates a cluster-wide namespace if it is missing; it is left in
// place, as other tests share it.
func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	err := testClient.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// acquiredLease is what client-go's leader election logs when the replica becomes
// the leader; only the leader logs it. The Lease's holderIdentity is the hostname and
// a random UUID, the same hostname for every process here, so the processes are told
// apart by what they print.
const acquiredLease = "successfully acquired lease"

// replicas are the controller replicas of a Deployment, each its own process. One
// that exits by itself is started again, as the kubelet restarts a container: a
// replica exits when it cannot renew its lease in time, which an overloaded API
// server causes. The one the test kills stays down, as on a lost node.
type replicas struct {
	t    *testing.T
	args []string
	// own are each replica's own arguments, after args.
	own map[string][]string

	mu       sync.Mutex
	procs    map[string]*process
	killed   map[string]bool
	restarts []string

	done, stopped chan struct{}
}

func startReplicas(t *testing.T, names []string, own map[string][]string, args ...string) *replicas {
	r := &replicas{t: t, args: args, own: own, procs: map[string]*process{}, killed: map[string]bool{},
		done: make(chan struct{}), stopped: make(chan struct{})}
	for _, name := range names {
		r.procs[name] = startProcess(t, name, nil, r.argsOf(name)...)
	}
	go r.supervise()
	t.Cleanup(func() { r.stop() })
	return r
}

func (r *replicas) argsOf(name string) []string {
	return append(append([]string(nil), r.args...), r.own[name]...)
}

func (r *replicas) supervise() {
	defer close(r.stopped)
	for {
		select {
		case <-r.done:
			return
		case <-time.After(200 * time.Millisecond):
		}
		r.mu.Lock()
		for name, p := range r.procs {
			if r.killed[name] || !p.Exited() {
				continue
			}
			out := strings.TrimSpace(p.Output())
			r.restarts = append(r.restarts, fmt.Sprintf("%s at %s (%s)", name, time.Now().Format("15:04:05"), out[strings.LastIndex(out, "\n")+1:]))
			r.t.Logf("%s exited by itself; starting it again. It printed:\n%s", name, out)
			r.procs[name] = startProcess(r.t, name, nil, r.argsOf(name)...)
		}
		r.mu.Unlock()
	}
}

// stop ends the supervision (the processes run until the test ends) and returns the
// restarts.
func (r *replicas) stop() []string {
	select {
	case <-r.done:
	default:
		close(r.done)
	}
	<-r.stopped
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.restarts...)
}

// leader is the live replica that has logged taking the lease, "" if none has.
func (r *replicas) leader() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, p := range r.procs {
		if !r.killed[name] && !p.Exited() && strings.Contains(strings.ToLower(p.Output()), acquiredLease) {
			return name
		}
	}
	return ""
}

// waitLeader waits until a replica says it took the lease and the Lease names a
// holder.
func (r *replicas) waitLeader(t *testing.T) string {
	t.Helper()
	var leader string
	eventually(t, 2*time.Minute, func() (bool, string) {
		if leader = r.leader(); leader == "" {
			return false, "no controller says it took the lease"
		}
		if leaseHolder(t) == "" {
			return false, "the Lease names no holder"
		}
		return true, ""
	})
	return leader
}

// leaseHolder reads the controllers' Lease: its holder's identity, "" if none.
func leaseHolder(t *testing.T) string {
	l := readLease(t)
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

func readLease(t *testing.T) *coordinationv1.Lease {
	t.Helper()
	l := &coordinationv1.Lease{}
	if !get(t, testClient, config.SystemNamespace, "ferry-controller", l) {
		return nil
	}
	return l
}

// failover is what killLeader measured.
type failover struct {
	killedAt  time.Time
	created   int
	newLeader string
	// leaseTaken is from the kill until the test saw the Lease name a new holder;
	// acquired until the acquireTime the new holder wrote in it.
	leaseTaken, acquired time.Duration
	// workers is from the kill until the new leader's controllers started working.
	workers time.Duration
}

// killLeader kills the leader with SIGKILL, so that it neither releases the lease nor
// finishes its writes, and waits until another replica has taken the lease and
// started its controllers.
func (r *replicas) killLeader(t *testing.T, name string) failover {
	t.Helper()
	r.mu.Lock()
	leader := r.procs[name]
	r.killed[name] = true
	r.mu.Unlock()
	if leader.Exited() {
		t.Fatalf("%s exited before it was killed:\n%s", name, leader.Output())
	}
	old := leaseHolder(t)
	leader.Kill()
	f := failover{killedAt: time.Now()}
	t.Logf("killed %s (lease holder %s)", name, old)

	deadline := f.killedAt.Add(2 * time.Minute)
	for f.leaseTaken == 0 || f.workers == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("no takeover within 2m of the kill: the Lease names %q", leaseHolder(t))
		}
		if l := readLease(t); f.leaseTaken == 0 && l != nil && l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != old {
			f.leaseTaken = time.Since(f.killedAt)
			if l.Spec.AcquireTime != nil {
				f.acquired = l.Spec.AcquireTime.Sub(f.killedAt)
			}
			t.Logf("the Lease names %s %v after the kill", *l.Spec.HolderIdentity, f.leaseTaken)
		}
		// controller-runtime starts a replica's controllers only once it leads.
		if f.workers == 0 {
			if f.newLeader = r.leader(); f.newLeader != "" && strings.Contains(r.output(f.newLeader), "Starting workers") {
				f.workers = time.Since(f.killedAt)
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	return f
}

func (r *replicas) output(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.procs[name].Output()
}
