package bench

import "testing"

func TestParseSystemCPU(t *testing.T) {
	for _, tc := range []struct {
		line        string
		busy, total uint64
		bad         bool
	}{
		{line: "cpu  100 2 30 500 7 1 4 0 50 0\n", busy: 137, total: 644},
		{line: "cpu 1 0 1 10 0 0 0 3", busy: 5, total: 15},
		{line: "cpu 1 2 3 4", busy: 6, total: 10},
		{line: "cpu0 1 2 3 4 5 6 7 8", bad: true},
		{line: "cpu 1 2 x 4 5", bad: true},
		{line: "cpu 1 2", bad: true},
		{line: "", bad: true},
	} {
		busy, total, err := parseSystemCPU(tc.line)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: no error", tc.line)
			}
			continue
		}
		if err != nil || busy != tc.busy || total != tc.total {
			t.Errorf("%q: busy %d total %d err %v, want %d %d", tc.line, busy, total, err, tc.busy, tc.total)
		}
	}
}

func TestVMCPUFill(t *testing.T) {
	var r Result
	r.fill(measurement{elapsed: 1e9, ops: 100}, counters{"client.rpcs": 100,
		"vm.busy_ns": 150_000_000, "vm.total_ns": 200_000_000})
	if r.VMCPUus != 1500 || r.VMBusyPct != 75 {
		t.Fatalf("VMCPUus %v VMBusyPct %v, want 1500 and 75", r.VMCPUus, r.VMBusyPct)
	}
	r.fill(measurement{elapsed: 1e9, ops: 100}, counters{"client.rpcs": 100})
	if r.VMCPUus != NA || r.VMBusyPct != NA {
		t.Fatalf("without /proc/stat: %v %v, want NA", r.VMCPUus, r.VMBusyPct)
	}
}
