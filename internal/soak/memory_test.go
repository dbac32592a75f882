package soak

import (
	"os"
	"testing"
	"time"
)

// series samples a process every 10 s for minutes: anon its anonymous memory at minute
// m, file the files it maps.
func series(minutes int, anon, file func(m float64) uint64) MemorySeries {
	t0 := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	s := MemorySeries{Name: "p", PID: 1}
	for i := 0; i <= minutes*6; i++ {
		m := float64(i) / 6
		s.Samples = append(s.Samples, MemorySample{At: t0.Add(time.Duration(i) * 10 * time.Second), RSS: anon(m) + file(m), Anon: anon(m)})
	}
	return s
}

func noFiles(float64) uint64 { return 0 }

func TestMemoryTrend(t *testing.T) {
	const mib = 1 << 20
	cases := []struct {
		name           string
		s              MemorySeries
		judged, failed bool
	}{
		{"flat after a warm-up that grew", series(60, func(m float64) uint64 {
			if m < 5 {
				return uint64(100*mib + m*100*mib)
			}
			return 600 * mib
		}, noFiles), true, false},
		{"growing 5 % over the hour", series(60, func(m float64) uint64 { return uint64(500*mib + m*0.4*mib) }, noFiles), true, false},
		{"growing 20 % over the hour", series(60, func(m float64) uint64 { return uint64(500*mib + m*2*mib) }, noFiles), true, true},
		// etcd's database mapped in grows with what the cluster stores: not a leak.
		{"files mapped in growing 40 %", series(60, func(float64) uint64 { return 500 * mib },
			func(m float64) uint64 { return uint64(200*mib + m*5*mib) }), true, false},
		{"too short to judge", series(12, func(m float64) uint64 { return uint64(100*mib + m*100*mib) }, noFiles), false, false},
	}
	for _, c := range cases {
		v := trend(c.s)
		if v.Judged != c.judged || v.Failed != c.failed {
			t.Errorf("%s: judged %v failed %v (%s), want %v %v", c.name, v.Judged, v.Failed, v.Message, c.judged, c.failed)
		}
	}
}

func TestResidentBytesOfThisProcess(t *testing.T) {
	rss, anon, err := residentBytes(os.Getpid())
	if err != nil || anon < 1<<20 || anon > rss {
		t.Fatalf("residentBytes(self) = %d, %d, %v", rss, anon, err)
	}
}

// The soak's own process is sampled with its heap too; another process without.
func TestSampleHeapOfThisProcessOnly(t *testing.T) {
	m := newMemoryLog()
	m.sample(time.Now(), []Process{{Name: "self", PID: os.Getpid()}, {Name: "init", PID: 1}})
	for _, s := range m.snapshot() {
		switch {
		case s.Name == "self" && (len(s.Samples) != 1 || s.Samples[0].Heap == 0 || s.Samples[0].Heap > s.Samples[0].RSS):
			t.Errorf("self: %+v", s.Samples)
		case s.Name == "init" && s.Samples[0].Heap != 0:
			t.Errorf("init has a heap sample: %+v", s.Samples)
		}
	}
}
