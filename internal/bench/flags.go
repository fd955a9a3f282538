package bench

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Flags are the flags of "rpcrdma-bench bench": Register puts them on a
// flag set, Spec turns them into what the run measures.
type Flags struct {
	// The outputs the command writes ("" none; "-" standard output for
	// JSON and CSV).
	JSON, CSV, Markdown, Chart string
	// Console, if set, is the file the VM's console is saved to.
	Console string
	// ServerProfileOut and ClientProfileOut are the directories of the CPU
	// profiles of rdma-nfsd and of the Go client ("" none).
	ServerProfileOut, ClientProfileOut string

	quick                              bool
	rounds                             int
	d                                  time.Duration
	provider, inlines, sizes, inflight string
	workloads, servers, clients        string
	serverFlags, compare, compareFlags string
	mtu                                int
	baseline, version2                 bool
	// -host and its flags (host.go).
	host, kernel bool
	device, addr string
}

// Register defines the flags on fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	fs.BoolVar(&f.quick, "quick", false, "the CI subset: 2, 4 and 64 KiB, 1 and 8 in flight, inline 1024 and 4096, 1 s cells")
	fs.DurationVar(&f.d, "d", 0, "duration of each cell (default 3s, 1s with -quick)")
	fs.IntVar(&f.rounds, "rounds", 0, "measure each cell this many times, inline settings in ABBA order (default 2)")
	fs.StringVar(&f.provider, "provider", "rdmacore", "rdmacore: in the VM over rxe (all peers); soft: here, over TCP (our peers only)")
	fs.StringVar(&f.inlines, "inline", "", "inline settings (default 1024,4096,16KiB,64KiB)")
	fs.StringVar(&f.sizes, "sizes", "", "READ and WRITE sizes (default 512,1KiB,2KiB,4KiB,8KiB,64KiB,1MiB)")
	fs.StringVar(&f.inflight, "inflight", "", "operations in flight (default 1,8,32)")
	fs.StringVar(&f.workloads, "workloads", "", "null,read,write,getattr,create (default all); the Go client's alone: lookup,readdir,connect")
	fs.StringVar(&f.servers, "servers", "", "rdma-nfsd,knfsd (default both)")
	fs.StringVar(&f.clients, "clients", "", "kernel,go (default both)")
	fs.StringVar(&f.JSON, "json", "", "write the report as JSON to FILE (- for stdout)")
	fs.StringVar(&f.CSV, "csv", "", "write the results as CSV to FILE (- for stdout)")
	fs.StringVar(&f.Markdown, "md", "", "write the results as a Markdown table to FILE")
	fs.StringVar(&f.Chart, "chart", "", "draw ops/s and RDMA operations per RPC against I/O size to FILE (.png or .svg)")
	fs.StringVar(&f.Console, "console", "", "save the VM's console to FILE")
	fs.StringVar(&f.serverFlags, "server-flags", "", "more flags for rdma-nfsd, space-separated (e.g. \"-concurrent-calls 1\"); NAME=value words set its environment (GOMAXPROCS=1)")
	fs.StringVar(&f.ServerProfileOut, "server-profile", "", "write a CPU profile (pprof) of each start of rdma-nfsd (one per inline setting and round) into DIR")
	fs.StringVar(&f.ClientProfileOut, "client-profile", "", "write a CPU profile (pprof) of the bench's own process during each Go client cell into DIR")
	fs.IntVar(&f.mtu, "mtu", 0, "MTU of the VM's veth pair (default 1500: rxe path MTU 1024; 9000: 4096, as RoCE with jumbo frames)")
	fs.StringVar(&f.compare, "compare", "", "also run rdma-nfsd built from git revision `REV` (as rdma-nfsd-b, alternating with this checkout's) and print each cell's ratio")
	fs.StringVar(&f.compareFlags, "compare-flags", "", "more flags for rdma-nfsd-b only; without -compare, rdma-nfsd-b is this checkout's rdma-nfsd run with them")
	fs.BoolVar(&f.version2, "rpcrdma-v2", false, "compare RPC-over-RDMA version 2 with version 1: rdma-nfsd-b is rdma-nfsd with -rpcrdma-v2 and the Go client offers it version 2 (docs/v2.md); the clients default to go")
	fs.BoolVar(&f.baseline, "baseline", false, "run perftest (ib_send_lat -e, ib_write_bw) on the same devices before every round, for the issue's goals")
	fs.BoolVar(&f.host, "host", false, "run on this host's own RDMA device through rdma-core, without the VM: rdma-nfsd and the Go client (and the kernel client with -kernel)")
	fs.StringVar(&f.device, "device", "", "with -host: the RDMA device (default the first with an active port that has an IP address)")
	fs.StringVar(&f.addr, "addr", "", "with -host: the device's IP `address` rdma-nfsd listens on and the clients use (default its first, IPv4 first)")
	fs.BoolVar(&f.kernel, "kernel", false, "with -host: also measure the Linux kernel client (mount -o proto=rdma; needs root, the rpcrdma module and mount.nfs)")
}

// Spec is the Spec of the flags and the command's arguments args (none);
// an error names the flag at fault. It creates the profile directories.
func (f *Flags) Spec(args []string) (Spec, error) {
	if len(args) > 0 {
		return Spec{}, fmt.Errorf("unexpected arguments: %v", args)
	}
	s := fullSpec()
	if f.quick {
		s = quickSpec()
	}
	s.Provider = f.provider
	// 0 is the default; anything else, negative included, is Validate's.
	if f.d != 0 {
		s.Duration = f.d
	}
	if f.rounds != 0 {
		s.Rounds = f.rounds
	}
	var err error
	if f.inlines != "" {
		if s.Inlines, err = parseInts(f.inlines, parseSize); err != nil {
			return s, fmt.Errorf("-inline: %w", err)
		}
	}
	if f.sizes != "" {
		if s.Sizes, err = parseInts(f.sizes, parseSize); err != nil {
			return s, fmt.Errorf("-sizes: %w", err)
		}
	}
	if f.inflight != "" {
		if s.InFlight, err = parseInts(f.inflight, atoi); err != nil {
			return s, fmt.Errorf("-inflight: %w", err)
		}
	}
	if f.workloads != "" {
		s.Workloads = splitList(f.workloads)
	}
	if f.servers != "" {
		s.Servers = splitList(f.servers)
	}
	if f.clients != "" {
		s.Clients = splitList(f.clients)
	}
	s.Baseline = f.baseline
	s.MTU = f.mtu
	s.ServerFlags = strings.Fields(f.serverFlags)
	// Profiles are written in the VM's share, copied out after the run
	// (rdma-nfsd's, and the Go client's, which runs in the bench's guest
	// process); on soft and with -host, where this process and rdma-nfsd
	// run, into the directory itself.
	local := s.Provider == "soft" || f.host
	if s.ServerProfile, err = profileDir("-server-profile", f.ServerProfileOut, local); err != nil {
		return s, err
	}
	if s.ClientProfile, err = profileDir("-client-profile", f.ClientProfileOut, local); err != nil {
		return s, err
	}
	if s.Provider == "soft" {
		s.Servers, s.Clients, s.Baseline = []string{ServerGo}, []string{ClientGo}, false
	}
	s.Compare, s.CompareFlags = f.compare, strings.Fields(f.compareFlags)
	if f.version2 {
		// Only our client speaks version 2: the kernel client's cells
		// would compare version 1 with itself.
		s.Version2, s.CompareFlags = true, append(s.CompareFlags, "-rpcrdma-v2")
		if f.clients == "" {
			s.Clients = []string{ClientGo}
		}
	}
	if s.comparing() {
		// B runs right after A (roundServers); Compare is resolved to a
		// commit by Run.
		if i := slices.Index(s.Servers, ServerGo); i >= 0 {
			s.Servers = slices.Insert(s.Servers, i+1, ServerGoB)
		}
	}
	if s, err = f.hostSpec(s); err != nil {
		return s, err
	}
	return s, s.Validate()
}

// ParseSizes reads a comma-separated list of byte counts ("1024,4KiB").
func ParseSizes(s string) ([]int, error) { return parseInts(s, parseSize) }

// profileDir creates out, the directory of a profile flag (name), and
// returns where the profiling process writes into it: out itself
// (absolute) if it runs here (local), guestProfileDir in the VM; "" if out
// is "".
func profileDir(name, out string, local bool) (string, error) {
	if out == "" {
		return "", nil
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	if !local {
		return guestProfileDir, nil
	}
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return abs, nil
}
