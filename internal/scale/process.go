package scale

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
)

// ProcessUsage is what this process used during a run. When the control plane runs
// in-process (`ferry scale` without --kubeconfig) that is Ferry *and* etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok together: Go
// cannot attribute CPU to a subset of goroutines (a CPU profile can, by function).
type ProcessUsage struct {
	// CPUSeconds is user+system CPU time during the run (/proc/self/stat).
	CPUSeconds float64 `json:"cpuSeconds"`
	// WallSeconds is the run's wall time, for CPU cores = CPUSeconds / WallSeconds.
	WallSeconds float64 `json:"wallSeconds"`
	// PeakRSSBytes is the process's peak resident set size since it started (VmHWM),
	// RSSBytes the resident set at the end (VmRSS).
	PeakRSSBytes int64 `json:"peakRSSBytes"`
	RSSBytes     int64 `json:"rssBytes"`
	// HeapInuse before and after the run, and the Go heap's peak in between cannot
	// be known without sampling; HeapSysAfter bounds it.
	HeapInuseBefore uint64 `json:"heapInuseBeforeBytes"`
	HeapInuseAfter  uint64 `json:"heapInuseAfterBytes"`
	HeapSysAfter    uint64 `json:"heapSysAfterBytes"`
	GoroutinesAfter int    `json:"goroutinesAfter"`
}

// processSnapshot is one reading of the process's counters.
type processSnapshot struct {
	cpuSeconds float64
	heapInuse  uint64
	heapSys    uint64
	ok         bool
}

func takeProcessSnapshot() processSnapshot {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	cpu, err := readProcCPU("/proc/self/stat")
	return processSnapshot{cpuSeconds: cpu, heapInuse: ms.HeapInuse, heapSys: ms.HeapSys, ok: err == nil}
}

// usageBetween is the usage from before to now.
func usageBetween(before processSnapshot, wallSeconds float64) *ProcessUsage {
	after := takeProcessSnapshot()
	u := &ProcessUsage{WallSeconds: wallSeconds, HeapInuseBefore: before.heapInuse, HeapInuseAfter: after.heapInuse,
		HeapSysAfter: after.heapSys, GoroutinesAfter: runtime.NumGoroutine()}
	if before.ok && after.ok {
		u.CPUSeconds = after.cpuSeconds - before.cpuSeconds
	}
	u.PeakRSSBytes, u.RSSBytes, _ = readProcMemory("/proc/self/status")
	return u
}

// clockTicks is USER_HZ, the unit of /proc's CPU times; 100 on every Linux that Go
// supports.
const clockTicks = 100

// readProcCPU reads utime+stime from a /proc/<pid>/stat file, in seconds.
func readProcCPU(path string) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return parseProcStatCPU(string(b))
}

// parseProcStatCPU parses /proc/<pid>/stat: the command (field 2) is in parentheses
// and may hold spaces, so fields are counted from the last ')'; utime and stime are
// fields 14 and 15.
func parseProcStatCPU(stat string) (float64, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed stat")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state), so field n is f[n-3].
	if len(f) < 13 {
		return 0, fmt.Errorf("malformed stat: %d fields", len(f)+2)
	}
	utime, err1 := strconv.ParseUint(f[11], 10, 64)
	stime, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("malformed stat times")
	}
	return float64(utime+stime) / clockTicks, nil
}

// readProcMemory reads VmHWM and VmRSS from /proc/<pid>/status, in bytes.
func readProcMemory(path string) (hwm, rss int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		fields := strings.Fields(v)
		if len(fields) == 0 {
			continue
		}
		n, err := strconv.ParseInt(fields[0], 10, 64)
		if err != nil {
			continue
		}
		switch k {
		case "VmHWM":
			hwm = n * 1024
		case "VmRSS":
			rss = n * 1024
		}
	}
	return hwm, rss, sc.Err()
}
