package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
)

// Workload names: what one operation of a cell is.
const (
	WorkNull    = "null"    // an RPC NULL (NFSv3 procedure 0) through transport.Conn.Call
	WorkRead    = "read"    // an O_DIRECT pread of Size bytes (one NFSv3 READ)
	WorkWrite   = "write"   // an O_DIRECT pwrite of Size bytes (one NFSv3 WRITE, FILE_SYNC)
	WorkGetattr = "getattr" // an fstat on a noac mount (one NFSv3 GETATTR)
	WorkCreate  = "create"  // create, write Size bytes, close (CREATE, WRITE, GETATTRs)
	// The Go client's alone (goOnlyWorkloads), in no default run.
	WorkLookup  = "lookup"  // one NFSv3 LOOKUP of a file's name in its directory
	WorkReaddir = "readdir" // one READDIRPLUS of a directory of readdirEntries files, whole in one reply
	WorkConnect = "connect" // a connection made (RDMA-CM, RFC 8797 and, in version 2, the RDMA2_CONNPROP exchange) and closed
)

// Peers: the client and server sides of a cell.
const (
	ClientKernel = "kernel" // the Linux kernel's NFSv3 client (xprtrdma)
	ClientGo     = "go"     // our requester (transport.Dial): NULL today, the Go NFS client later
	ServerGo     = "rdma-nfsd"
	// ServerGoB is rdma-nfsd built from the revision of Spec.Compare,
	// measured against ServerGo in the same run (compare.go).
	ServerGoB   = "rdma-nfsd-b"
	ServerKnfsd = "knfsd"
	// ServerKnfsdTCP is knfsd mounted over TCP: the kernel's NFS without
	// RDMA, for scale (its cells have no inline setting: Inline 0).
	ServerKnfsdTCP = "knfsd-tcp"
)

// NA marks a number that was not measured for a cell (a JSON-friendly
// stand-in for "n/a": the server's RDMA Reads of knfsd, the CPU time of a
// kernel server).
const NA = -1.0

// Cell names one measurement: a workload at one size and depth between
// two peers at one inline setting.
type Cell struct {
	Client   string `json:"client"`
	Server   string `json:"server"`
	Workload string `json:"workload"`
	Size     int    `json:"size"`      // bytes per operation (0: NULL, GETATTR)
	InFlight int    `json:"in_flight"` // operations in flight (goroutines)
	Inline   int    `json:"inline"`    // inline threshold both sides offer (RFC 8797)
}

// Key identifies the cell without its inline setting, to find the 1024
// cell of the same run.
func (c Cell) Key() string {
	return fmt.Sprintf("%s/%s/%s/%d/%d", c.Client, c.Server, c.Workload, c.Size, c.InFlight)
}

// Label is the cell in a few words, for progress lines.
func (c Cell) Label() string {
	w := c.Workload
	if c.Size > 0 {
		w += " " + SizeName(c.Size)
	}
	return fmt.Sprintf("%s→%s inline %s %s ×%d", c.Client, c.Server, SizeName(c.Inline), w, c.InFlight)
}

// Result is one measured cell. Per-RPC figures divide by the RPCs the
// client sent in the cell (mountstats "sends" for the kernel client, calls
// for ours). A figure that could not be counted for the peers is NA.
type Result struct {
	Cell
	Provider string  `json:"provider"` // "rdmacore (rxe, qemu TCG)" or "soft (TCP)"
	Seconds  float64 `json:"seconds"`
	Ops      uint64  `json:"ops"`
	Errors   uint64  `json:"errors"`
	OpsPerS  float64 `json:"ops_per_s"`
	MBPerS   float64 `json:"mb_per_s"`
	P50us    float64 `json:"p50_us"`
	P99us    float64 `json:"p99_us"`

	RPCs      uint64  `json:"rpcs"`
	RPCsPerOp float64 `json:"rpcs_per_op"`
	// RDMA operations per RPC, both directions: Sends (the call's and the
	// reply's), RDMA Reads and Writes (posted by the server), Send With
	// Invalidate replies, and local invalidations (the client's own).
	Sends      float64 `json:"sends_per_rpc"`
	RDMAReads  float64 `json:"rdma_reads_per_rpc"`
	RDMAWrites float64 `json:"rdma_writes_per_rpc"`
	RemoteInv  float64 `json:"remote_inv_per_rpc"`
	LocalInv   float64 `json:"local_inv_per_rpc"`
	// Chunks per RPC (Read chunks, Write chunks, Reply chunks), from the
	// client's counters.
	ReadChunks  float64 `json:"read_chunks_per_rpc"`
	WriteChunks float64 `json:"write_chunks_per_rpc"`
	ReplyChunks float64 `json:"reply_chunks_per_rpc"`
	// Packets is RoCEv2 packets per RPC both ways (rxe's sent_pkts and
	// rcvd_pkts of the client's device), NA on the soft provider.
	Packets float64 `json:"packets_per_rpc"`
	// ServerCPUus and ServerAllocs are rdma-nfsd's CPU time (user+system)
	// and heap allocations per RPC (NA for knfsd).
	ServerCPUus  float64 `json:"server_cpu_us_per_rpc"`
	ServerAllocs float64 `json:"server_allocs_per_rpc"`
	// ServerCtxSw is the server's context switches per RPC, voluntary and
	// involuntary: every thread of rdma-nfsd's process, or the kernel's
	// nfsd threads for knfsd (ctxsw.go).
	ServerCtxSw float64 `json:"server_ctxsw_per_rpc"`
	// ServerPosts and ClientPosts are the posts of send work requests
	// (ibv_post_send calls, Stats.SendPosts) per RPC of rdma-nfsd and of
	// our clients (NA for the kernel's): with Soft-RoCE, a system call
	// each.
	ServerPosts float64 `json:"server_posts_per_rpc"`
	ClientPosts float64 `json:"client_posts_per_rpc"`
	// ClientCPUus, ClientAllocs and ClientCtxSw are, for our clients (the
	// requester's NULL, the Go NFS client), the CPU time (user+system),
	// heap allocations and context switches per RPC of the bench program
	// that runs them: the client and the bench's own loop (NA for the
	// kernel client).
	ClientCPUus  float64 `json:"client_cpu_us_per_rpc"`
	ClientAllocs float64 `json:"client_allocs_per_rpc"`
	ClientCtxSw  float64 `json:"client_ctxsw_per_rpc"`
	// VMCPUus is the whole VM's CPU time per RPC (every CPU's busy time in
	// /proc/stat: client, server, rxe, the bench's loop), and VMBusyPct
	// how busy its CPUs were over the cell, in percent of all of them (NA
	// outside the VM).
	VMCPUus   float64 `json:"vm_cpu_us_per_rpc"`
	VMBusyPct float64 `json:"vm_busy_pct"`
	// Vs1024 is OpsPerS over the same cell's at inline 1024 in this run
	// (NA when that cell was not run).
	Vs1024 float64 `json:"ops_vs_1024"`
	// VsKernel is, for a Go client's cell, OpsPerS over the kernel
	// client's in the same cell (server, workload, size, depth, inline)
	// of this run: the "Go client's ratio to the kernel client"
	// (NA for the kernel's cells and when that cell was not run).
	VsKernel float64 `json:"ops_vs_kernel_client"`
	// Negotiated is what the connection settled on, as the peers report
	// it ("send/recv 4096/4096 R=1").
	Negotiated string `json:"negotiated"`
	Err        string `json:"error,omitempty"`
	// Round is the round that measured the cell (0-based); Rounds, in a
	// merged result, how many rounds it folds.
	Round  int `json:"round"`
	Rounds int `json:"rounds,omitempty"`
}

// UnmarshalJSON decodes a result; the figures a report from before they
// were measured lacks (ServerCtxSw, ClientCtxSw, ServerPosts, ClientPosts) are NA, not 0.
func (r *Result) UnmarshalJSON(b []byte) error {
	type plain Result // without this method
	p := plain{ServerCtxSw: NA, ClientCtxSw: NA, ServerPosts: NA, ClientPosts: NA}
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*r = Result(p)
	return nil
}

// fillRatios sets Vs1024 of every result from the 1024 cell of the same
// workload, size, depth and peers, and VsKernel of the Go client's from
// the kernel client's cell against the same server at the same setting.
func fillRatios(rs []Result) {
	base := map[string]float64{}
	kernel := map[Cell]float64{}
	for _, r := range rs {
		if r.Err != "" {
			continue
		}
		if r.Inline == 1024 {
			base[r.Key()] = r.OpsPerS
		}
		if r.Client == ClientKernel {
			kernel[r.Cell] = r.OpsPerS
		}
	}
	for i := range rs {
		rs[i].Vs1024, rs[i].VsKernel = NA, NA
		if rs[i].Err != "" {
			continue
		}
		if b, ok := base[rs[i].Key()]; ok && b > 0 {
			rs[i].Vs1024 = rs[i].OpsPerS / b
		}
		if rs[i].Client == ClientGo {
			k := rs[i].Cell
			k.Client = ClientKernel
			if b, ok := kernel[k]; ok && b > 0 {
				rs[i].VsKernel = rs[i].OpsPerS / b
			}
		}
	}
}

// perRPC divides n by rpcs, or returns NA without RPCs.
func perRPC(n, rpcs uint64) float64 {
	if rpcs == 0 {
		return NA
	}
	return float64(n) / float64(rpcs)
}

// SizeName writes a byte count the way the issue does: 512 B, 2 KiB, 1 MiB.
func SizeName(n int) string {
	switch {
	case n == 0:
		return "-"
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d B", n)
}

// parseSize reads "512", "512B", "2k", "2KiB", "1M", "1MiB".
func parseSize(s string) (int, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	t = strings.TrimSuffix(strings.TrimSuffix(t, "ib"), "b")
	mul := 1
	switch {
	case strings.HasSuffix(t, "k"):
		mul, t = 1<<10, strings.TrimSuffix(t, "k")
	case strings.HasSuffix(t, "m"):
		mul, t = 1<<20, strings.TrimSuffix(t, "m")
	}
	var n int
	if _, err := fmt.Sscanf(t, "%d", &n); err != nil || n <= 0 || fmt.Sprint(n) != t {
		return 0, fmt.Errorf("size %q: want a number of bytes such as 512, 2KiB or 1MiB", s)
	}
	return n * mul, nil
}

// fmtNum prints a figure for the table: "-" for NA, few digits.
func fmtNum(v float64) string {
	switch {
	case v == NA || math.IsNaN(v):
		return "-"
	case v == 0:
		return "0"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
