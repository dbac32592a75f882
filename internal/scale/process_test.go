package scale

import "testing"

func TestParseProcStat(t *testing.T) {
	// The command may hold spaces and parentheses.
	stat := "4242 (ferry (scale) x) S 1 4242 4242 0 -1 4194560 9000 0 0 0 1234 567 0 0 20 0 40 0 100 2000000 50000 18446744073709551615"
	cpu, err := parseProcStatCPU(stat)
	if err != nil {
		t.Fatal(err)
	}
	if cpu != 18.01 {
		t.Errorf("cpu = %v, want 18.01 (1234+567 ticks)", cpu)
	}
	if _, err := parseProcStatCPU("garbage"); err == nil {
		t.Error("no error for garbage")
	}
	if cpu, err := readProcCPU("/proc/self/stat"); err == nil && cpu < 0 {
		t.Errorf("own CPU %v", cpu)
	}
}
