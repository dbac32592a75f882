package programs

import (
	"errors"
	"fmt"
	goruntime "runtime"
)

// Isolation is what ferry up asks of the node (--program-isolation).
type Isolation string

const (
	// IsolationAuto runs pods in runc containers where Supported, else as processes.
	IsolationAuto Isolation = "auto"
	// IsolationRunc runs pods in runc containers, or not at all.
	IsolationRunc Isolation = "runc"
	// IsolationNone runs pods as plain processes of the host, even where runc could
	// run them.
	IsolationNone Isolation = "none"
)

// Mode is how the node runs pods on this machine.
type Mode struct {
	// Processes runs each container as a plain process of the host, without
	// isolation (the fallback), rather than in a runc container.
	Processes bool
	// NotIsolated says why pods are not isolated, when Processes.
	NotIsolated error
}

// ChooseMode says how the node runs pods for what was asked: in runc containers where
// Supported allows, else, unless runc was asked for, as processes where the machine can
// run them. An error says the node cannot run at all.
func ChooseMode(isolation Isolation, runcPath string) (Mode, error) {
	switch isolation {
	case IsolationAuto, "":
		err := Supported(runcPath)
		if err == nil {
			return Mode{}, nil
		}
		if perr := ProcessesSupported(); perr != nil {
			return Mode{}, fmt.Errorf("%w; %w", err, perr)
		}
		return Mode{Processes: true, NotIsolated: err}, nil
	case IsolationRunc:
		return Mode{}, Supported(runcPath)
	case IsolationNone:
		if err := ProcessesSupported(); err != nil {
			return Mode{}, err
		}
		return Mode{Processes: true, NotIsolated: errors.New("--program-isolation=none asks for it")}, nil
	}
	return Mode{}, fmt.Errorf("program isolation %q: want auto, runc or none", isolation)
}

// ProcessesSupported says why the node cannot run pods even as plain processes: only
// on Windows.
func ProcessesSupported() error {
	if goruntime.GOOS == "windows" {
		return errors.New("running programs needs Linux or macOS")
	}
	return nil
}

// ProcessesCaveats is what does not hold for a pod run as a plain process, as ferry up
// says it at start-up (docs/programs.md says more).
const ProcessesCaveats = `every pod is at 127.0.0.1 with its own PORT: a program that ignores PORT and
listens on a fixed port is never ready (two pods of it would collide anyway);
volumes are refused (the pod waits with NeedsIsolation), so an init container
cannot hand files to the serving container in an emptyDir; runAsUser, memory and CPU
limits, a read-only root and a private /dev are not applied: the programs run as
ferry up's user and see the host's files and processes; they share the host's
network, so Service ClusterIPs, cluster DNS and the in-cluster API server are not
reachable from them (docs/programs.md).`
