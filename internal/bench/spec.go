package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/vm"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
)

// Spec is what one bench run measures; the host writes it to the share as
// JSON and the guest (or the soft run) expands it into cells.
type Spec struct {
	Provider  string        `json:"provider"` // "rdmacore" (the VM's rxe) or "soft"
	Duration  time.Duration `json:"duration"` // per cell
	Inlines   []int         `json:"inlines"`
	Sizes     []int         `json:"sizes"`     // READ and WRITE sizes
	InFlight  []int         `json:"in_flight"` // depths of every workload
	Workloads []string      `json:"workloads"`
	Servers   []string      `json:"servers"`
	Clients   []string      `json:"clients"`
	// Rounds measures every cell this many times, the inline settings in
	// ABBA order (rounds.go).
	Rounds int `json:"rounds"`
	// Baseline runs perftest (ib_send_lat -e, ib_write_bw) on the same
	// devices before every round.
	Baseline bool `json:"baseline"`
	// CreateSize is the size of each small file of the create workload.
	CreateSize int `json:"create_size"`
	// NoGoNFS leaves out the Go NFS client's cells (goClientCells): the
	// Go client's rows are then RPC NULL only.
	NoGoNFS bool `json:"no_go_nfs,omitempty"`
	// ServerProfile, if set, is the directory where each start of
	// rdma-nfsd writes a CPU profile of its run (-cpuprofile), on the side
	// that runs it: /host/profiles in the VM.
	ServerProfile string `json:"server_profile,omitempty"`
	// ClientProfile, if set, is the directory where the bench's own
	// process writes a CPU profile of each Go client cell
	// (clientProfileName), on the side that runs it: /host/profiles in
	// the VM.
	ClientProfile string `json:"client_profile,omitempty"`
	// ServerFlags are more flags for rdma-nfsd (after the bench's own).
	ServerFlags []string `json:"server_flags,omitempty"`
	// MTU is the MTU of the VM's veth pair under the rxe devices (0: the
	// default 1500, rxe path MTU 1024; 9000: path MTU 4096, as RoCE with
	// jumbo frames). rdmacore only.
	MTU int `json:"mtu,omitempty"`
	// Compare, if set, is the commit rdma-nfsd-b is built from (bench
	// -compare REV, resolved on the host; compare.go).
	Compare string `json:"compare,omitempty"`
	// CompareFlags are more flags for rdma-nfsd-b only (after
	// ServerFlags): with Compare, for the build compared; without it,
	// rdma-nfsd-b is this checkout's rdma-nfsd run with them (bench
	// -compare-flags).
	CompareFlags []string `json:"compare_flags,omitempty"`
	// Version2 makes the comparison one of RPC-over-RDMA versions (bench
	// -rpcrdma-v2): rdma-nfsd-b runs with -rpcrdma-v2 (in CompareFlags)
	// and the Go client offers version 2 to it, and only to it, so its
	// ratios are version 2 over version 1; a Go client connection to
	// rdma-nfsd-b that does not run version 2 fails its cells.
	Version2 bool `json:"version2,omitempty"`
	// Host runs the cells on this host's own RDMA device through
	// rdma-core instead of in the VM (bench -host; host.go): rdma-nfsd
	// bound to the device's address, the Go client and, if Clients has
	// it, the kernel client. Device names the device and Addr its address
	// ("": the first device with an active port that has an IP address,
	// and that port's first address, IPv4 first). rdmacore only.
	Host   bool   `json:"host,omitempty"`
	Device string `json:"device,omitempty"`
	Addr   string `json:"addr,omitempty"`
}

// comparing reports whether the run has rdma-nfsd-b (compare.go).
func (s Spec) comparing() bool { return s.Compare != "" || len(s.CompareFlags) > 0 }

// rxeHeaders is what rdma_rxe subtracts from its netdev's MTU before it
// picks the path MTU (RXE_MAX_HDR_LENGTH: Ethernet, IP, UDP and the
// largest InfiniBand transport headers).
const rxeHeaders = 80

// PathMTU is the active MTU rxe derives from the veth MTU (Spec.MTU, 0
// for 1500): the largest InfiniBand MTU, 256 to 4096, that fits in it
// with the headers.
func (s Spec) PathMTU() int {
	mtu := s.MTU
	if mtu == 0 {
		mtu = 1500
	}
	p := 256
	for p < 4096 && 2*p <= mtu-rxeHeaders {
		p *= 2
	}
	return p
}

// The matrix: sizes, depths and inline settings of a full run.
var (
	fullSizes    = []int{512, 1 << 10, 2 << 10, 4 << 10, 8 << 10, 64 << 10, 1 << 20}
	fullInFlight = []int{1, 8, 32}
	fullInlines  = []int{1024, 4096, 16 << 10, 64 << 10}
	allWorkloads = []string{WorkNull, WorkRead, WorkWrite, WorkGetattr, WorkCreate}
	// goOnlyWorkloads are the Go client's alone: the kernel client has no
	// way to make one LOOKUP or READDIRPLUS per operation (its dentry and
	// page caches answer), nor a connection per operation. -workloads
	// names them; no default run has them.
	goOnlyWorkloads = []string{WorkLookup, WorkReaddir, WorkConnect}
)

// fullSpec is the whole matrix of the issue.
func fullSpec() Spec {
	return Spec{Provider: "rdmacore", Duration: 3 * time.Second, Inlines: fullInlines, Sizes: fullSizes,
		InFlight: fullInFlight, Workloads: allWorkloads, Servers: []string{ServerGo, ServerKnfsd, ServerKnfsdTCP},
		Clients: []string{ClientKernel, ClientGo}, CreateSize: 2 << 10, Rounds: 2}
}

// quickSpec is the CI subset: the sizes where the inline setting decides
// (2 KiB, 4 KiB) and a large one, two depths, 1024 against 4096.
func quickSpec() Spec {
	s := fullSpec()
	s.Duration = time.Second
	s.Sizes = []int{2 << 10, 4 << 10, 64 << 10}
	s.InFlight = []int{1, 8}
	s.Inlines = []int{1024, 4096}
	return s
}

// demoSpec is the short table make demo prints: rdma-nfsd at 1024 and
// 4096 mounted by the kernel client, the 2 KiB WRITE that needs an RDMA
// Read at 1024 only, a 2 KiB and a 64 KiB READ, and our requester's NULL
// (the Go NFS client's cells are left out, and each cell runs once, to
// keep the demo under 2 minutes on a loaded host: make bench has them,
// and repeats every cell).
func demoSpec() Spec {
	return Spec{Provider: "rdmacore", Duration: time.Second, Inlines: []int{1024, 4096},
		Sizes: []int{2 << 10, 64 << 10}, InFlight: []int{8}, Workloads: []string{WorkNull, WorkRead, WorkWrite},
		Servers: []string{ServerGo}, Clients: []string{ClientKernel, ClientGo}, CreateSize: 2 << 10, Rounds: 1, NoGoNFS: true}
}

// has reports whether the spec runs peer or workload name.
func has(list []string, name string) bool { return slices.Contains(list, name) }

// Cells lists the spec's cells for one server and inline setting, in the
// order they run: our requester's cells first, then the kernel client's.
func (s Spec) Cells(server string, inline int) []Cell {
	var cells []Cell
	if server == ServerKnfsdTCP {
		// Over TCP the inline setting means nothing: the kernel
		// client's cells once, at the first setting's turn, as inline 0.
		if len(s.Inlines) == 0 || inline != s.Inlines[0] || !has(s.Clients, ClientKernel) || s.Provider != "rdmacore" {
			return nil
		}
		for _, w := range s.Workloads {
			if w == WorkNull || has(goOnlyWorkloads, w) {
				continue
			}
			for _, size := range s.sizesOf(w) {
				for _, n := range s.InFlight {
					cells = append(cells, Cell{Client: ClientKernel, Server: server, Workload: w, Size: size, InFlight: n})
				}
			}
		}
		return cells
	}
	add := func(client, work string, size int) {
		for _, n := range s.InFlight {
			cells = append(cells, Cell{Client: client, Server: server, Workload: work, Size: size, InFlight: n, Inline: inline})
		}
	}
	if has(s.Clients, ClientGo) {
		for _, w := range []string{WorkNull, WorkConnect} { // our requester's
			if has(s.Workloads, w) {
				add(ClientGo, w, 0)
			}
		}
		for _, c := range s.goClients() {
			for _, w := range s.Workloads {
				if c.Supports(w) && w != WorkNull {
					for _, size := range s.sizesOf(w) {
						add(ClientGo, w, size)
					}
				}
			}
		}
	}
	if has(s.Clients, ClientKernel) && s.Provider == "rdmacore" {
		for _, w := range s.Workloads {
			if w == WorkNull || has(goOnlyWorkloads, w) {
				continue // the kernel client's NULL is not a user-space operation
			}
			for _, size := range s.sizesOf(w) {
				add(ClientKernel, w, size)
			}
		}
	}
	return cells
}

// goClients are the Go NFS clients whose cells the spec runs.
func (s Spec) goClients() []goNFSClient {
	if s.NoGoNFS {
		return nil
	}
	return goClientCells
}

// sizesOf is the sizes a workload runs at.
func (s Spec) sizesOf(w string) []int {
	switch w {
	case WorkRead, WorkWrite:
		return s.Sizes
	case WorkCreate:
		return []int{s.CreateSize}
	}
	return []int{0}
}

// AllCells lists every cell of the spec, once (each runs Rounds times).
func (s Spec) AllCells() []Cell {
	var all []Cell
	for _, srv := range s.Servers {
		if s.Provider == "soft" && srv != ServerGo && srv != ServerGoB {
			continue
		}
		for _, in := range s.Inlines {
			all = append(all, s.Cells(srv, in)...)
		}
	}
	return all
}

// Validate checks the spec's values.
func (s Spec) Validate() error {
	if s.Provider != "rdmacore" && s.Provider != "soft" {
		return fmt.Errorf("provider %q: want rdmacore or soft", s.Provider)
	}
	if s.Rounds < 1 || s.Rounds > 10 {
		return fmt.Errorf("rounds %d: want 1..10", s.Rounds)
	}
	if s.Duration <= 0 {
		return fmt.Errorf("cell duration %v: must be positive", s.Duration)
	}
	if !vm.ValidMTU(s.MTU) || s.MTU != 0 && s.Provider != "rdmacore" {
		return fmt.Errorf("MTU %d: want 576..65535, with the rdmacore provider", s.MTU)
	}
	for _, in := range s.Inlines {
		if in < 1024 || in > 65536 || in%1024 != 0 {
			return fmt.Errorf("inline %d: want a multiple of 1024 in 1024..65536 (RFC 8797 sizes the Linux client accepts)", in)
		}
	}
	for _, n := range s.Sizes {
		if n < 1 || n > client.DefaultIOSize {
			return fmt.Errorf("size %d: want 1..%d (the largest rsize and wsize)", n, client.DefaultIOSize)
		}
	}
	for _, n := range s.InFlight {
		if n < 1 || n > 128 {
			return fmt.Errorf("in flight %d: want 1..128", n)
		}
	}
	for _, w := range s.Workloads {
		if !has(allWorkloads, w) && !has(goOnlyWorkloads, w) {
			return fmt.Errorf("workload %q: want one of %s", w, strings.Join(append(slices.Clone(allWorkloads), goOnlyWorkloads...), ", "))
		}
	}
	for _, p := range s.Servers {
		if p != ServerGo && p != ServerKnfsd && p != ServerKnfsdTCP && (p != ServerGoB || !s.comparing()) {
			return fmt.Errorf("server %q: want %s, %s or %s", p, ServerGo, ServerKnfsd, ServerKnfsdTCP)
		}
	}
	if s.comparing() && (!has(s.Servers, ServerGo) || !has(s.Servers, ServerGoB)) {
		return fmt.Errorf("comparing servers (-compare, -compare-flags) needs %s among the servers", ServerGo)
	}
	for _, p := range s.Clients {
		if p != ClientKernel && p != ClientGo {
			return fmt.Errorf("client %q: want %s or %s", p, ClientKernel, ClientGo)
		}
	}
	if len(s.AllCells()) == 0 {
		return fmt.Errorf("the selection has no cell to run")
	}
	return nil
}

// parseInts reads a comma-separated list with parse.
func parseInts(s string, parse func(string) (int, error)) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		n, err := parse(f)
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// atoi is strconv.Atoi with the list's error wording.
func atoi(s string) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q: not a number", s)
	}
	return n, nil
}

// splitList splits a comma-separated list of names.
func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
