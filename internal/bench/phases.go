package bench

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// tagPhase marks a line of the guest saying how long one of its phases
// took: "RPCRDMA-PHASE <seconds> <name>".
const tagPhase = "RPCRDMA-PHASE "

// phases records how long each phase of a run took, on the host and in
// the guest, in the order they ran, for the demo's timing line.
type phases struct {
	mu    sync.Mutex
	names []string
	secs  []float64
}

// add records a phase of d.
func (p *phases) add(name string, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.names = append(p.names, name)
	p.secs = append(p.secs, d.Seconds())
}

// guestLine records a phase the guest reported in a tagged line (the part
// after tagPhase), and reports whether it was one.
func (p *phases) guestLine(rest string) bool {
	secs, name, ok := strings.Cut(strings.TrimSpace(rest), " ")
	s, err := strconv.ParseFloat(secs, 64)
	if !ok || err != nil {
		return false
	}
	p.add(name, time.Duration(s*float64(time.Second)))
	return true
}

// String lists the phases: "host 0.4 s, build 3.5 s, ...".
func (p *phases) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	parts := make([]string, len(p.names))
	for i, n := range p.names {
		parts[i] = fmt.Sprintf("%s %.1f s", n, p.secs[i])
	}
	return strings.Join(parts, ", ")
}

// sum is the phases' total in seconds.
func (p *phases) sum() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	t := 0.0
	for _, s := range p.secs {
		t += s
	}
	return t
}

// phaseLine prints the guest's tagged line for a phase of d.
func phaseLine(w io.Writer, name string, d time.Duration) {
	fmt.Fprintf(w, "%s%.2f %s\n", tagPhase, d.Seconds(), name)
}

// guestUptime is how long the guest's kernel has been up (/proc/uptime):
// the boot, when the guest side starts.
func guestUptime() (time.Duration, bool) {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		return 0, false
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return 0, false
	}
	s, err := strconv.ParseFloat(f[0], 64)
	return time.Duration(s * float64(time.Second)), err == nil
}
