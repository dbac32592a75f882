package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"
)

// Fault is one kind of breakage --faults may ask for.
type Fault string

const (
	// FaultController kills the leading controller (a process on ferry up, its pod on
	// a cluster); a new one must pick up where it was.
	FaultController Fault = "controller"
	// FaultGateway restarts one gateway replica while the others serve.
	FaultGateway Fault = "gateway"
	// FaultProgram rolls a Service out to a program that crashes at start: traffic
	// must stay on the Revision before it, and the Service must say why it is not Ready.
	FaultProgram Fault = "program"
	// FaultAPIServer slows every request between the controller and the API server.
	FaultAPIServer Fault = "apiserver"
)

// AllFaults is what --faults all asks for, in the order the soak strikes them.
var AllFaults = []Fault{FaultController, FaultGateway, FaultProgram, FaultAPIServer}

// ParseFaults reads --faults: none, all, or a comma-separated list.
func ParseFaults(s string) ([]Fault, error) {
	switch s {
	case "", "none":
		return nil, nil
	case "all":
		return slices.Clone(AllFaults), nil
	}
	var out []Fault
	for _, f := range strings.Split(s, ",") {
		f := Fault(strings.TrimSpace(f))
		if !slices.Contains(AllFaults, f) {
			return nil, fmt.Errorf("--faults: unknown fault %q (want none, all, or some of controller, gateway, program, apiserver)", f)
		}
		if !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out, nil
}

// ErrUnsupported is what a Breaker answers for a fault it cannot strike where Ferry
// runs; the report says so instead of passing silently.
var ErrUnsupported = errors.New("not possible here")

// Breaker strikes the faults that depend on where Ferry runs. Each returns what it did,
// for the report, once the fault is over (a slowed API server: after d).
type Breaker interface {
	KillController(ctx context.Context) (string, error)
	RestartGateway(ctx context.Context) (string, error)
	SlowAPIServer(ctx context.Context, d time.Duration) (string, error)
}

// Gateways are where the load goes: Pick returns the base URL (http://host:port) of a
// gateway replica taking requests now, on the external or the cluster-local listener.
type Gateways interface {
	Pick(local bool) string
}

// StaticGateways is one external and one cluster-local URL (a cluster's load
// balancer in front of its gateway replicas).
type StaticGateways struct{ External, Local string }

func (g StaticGateways) Pick(local bool) string {
	if local {
		return g.Local
	}
	return g.External
}

// Options are a soak run's.
type Options struct {
	Config    *rest.Config
	Namespace string // created if missing
	RunID     string // labels what the run creates
	Duration  time.Duration
	// Cycle is how often the soak changes something; faults come every cycle too,
	// between the changes, in AllFaults' order.
	Cycle  time.Duration
	Faults []Fault
	// ReadyBound is how long an object may stay not Ready after its latest change.
	ReadyBound time.Duration
	// Rate is the requests per second the load sends, over all targets.
	Rate     float64
	Gateways Gateways
	Breaker  Breaker
	// Image is the Services' container image; Args its arguments. Programs says pods
	// really run it (a crashing program is possible), rather than being simulated.
	Image    string
	Args     []string
	Programs bool
	// FrontendImage, if set, adds a Service of it that calls the private one by its
	// cluster name for every answer, saying "frontend REVISION asked URL (STATUS in
	// TIME): BODY" as Ferry's examples/frontend does.
	FrontendImage string
	// ChangeAutoscaler allows toggling config-autoscaler's stable-window (restored at
	// the end): it touches every Service of the cluster, so only on the soak's own.
	ChangeAutoscaler bool
	// SystemNamespace holds Knative's ConfigMaps.
	SystemNamespace string
	// Processes lists the processes whose memory is followed (nil: none can be seen).
	Processes func() []Process
	Progress  io.Writer
}

// Defaults of the flags.
const (
	DefaultDuration   = 10 * time.Minute
	DefaultCycle      = time.Minute
	DefaultReadyBound = time.Minute
	DefaultRate       = 200
	// grace is how far either side of a request the traffic log is read: the gateway
	// serves a split shortly before the Route reports it, and the old one until the
	// new one is programmed.
	grace = 10 * time.Second
)

func (o *Options) check() error {
	switch {
	case o.Config == nil || o.Gateways == nil || o.Namespace == "":
		return errors.New("soak: Config, Gateways and Namespace are required")
	case o.Duration < 30*time.Second:
		return fmt.Errorf("--duration %s: at least 30s", o.Duration)
	case o.Cycle < 10*time.Second:
		return fmt.Errorf("--cycle %s: at least 10s (a change needs time to take effect)", o.Cycle)
	case o.ReadyBound < 10*time.Second:
		return fmt.Errorf("--ready-bound %s: at least 10s", o.ReadyBound)
	case o.Rate <= 0 || o.Rate > 5000:
		return fmt.Errorf("--rate %v: between 0 and 5000 requests per second", o.Rate)
	}
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	return nil
}
