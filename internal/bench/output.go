package bench

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"

	"golang.org/x/sys/unix"
)

// progress shows a progress line while cells run: rewritten in place on a
// terminal, one line per cell otherwise.
type progress struct {
	mu      sync.Mutex
	w       io.Writer
	tty     bool
	pending string // the label of the cell running
	shown   bool
}

func newProgress(w io.Writer) *progress {
	p := &progress{w: w}
	if f, ok := w.(*os.File); ok {
		_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
		p.tty = err == nil
	}
	return p
}

// show prints s as the progress line.
func (p *progress) show(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty {
		fmt.Fprintf(p.w, "\r\033[K%s", s)
		p.shown = true
		return
	}
	fmt.Fprintln(p.w, s)
}

// end finishes the progress line.
func (p *progress) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.tty && p.shown {
		fmt.Fprintln(p.w)
		p.shown = false
	}
}

// summary is one result in a few words.
func summary(r Result) string {
	if r.Err != "" {
		return "error: " + r.Err
	}
	return fmt.Sprintf("%s ops/s, p50 %s µs, %s RDMA ops/RPC", fmtNum(r.OpsPerS), fmtNum(r.P50us), fmtNum(RDMAOps(r)))
}

// cell reports a finished cell of a local run.
func (p *progress) cell(done, total int, label string, results *[]Result) {
	s := fmt.Sprintf("[%d/%d] %s", done, total, label)
	if n := len(*results); n > 0 {
		s += ": " + summary((*results)[n-1])
	}
	p.show(s)
}

// guestLine follows the guest's tagged lines of a bench run: each
// result, then the progress line that counts it.
func (p *progress) guestLine(line string) {
	if rest, ok := tagged(line, tagResult); ok {
		var r Result
		if json.Unmarshal([]byte(rest), &r) == nil {
			p.mu.Lock()
			p.pending = summary(r)
			p.mu.Unlock()
		}
		return
	}
	if rest, ok := tagged(line, tagProgress); ok {
		f := strings.SplitN(rest, " ", 3)
		if len(f) == 3 {
			p.mu.Lock()
			s := p.pending
			p.mu.Unlock()
			p.show(fmt.Sprintf("[%s/%s] %s: %s", f[0], f[1], f[2], s))
		}
	}
}

// RDMAOps is the RDMA operations an RPC cost, every kind added (NA when
// any kind was not counted).
func RDMAOps(r Result) float64 {
	total := 0.0
	for _, v := range []float64{r.Sends, r.RDMAReads, r.RDMAWrites, r.LocalInv} {
		if v == NA {
			return NA
		}
		total += v
	}
	return total
}

// serverOrder puts ours first, then knfsd over RDMA, then over TCP.
var serverOrder = map[string]int{ServerGo: 0, ServerGoB: 1, ServerKnfsd: 2, ServerKnfsdTCP: 3}

// ServerRank is a server's place in tables and charts: ours first, then
// knfsd over RDMA, then over TCP.
func ServerRank(name string) int { return serverOrder[name] }

// sorted returns results ordered for the table: peers, workload, size,
// depth, inline.
func sorted(rs []Result) []Result {
	out := append([]Result(nil), rs...)
	order := map[string]int{WorkNull: 0, WorkRead: 1, WorkWrite: 2, WorkGetattr: 3, WorkCreate: 4}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Client != b.Client {
			return a.Client > b.Client // kernel before go
		}
		if a.Server != b.Server {
			return serverOrder[a.Server] < serverOrder[b.Server]
		}
		if a.Workload != b.Workload {
			return order[a.Workload] < order[b.Workload]
		}
		if a.Size != b.Size {
			return a.Size < b.Size
		}
		if a.InFlight != b.InFlight {
			return a.InFlight < b.InFlight
		}
		return a.Inline < b.Inline
	})
	return out
}

// tableHeader and tableRow are the columns of the terminal and Markdown
// tables.
var tableHeader = []string{"client→server", "work", "size", "×", "inline", "ops/s", "MB/s", "p50 µs", "p99 µs",
	"RPC/op", "Send", "RdRd", "RdWr", "RInv", "LInv", "chunks R/W/Rp", "pkts", "srv µs", "srv allocs", "srv csw", "srv posts", "cli µs", "cli allocs", "cli csw", "cli posts", "vm µs", "vm busy", "vs 1024", "vs kernel"}

func tableRow(r Result) []string {
	peers := r.Client + "→" + r.Server
	if r.Err != "" {
		return []string{peers, r.Workload, SizeName(r.Size), strconv.Itoa(r.InFlight), SizeName(r.Inline), "error: " + r.Err}
	}
	ratio := func(v float64) string {
		if v == NA {
			return "-"
		}
		return fmt.Sprintf("%.2fx", v)
	}
	pct := func(v float64) string {
		if v == NA {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", v)
	}
	return []string{peers, r.Workload, SizeName(r.Size), strconv.Itoa(r.InFlight), SizeName(r.Inline),
		fmtNum(r.OpsPerS), fmtNum(r.MBPerS), fmtNum(r.P50us), fmtNum(r.P99us), fmtNum(r.RPCsPerOp),
		fmtNum(r.Sends), fmtNum(r.RDMAReads), fmtNum(r.RDMAWrites), fmtNum(r.RemoteInv), fmtNum(r.LocalInv),
		fmtNum(r.ReadChunks) + "/" + fmtNum(r.WriteChunks) + "/" + fmtNum(r.ReplyChunks),
		fmtNum(r.Packets), fmtNum(r.ServerCPUus), fmtNum(r.ServerAllocs), fmtNum(r.ServerCtxSw), fmtNum(r.ServerPosts),
		fmtNum(r.ClientCPUus), fmtNum(r.ClientAllocs), fmtNum(r.ClientCtxSw), fmtNum(r.ClientPosts),
		fmtNum(r.VMCPUus), pct(r.VMBusyPct), ratio(r.Vs1024), ratio(r.VsKernel)}
}

// writeTable prints the results as an aligned table.
func writeTable(w io.Writer, rs []Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 1, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, strings.Join(tableHeader, "\t")+"\t")
	for _, r := range sorted(rs) {
		fmt.Fprintln(tw, strings.Join(tableRow(r), "\t")+"\t")
	}
	_ = tw.Flush()
	fmt.Fprintln(w, "Send, RdRd (RDMA Read), RdWr (RDMA Write), RInv (Send With Invalidate), LInv (client's local invalidation),")
	fmt.Fprintln(w, "chunks (Read/Write/Reply) and pkts (RoCEv2 packets) are per RPC; srv µs and srv allocs are rdma-nfsd's CPU")
	fmt.Fprintln(w, "time and heap allocations per RPC, srv csw the server's context switches per RPC (rdma-nfsd's threads or")
	fmt.Fprintln(w, "knfsd's nfsd threads); cli µs, cli allocs and cli csw are the same of the bench process for the Go clients;")
	fmt.Fprintln(w, "vm µs is the whole VM's CPU time per RPC (client, server, rxe) and vm busy its CPUs' busy share;")
	fmt.Fprintln(w, "- is not counted for these peers; vs 1024: ops/s over the inline-1024 cell;")
	fmt.Fprintln(w, "vs kernel: the Go client's ops/s over the kernel client's in the same cell (same server, workload, size, depth, inline).")
}

// writeServerRatios prints rdma-nfsd's ops/s over knfsd's for each cell
// both ran, and the Go client's over the kernel client's.
func writeServerRatios(w io.Writer, rs []Result) {
	by := map[string]Result{}
	for _, r := range rs {
		if r.Err == "" {
			by[fmt.Sprintf("%s/%s/%s/%d/%d/%d", r.Client, r.Server, r.Workload, r.Size, r.InFlight, r.Inline)] = r
		}
	}
	var lines []string
	for _, r := range sorted(rs) {
		if r.Err != "" || r.Server != ServerGo {
			continue
		}
		k, ok := by[fmt.Sprintf("%s/%s/%s/%d/%d/%d", r.Client, ServerKnfsd, r.Workload, r.Size, r.InFlight, r.Inline)]
		if !ok || k.OpsPerS == 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("  %-6s %-7s %7s ×%-2d inline %-6s rdma-nfsd/knfsd %.2fx (%s vs %s ops/s)",
			r.Client, r.Workload, SizeName(r.Size), r.InFlight, SizeName(r.Inline), r.OpsPerS/k.OpsPerS, fmtNum(r.OpsPerS), fmtNum(k.OpsPerS)))
	}
	for _, r := range sorted(rs) {
		if r.Err != "" || r.Client != ClientGo || r.Workload == WorkNull {
			continue
		}
		k, ok := by[fmt.Sprintf("%s/%s/%s/%d/%d/%d", ClientKernel, r.Server, r.Workload, r.Size, r.InFlight, r.Inline)]
		if !ok || k.OpsPerS == 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("  %-9s %-7s %7s ×%-2d inline %-6s Go client/kernel client %.2fx (%s vs %s ops/s)",
			r.Server, r.Workload, SizeName(r.Size), r.InFlight, SizeName(r.Inline), r.OpsPerS/k.OpsPerS, fmtNum(r.OpsPerS), fmtNum(k.OpsPerS)))
	}
	for _, r := range sorted(rs) {
		if r.Err != "" || r.Server != ServerKnfsd {
			continue
		}
		k, ok := by[fmt.Sprintf("%s/%s/%s/%d/%d/%d", r.Client, ServerKnfsdTCP, r.Workload, r.Size, r.InFlight, 0)]
		if !ok || k.OpsPerS == 0 {
			continue
		}
		lines = append(lines, fmt.Sprintf("  %-6s %-7s %7s ×%-2d inline %-6s knfsd RDMA/TCP %.2fx (%s vs %s ops/s)",
			r.Client, r.Workload, SizeName(r.Size), r.InFlight, SizeName(r.Inline), r.OpsPerS/k.OpsPerS, fmtNum(r.OpsPerS), fmtNum(k.OpsPerS)))
	}
	if len(lines) > 0 {
		fmt.Fprintln(w, "\nratios (ops/s):")
		fmt.Fprintln(w, strings.Join(lines, "\n"))
	}
}

// csvHeader are the CSV columns: the JSON names of Result.
var csvHeader = []string{"provider", "client", "server", "workload", "size", "in_flight", "inline", "seconds", "ops",
	"errors", "ops_per_s", "mb_per_s", "p50_us", "p99_us", "rpcs", "rpcs_per_op", "sends_per_rpc", "rdma_reads_per_rpc",
	"rdma_writes_per_rpc", "remote_inv_per_rpc", "local_inv_per_rpc", "read_chunks_per_rpc", "write_chunks_per_rpc",
	"reply_chunks_per_rpc", "packets_per_rpc", "server_cpu_us_per_rpc", "server_allocs_per_rpc",
	"server_ctxsw_per_rpc", "server_posts_per_rpc", "client_cpu_us_per_rpc", "client_allocs_per_rpc", "client_ctxsw_per_rpc", "client_posts_per_rpc", "vm_cpu_us_per_rpc", "vm_busy_pct", "ops_vs_1024",
	"ops_vs_kernel_client", "negotiated", "error"}

// writeCSV writes the results, one row each (NA as an empty field).
func writeCSV(w io.Writer, rs []Result) error {
	cw := csv.NewWriter(w)
	_ = cw.Write(csvHeader)
	f := func(v float64) string {
		if v == NA {
			return ""
		}
		return strconv.FormatFloat(v, 'g', 6, 64)
	}
	for _, r := range sorted(rs) {
		_ = cw.Write([]string{r.Provider, r.Client, r.Server, r.Workload, strconv.Itoa(r.Size), strconv.Itoa(r.InFlight),
			strconv.Itoa(r.Inline), f(r.Seconds), strconv.FormatUint(r.Ops, 10), strconv.FormatUint(r.Errors, 10),
			f(r.OpsPerS), f(r.MBPerS), f(r.P50us), f(r.P99us), strconv.FormatUint(r.RPCs, 10), f(r.RPCsPerOp),
			f(r.Sends), f(r.RDMAReads), f(r.RDMAWrites), f(r.RemoteInv), f(r.LocalInv), f(r.ReadChunks),
			f(r.WriteChunks), f(r.ReplyChunks), f(r.Packets), f(r.ServerCPUus), f(r.ServerAllocs), f(r.ServerCtxSw), f(r.ServerPosts),
			f(r.ClientCPUus), f(r.ClientAllocs), f(r.ClientCtxSw), f(r.ClientPosts), f(r.VMCPUus), f(r.VMBusyPct), f(r.Vs1024),
			f(r.VsKernel), r.Negotiated, r.Err})
	}
	cw.Flush()
	return cw.Error()
}

// writeMarkdown writes the report as Markdown: where it ran and the table.
func writeMarkdown(w io.Writer, rep Report) {
	fmt.Fprintf(w, "Run of %s; %s; host: %s", rep.Date, rep.Provider, rep.Host)
	if rep.GuestKernel != "" {
		fmt.Fprintf(w, "; guest kernel: %s%s", rep.GuestKernel, clockNote(rep.GuestClock))
	}
	fmt.Fprintf(w, "; %d rounds of %v per cell (ABBA order of the inline settings); host load %s; %.0f s in all.\n\n",
		rep.Spec.Rounds, rep.Spec.Duration, rep.Load, rep.Seconds)
	fmt.Fprintln(w, "| "+strings.Join(tableHeader, " | ")+" |")
	fmt.Fprintln(w, "|"+strings.Repeat("---|", len(tableHeader)))
	for _, r := range sorted(rep.Results) {
		row := tableRow(r)
		for len(row) < len(tableHeader) {
			row = append(row, "")
		}
		fmt.Fprintln(w, "| "+strings.Join(row, " | ")+" |")
	}
}
