package programs

import (
	"fmt"
	"strings"
	"time"
)

// startup is when a pod passed each step of its start on this node, so that ferry up's
// log says where a cold start's time went: one line per pod, once it is first ready.
// The steps before (the request held, the Deployment scaled, the pod created and
// scheduled) are the control plane's, and the pod's watchers see them.
type startup struct {
	reached time.Time // the pod reached the node (CreatePod)
	steps   []string  // each step after, with its time since reached
	logged  bool
}

// step records that the pod has just passed what, until it is first ready; r.mu held.
func (s *startup) step(what string) {
	if s.logged {
		return
	}
	s.steps = append(s.steps, fmt.Sprintf("%s %s", what, ms(time.Since(s.reached))))
}

// line is the log line of a pod that has just become ready, "" after the first; r.mu
// held.
func (s *startup) line(pod string) string {
	if s.logged {
		return ""
	}
	s.logged = true
	return fmt.Sprintf("programs: pod %s ready %s after it reached the node: %s\n", pod, ms(time.Since(s.reached)), strings.Join(s.steps, ", "))
}

func ms(d time.Duration) string { return d.Round(100 * time.Microsecond).String() }
