package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
)

// Lines the guest prints for the host to pick out of the console.
const (
	tagProgress = "RPCRDMA-PROGRESS " // done total label
	tagDemo     = "RPCRDMA-DEMO "     // a line of the demo's report
	tagMatrix   = "RPCRDMA-MATRIX "   // one matrix row as JSON
	tagResult   = "RPCRDMA-RESULT "   // one bench result as JSON
)

// GuestOptions are those of the guest program (cmd/rpcrdma-bench-guest),
// which the host side runs in the VM.
type GuestOptions struct {
	// Mode is "bench", "demo" or "matrix".
	Mode string
	// Spec is the file of the spec (JSON), Out that of the results (one
	// JSON object a line), RdmaNfsd the rdma-nfsd binary.
	Spec, Out, RdmaNfsd string
	// Stdout gets the tagged lines the host picks out of the console.
	Stdout io.Writer
}

// Guest runs inside the VM: the bench cells of a spec, the demo or the
// matrix. Results go to o.Stdout (tagged lines) and to o.Out (JSON lines).
func Guest(ctx context.Context, o GuestOptions) error {
	stdout := o.Stdout
	if os.Getenv("RPCRDMA_IN_VM") != "1" {
		return fmt.Errorf("guest: runs inside the VM only (the host side is rpcrdma-bench bench|matrix or rpcrdma-demo)")
	}
	raw, err := os.ReadFile(o.Spec)
	if err != nil {
		return err
	}
	var spec Spec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return fmt.Errorf("spec: %w", err)
	}
	out, err := os.Create(o.Out)
	if err != nil {
		return err
	}
	defer out.Close()
	if up, ok := guestUptime(); ok {
		phaseLine(stdout, "boot", up)
	}
	t0 := time.Now()
	if err := guestSetup(has(spec.Servers, ServerKnfsd) || has(spec.Servers, ServerKnfsdTCP)); err != nil {
		return err
	}
	phaseLine(stdout, "set-up", time.Since(t0))
	if cs, err := os.ReadFile(clocksourceFile); err == nil {
		_ = os.WriteFile("/host/"+guestClockFile, cs, 0o644)
	}
	switch o.Mode {
	case "demo":
		if err := guestDemo(ctx, o.RdmaNfsd, stdout); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
		t0 = time.Now()
		err := guestBench(ctx, spec, o.RdmaNfsd, out, stdout)
		phaseLine(stdout, fmt.Sprintf("%d-cells", len(spec.AllCells())*max(1, spec.Rounds)), time.Since(t0))
		return err
	case "bench":
		return guestBench(ctx, spec, o.RdmaNfsd, out, stdout)
	case "matrix":
		return guestMatrix(ctx, spec, o.RdmaNfsd, out, stdout)
	}
	return fmt.Errorf("guest: mode %q: want bench, demo or matrix", o.Mode)
}

// guestSetup mounts the tmpfs rdma-nfsd exports (knfsd exports one too),
// starts knfsd when asked, fills the server's neighbour cache (the first
// RDMA-CM connect otherwise waits ~5 s for the IB CM's retry) and turns on
// the kernel client's inline_thresh tracepoint.
func guestSetup(knfsd bool) error {
	cmd := "mkdir -p " + goExportRoot + " && (grep -q ' " + goExportRoot + " ' /proc/mounts || mount -t tmpfs -o size=512m bench " + goExportRoot + ")"
	if knfsd {
		cmd += " && rxevm-nfsd-start 8"
	}
	cmd += " && (ping -c 1 -W 2 -I " + vmServerIP + " " + vmClientIP + " > /dev/null || true)" +
		" && echo 1 > /sys/kernel/tracing/events/rpcrdma/xprtrdma_inline_thresh/enable"
	return sh(2*time.Minute, cmd)
}

// guestBench runs the spec's cells in the VM, each round after perftest
// if asked.
func guestBench(ctx context.Context, spec Spec, bin string, out, stdout io.Writer) error {
	r := &runner{
		spec:     spec,
		label:    "rdmacore (rxe, qemu TCG)",
		provider: &rdmacore.Provider{LocalAddr: vmClientIP},
		servers: map[string]server{
			ServerGo:       newRdmaNfsd(bin, "rdmacore", vmServerIP, goExportRoot+"/bench"),
			ServerKnfsd:    newKnfsd(),
			ServerKnfsdTCP: newKnfsdTCP(),
		},
		kernel: &kernelClient{mnt: "/mnt/bench"},
		rxe:    true,
	}
	nfsd := r.servers[ServerGo].(*rdmaNfsd)
	nfsd.profileDir, nfsd.extra = spec.ServerProfile, spec.ServerFlags
	if spec.comparing() {
		r.servers[ServerGoB] = serverB(nfsd, spec)
	}
	enc := json.NewEncoder(out)
	r.emit = func(res Result) {
		_ = enc.Encode(res)
		b, _ := json.Marshal(res)
		fmt.Fprintf(stdout, "%s%s\n", tagResult, b)
	}
	r.progress = func(done, total int, c Cell) {
		fmt.Fprintf(stdout, "%s%d %d %s\n", tagProgress, done, total, c.Label())
	}
	var perf []Baseline
	if spec.Baseline {
		r.beforeRound = func(ctx context.Context, round int) {
			b := runBaseline(ctx, stdout)
			b.Round = round
			perf = append(perf, b)
		}
	}
	err := r.run(ctx)
	if len(perf) > 0 {
		b, _ := json.Marshal(mergeBaselines(perf))
		if werr := os.WriteFile("/host/baseline.json", b, 0o644); werr != nil && err == nil {
			err = werr
		}
	}
	return err
}

// inlineThreshRE matches the kernel client's xprtrdma_inline_thresh
// tracepoint: "neg send/recv=4096/4096, calc send/recv=3780/3884".
var inlineThreshRE = regexp.MustCompile(`xprtrdma_inline_thresh: .*neg send/recv=(\d+)/(\d+)`)

// traceInlineThresh returns the thresholds the kernel client negotiated
// on its last connection.
func traceInlineThresh() (send, recv int, ok bool) {
	raw, err := os.ReadFile("/sys/kernel/tracing/trace")
	if err != nil {
		return 0, 0, false
	}
	return lastInlineThresh(string(raw))
}

// lastInlineThresh finds the last inline_thresh event in a trace.
func lastInlineThresh(trace string) (send, recv int, ok bool) {
	ms := inlineThreshRE.FindAllStringSubmatch(trace, -1)
	if len(ms) == 0 {
		return 0, 0, false
	}
	m := ms[len(ms)-1]
	send, _ = strconv.Atoi(m[1])
	recv, _ = strconv.Atoi(m[2])
	return send, recv, true
}

// clearTrace empties the tracing buffer.
func clearTrace() { _ = os.WriteFile("/sys/kernel/tracing/trace", nil, 0o644) }

// demoLine prints one line of the demo's report.
func demoLine(w io.Writer, format string, args ...any) {
	for _, l := range strings.Split(fmt.Sprintf(format, args...), "\n") {
		fmt.Fprintf(w, "%s%s\n", tagDemo, l)
	}
}

// clocksourceFile names the guest kernel's clocksource; the guest copies it
// into the share as guestClockFile for the report.
const (
	clocksourceFile = "/sys/devices/system/clocksource/clocksource0/current_clocksource"
	guestClockFile  = "clocksource"
)

// clockNote is how a report names the guest's clocksource: a clock read
// costs ten times as much on the HPET as on the TSC in the VM
// (docs/benchmarks.md, "The guest's clock"); runs from before it was
// recorded ran on the HPET.
func clockNote(clock string) string {
	if clock == "" {
		return ""
	}
	return ", clocksource " + clock
}
