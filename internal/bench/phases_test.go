package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestPhases checks the demo's timing line: host phases, the guest's
// tagged lines (parsed back from what phaseLine prints), lines that are
// not phases, and the sum the host subtracts from the VM's run.
func TestPhases(t *testing.T) {
	var p phases
	p.add("host", 600*time.Millisecond)
	var guest bytes.Buffer
	phaseLine(&guest, "boot", 5500*time.Millisecond)
	phaseLine(&guest, "10-cells", 21500*time.Millisecond)
	for _, l := range strings.Split(strings.TrimSpace(guest.String()), "\n") {
		rest, ok := tagged("[   3.2] noise "+l, tagPhase)
		if !ok || !p.guestLine(rest) {
			t.Fatalf("%q: not read back as a phase", l)
		}
	}
	for _, bad := range []string{"", "boot", "x boot", "5.5"} {
		if p.guestLine(bad) {
			t.Errorf("%q read as a phase", bad)
		}
	}
	if got, want := p.String(), "host 0.6 s, boot 5.5 s, 10-cells 21.5 s"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if s := p.sum(); s < 27.59 || s > 27.61 {
		t.Errorf("sum() = %v, want 27.6", s)
	}
}
