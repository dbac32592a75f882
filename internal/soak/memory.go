package soak

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"sync"
	"time"
)

// Process is one process whose memory the soak follows, as the caller sees it now:
// a restarted process has a new PID and starts a new series.
type Process struct {
	Name string
	PID  int
}

// Memory trend bounds: a process's first warmUp is not judged (caches fill, the
// fleet is created), and a series shorter than warmUp+2×memoryWindow is too short to
// judge; past it, the mean of its last memoryWindow may be at most maxGrowth above
// the mean of the memoryWindow after its warm-up.
const (
	warmUp       = 5 * time.Minute
	memoryWindow = 5 * time.Minute
	maxGrowth    = 0.10
)

// MemorySeries is one process incarnation's resident memory over time.
type MemorySeries struct {
	Name    string         `json:"name"`
	PID     int            `json:"pid"`
	Samples []MemorySample `json:"samples"`
}

// MemorySample is a process's resident set at a moment.
type MemorySample struct {
	At  time.Time `json:"at"`
	RSS uint64    `json:"rss_bytes"`
	// Anon is the anonymous part of RSS (heap, stacks): what a leak grows, and what
	// is judged. The rest is files mapped in, above all the embedded etcd's database,
	// which grows with what the cluster stores (events live an hour) and which the
	// kernel can reclaim.
	Anon uint64 `json:"anon_bytes"`
	// Heap is the bytes of heap objects, live or not yet swept, for the soak's own
	// process only: resident memory is the heap's high-water mark, so a rise in RSS
	// with a flat heap is a peak, not a leak.
	Heap uint64 `json:"heap_bytes,omitempty"`
}

// MemoryVerdict is the judgement of one series.
type MemoryVerdict struct {
	Series  string  `json:"series"`
	Judged  bool    `json:"judged"`
	Growth  float64 `json:"growth"` // last window's mean ÷ first window's mean − 1
	Failed  bool    `json:"failed"`
	Message string  `json:"message"`
}

// memoryLog samples processes' resident memory.
type memoryLog struct {
	mu     sync.Mutex
	series []*MemorySeries
	byPID  map[int]*MemorySeries
}

func newMemoryLog() *memoryLog { return &memoryLog{byPID: map[int]*MemorySeries{}} }

// sample reads each process's VmRSS now; a process that cannot be read is skipped
// (it is being restarted).
func (m *memoryLog) sample(at time.Time, procs []Process) {
	for _, p := range procs {
		rss, anon, err := residentBytes(p.PID)
		if err != nil {
			continue
		}
		m.mu.Lock()
		s := m.byPID[p.PID]
		if s == nil || s.Name != p.Name {
			s = &MemorySeries{Name: p.Name, PID: p.PID}
			m.byPID[p.PID] = s
			m.series = append(m.series, s)
		}
		sample := MemorySample{At: at, RSS: rss, Anon: anon}
		if p.PID == os.Getpid() {
			sample.Heap = heapObjectBytes()
		}
		s.Samples = append(s.Samples, sample)
		m.mu.Unlock()
	}
}

func (m *memoryLog) snapshot() []MemorySeries {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]MemorySeries, len(m.series))
	for i, s := range m.series {
		out[i] = MemorySeries{Name: s.Name, PID: s.PID, Samples: append([]MemorySample(nil), s.Samples...)}
	}
	return out
}

// trend judges one series: flat when its last window's mean of anonymous resident
// memory is within maxGrowth of the window after its warm-up.
func trend(s MemorySeries) MemoryVerdict {
	v := MemoryVerdict{Series: fmt.Sprintf("%s (pid %d)", s.Name, s.PID)}
	if len(s.Samples) < 2 {
		v.Message = "too few samples to judge"
		return v
	}
	first, last := s.Samples[0].At, s.Samples[len(s.Samples)-1].At
	if last.Sub(first) < warmUp+2*memoryWindow {
		v.Message = fmt.Sprintf("lived %s: under %s, not judged", last.Sub(first).Round(time.Second), warmUp+2*memoryWindow)
		return v
	}
	windows := func(value func(MemorySample) uint64) (early, late float64) {
		return mean(s.Samples, first.Add(warmUp), first.Add(warmUp+memoryWindow), value),
			mean(s.Samples, last.Add(-memoryWindow), last.Add(time.Nanosecond), value)
	}
	early, late := windows(func(m MemorySample) uint64 { return m.Anon })
	v.Judged = true
	v.Growth = late/early - 1
	v.Failed = v.Growth > maxGrowth
	v.Message = fmt.Sprintf("anonymous %.0f MiB after warm-up, %.0f MiB at the end: %+.1f %%", early/(1<<20), late/(1<<20), 100*v.Growth)
	if early, late := windows(func(m MemorySample) uint64 { return m.RSS }); early > 0 {
		v.Message += fmt.Sprintf("; all resident %.0f → %.0f MiB (%+.1f %%)", early/(1<<20), late/(1<<20), 100*(late/early-1))
	}
	if early, late := windows(func(m MemorySample) uint64 { return m.Heap }); early > 0 {
		v.Message += fmt.Sprintf("; heap objects %.0f → %.0f MiB (%+.1f %%)", early/(1<<20), late/(1<<20), 100*(late/early-1))
	}
	return v
}

func mean(samples []MemorySample, from, to time.Time, value func(MemorySample) uint64) float64 {
	var sum float64
	n := 0
	for _, s := range samples {
		if !s.At.Before(from) && s.At.Before(to) {
			sum += float64(value(s))
			n++
		}
	}
	if n == 0 {
		return 0
	}
	return sum / float64(n)
}

// heapObjectBytes is this process's heap objects' bytes, as of its last GC's sweep.
func heapObjectBytes() uint64 {
	m := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(m)
	if m[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return m[0].Value.Uint64()
}

// residentBytes is a process's VmRSS and RssAnon from /proc.
func residentBytes(pid int) (rss, anon uint64, err error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := bytes.Fields(sc.Bytes())
		if len(f) < 2 {
			continue
		}
		var into *uint64
		switch string(f[0]) {
		case "VmRSS:":
			into = &rss
		case "RssAnon:":
			into = &anon
		default:
			continue
		}
		kb, err := strconv.ParseUint(string(f[1]), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("pid %d: %s: %w", pid, f[0], err)
		}
		*into = kb << 10
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("pid %d: no VmRSS and RssAnon", pid)
	}
	return rss, anon, nil
}
