package soak

import (
	"fmt"
	"sort"
	"sync"
	"time"
)

// podBound is the most pods a Revision may ask for in a soak. The load asks for about
// one: --rate spread over the fleet's ten or so Services, answered in milliseconds,
// is a concurrency far under Knative's 70 a pod (its default target of 100 at 70 %
// utilization), unless answers took seconds. Panic mode and a rollout's overlap may
// ask for a few more; ten times that is a decision gone wrong (the first hour saw a
// Revision ask for 238, filling its node).
const podBound = 10

// PodPeak is the most pods one Revision asked for, and when.
type PodPeak struct {
	Revision string    `json:"revision"`
	Pods     int32     `json:"pods"`
	At       time.Time `json:"at"`
}

// podLog keeps each Revision's peak desired pods, from its status (desiredReplicas,
// which the autoscaler's decision sets).
type podLog struct {
	mu   sync.Mutex
	peak map[string]PodPeak
}

func newPodLog() *podLog { return &podLog{peak: map[string]PodPeak{}} }

func (l *podLog) observe(at time.Time, revision string, desired int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.peak[revision]; !ok || desired > p.Pods {
		l.peak[revision] = PodPeak{Revision: revision, Pods: desired, At: at}
	}
}

// top returns the n highest peaks, highest first.
func (l *podLog) top(n int) []PodPeak {
	l.mu.Lock()
	peaks := make([]PodPeak, 0, len(l.peak))
	for _, p := range l.peak {
		peaks = append(peaks, p)
	}
	l.mu.Unlock()
	sort.Slice(peaks, func(i, j int) bool {
		if peaks[i].Pods != peaks[j].Pods {
			return peaks[i].Pods > peaks[j].Pods
		}
		return peaks[i].Revision < peaks[j].Revision
	})
	return peaks[:min(n, len(peaks))]
}

func (p PodPeak) String() string {
	return fmt.Sprintf("%s asked for %d pods at %s", p.Revision, p.Pods, p.At.Format("15:04:05"))
}
