package bench

import (
	"crypto/sha256"
	"testing"
	"time"
)

// TestWithProcess: the process counters grow with the work done between
// two snapshots: heap allocations by at least those made, CPU time and
// context switches (the process sleeps) at all.
func TestWithProcess(t *testing.T) {
	before := withProcess(map[string]uint64{"rpcs": 1})
	var keep [][]byte
	sum := sha256.Sum256(nil)
	for i := range 20_000 {
		keep = append(keep, make([]byte, 64+i%7))
		sum = sha256.Sum256(sum[:])
	}
	for range 20 {
		time.Sleep(time.Millisecond)
	}
	after := withProcess(map[string]uint64{})
	if before["rpcs"] != 1 {
		t.Errorf("the client's own counters were not kept: %v", before)
	}
	if after["mallocs"]-before["mallocs"] < uint64(len(keep)) {
		t.Errorf("mallocs grew by %d over %d allocations", after["mallocs"]-before["mallocs"], len(keep))
	}
	if after["ctxsw"] <= before["ctxsw"] {
		t.Errorf("ctxsw did not grow over 20 sleeps: %d then %d", before["ctxsw"], after["ctxsw"])
	}
	if after["cpu_ns"] <= before["cpu_ns"] {
		t.Errorf("cpu_ns did not grow: %d then %d (sum %x)", before["cpu_ns"], after["cpu_ns"], sum[:2])
	}
}
