package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// runner measures the cells of a spec where the peers are: in the VM (the
// rdmacore provider on rxe, the kernel client, knfsd) or on this machine
// (the soft provider, our peers only).
type runner struct {
	spec     Spec
	label    string         // the provider as the results name it
	provider verbs.Provider // our requester's
	servers  map[string]server
	kernel   *kernelClient // nil without a kernel client
	rxe      bool          // rxe's packet counters are there to read (RDMA mounts)
	emit     func(Result)
	progress func(done, total int, c Cell)
	// beforeRound, if set, runs before each round's cells (perftest, for
	// Spec.Baseline).
	beforeRound func(ctx context.Context, round int)

	done, total, round int
}

// run measures every cell of the spec, server by server and inline
// setting by inline setting (one server start and one mount each).
func (r *runner) run(ctx context.Context) error {
	rounds := max(1, r.spec.Rounds)
	r.total = len(r.spec.AllCells()) * rounds
	for r.round = 0; r.round < rounds; r.round++ {
		if r.beforeRound != nil {
			r.beforeRound(ctx, r.round)
		}
		if err := r.runRound(ctx); err != nil {
			return err
		}
	}
	return nil
}

// runRound measures every cell once.
func (r *runner) runRound(ctx context.Context) error {
	for _, name := range roundServers(r.spec.Servers, r.round) {
		srv, ok := r.servers[name]
		if !ok {
			continue
		}
		for _, inline := range roundInlines(r.spec.Inlines, r.round) {
			cells := r.spec.Cells(name, inline)
			if len(cells) == 0 {
				continue
			}
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := srv.start(ctx, inline, false); err != nil {
				if errors.Is(err, errServerUsage) {
					return fmt.Errorf("starting %s: %w", name, err)
				}
				r.failAll(cells, fmt.Errorf("starting %s: %w", name, err))
				continue
			}
			r.runGo(ctx, srv, cells)
			r.runKernel(ctx, srv, cells, inline)
			srv.stop()
		}
	}
	return nil
}

// failAll reports cells that could not run.
func (r *runner) failAll(cells []Cell, err error) {
	for _, c := range cells {
		r.report(Result{Cell: c, Provider: r.label, Err: err.Error()})
	}
}

func (r *runner) report(res Result) {
	r.done++
	res.Round = r.round
	r.emit(res)
	if r.progress != nil {
		r.progress(r.done, r.total, res.Cell)
	}
}

func pick(cells []Cell, client string) []Cell {
	var out []Cell
	for _, c := range cells {
		if c.Client == client {
			out = append(out, c)
		}
	}
	return out
}

// runGo measures our requester's cells: NULL through transport.Conn.Call,
// and the workloads of any registered Go NFS client.
func (r *runner) runGo(ctx context.Context, srv server, cells []Cell) {
	cells = pick(cells, ClientGo)
	if len(cells) == 0 {
		return
	}
	inline := cells[0].Inline
	v2 := r.offersVersion2(srv)
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	g, err := dialGo(dctx, r.provider, srv.rdmaAddr(), inline, v2)
	cancel()
	if err != nil {
		r.failAll(cells, err)
		return
	}
	defer g.close()
	var sessions []goNFSSession
	var openErrs []error
	goClients := r.spec.goClients()
	for _, gc := range goClients {
		path, _ := srv.export()
		s, err := gc.Open(ctx, goOpen{Provider: r.provider, Addr: srv.rdmaAddr(), MountAddr: mountAddrOf(srv), ExportPath: path, Inline: inline, Version2: v2})
		if err != nil {
			sessions, openErrs = append(sessions, nil), append(openErrs, err)
			continue
		}
		defer s.Close()
		sessions = append(sessions, s)
	}
	for _, c := range cells {
		stop := r.profileClient(c)
		r.runGoCell(ctx, srv, c, g, sessions, goClients, openErrs)
		stop()
	}
}

// offersVersion2 reports whether the Go client offers (and requires)
// RPC-over-RDMA version 2 to srv: rdma-nfsd-b in a -rpcrdma-v2 run.
func (r *runner) offersVersion2(srv server) bool { return r.spec.Version2 && srv.name() == ServerGoB }

// runGoCell measures one Go client cell: RPC NULL on our requester, the
// rest on the first Go NFS client that supports the workload.
func (r *runner) runGoCell(ctx context.Context, srv server, c Cell, g *goRequester, sessions []goNFSSession, goClients []goNFSClient, openErrs []error) {
	switch c.Workload {
	case WorkNull:
		r.measure(ctx, c, srv, g.nullOps(c.InFlight), func() (map[string]uint64, error) { return withProcess(g.snapshot()), nil }, g.negotiated)
		return
	case WorkConnect:
		r.measure(ctx, c, srv, connectOps(r.provider, srv.rdmaAddr(), c.Inline, r.offersVersion2(srv)), func() (map[string]uint64, error) { return withProcess(map[string]uint64{}), nil }, g.negotiated)
		return
	}
	for i, gc := range goClients {
		if s := sessions[i]; s != nil && gc.Supports(c.Workload) {
			op, undo, err := s.Ops(c)
			if err != nil {
				r.report(Result{Cell: c, Provider: r.label, Err: err.Error()})
				return
			}
			r.measure(ctx, c, srv, op, func() (map[string]uint64, error) { return withProcess(s.Counters()), nil }, s.Negotiated)
			undo()
			return
		}
	}
	msg := "no Go NFS client could open the export"
	if len(openErrs) > 0 {
		msg += ": " + errors.Join(openErrs...).Error()
	}
	r.report(Result{Cell: c, Provider: r.label, Err: msg})
}

// clientProfilePrefix begins the name of every Go client profile.
const clientProfilePrefix = "go-client-"

// clientProfileName names the CPU profile of cell c in round (0-based):
// go-client-<server>-<workload>[-<size>]-x<in flight>-inline<N>-r<round>.pprof.
func clientProfileName(c Cell, round int) string {
	name := clientProfilePrefix + c.Server + "-" + c.Workload
	if c.Size > 0 {
		name += "-" + strconv.Itoa(c.Size)
	}
	return fmt.Sprintf("%s-x%d-inline%d-r%d.pprof", name, c.InFlight, c.Inline, round+1)
}

// profileClient starts a CPU profile of this process for Go client cell c
// if the spec asks for one (ClientProfile), and returns what stops it. A
// profile that cannot be written is reported and the cell runs anyway.
func (r *runner) profileClient(c Cell) (stop func()) {
	if r.spec.ClientProfile == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(r.spec.ClientProfile, clientProfileName(c, r.round)))
	if err == nil {
		if err = pprof.StartCPUProfile(f); err != nil {
			_ = f.Close()
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "-client-profile: %v\n", err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		_ = f.Close()
	}
}

// runKernel mounts srv with the kernel client at the cells' inline
// setting and measures its cells.
func (r *runner) runKernel(ctx context.Context, srv server, cells []Cell, inline int) {
	cells = pick(cells, ClientKernel)
	if len(cells) == 0 {
		return
	}
	if r.kernel == nil {
		r.failAll(cells, fmt.Errorf("no kernel client here (the %s provider)", r.spec.Provider))
		return
	}
	k := r.kernel
	if err := k.mount(srv, inline); err != nil {
		r.failAll(cells, err)
		return
	}
	defer func() { _ = k.umount() }()
	if err := k.prepare(); err != nil {
		r.failAll(cells, fmt.Errorf("preparing the files: %w", err))
		return
	}
	neg := func() string { return kernelNegotiated(srv) }
	for _, c := range cells {
		if ctx.Err() != nil {
			return
		}
		op, undo, err := k.ops(c)
		if err != nil {
			r.report(Result{Cell: c, Provider: r.label, Err: err.Error()})
			continue
		}
		r.measure(ctx, c, srv, op, k.snapshot, neg)
		undo()
	}
}

// kernelNegotiated is what the server says it settled on, or else the
// kernel client's inline_thresh tracepoint.
func kernelNegotiated(srv server) string {
	if srv.proto() != "rdma" {
		return "NFS over " + srv.proto()
	}
	if n := srv.negotiated(); n != "" {
		return n
	}
	if s, r, ok := traceInlineThresh(); ok {
		return fmt.Sprintf("send/recv %d/%d (xprtrdma_inline_thresh)", s, r)
	}
	return ""
}

// measure runs one cell: a warm-up, then the timed section between two
// snapshots of every counter.
func (r *runner) measure(ctx context.Context, c Cell, srv server, op opFunc, client func() (map[string]uint64, error), negotiated func() string) {
	res := Result{Cell: c, Provider: r.label}
	d := r.spec.Duration
	runOps(ctx, c.InFlight, min(d/4, 500*time.Millisecond), op)
	before, err1 := r.snapshot(srv, client)
	m := runOps(ctx, c.InFlight, d, op)
	after, err2 := r.snapshot(srv, client)
	res.fill(m, after.sub(before))
	for _, err := range []error{err1, err2} {
		if err != nil && res.Err == "" {
			res.Err = err.Error()
		}
	}
	res.Negotiated = negotiated()
	r.report(res)
}

// snapshot reads the client's, the server's and rxe's counters, and in
// the VM its CPU time.
func (r *runner) snapshot(srv server, client func() (map[string]uint64, error)) (counters, error) {
	c := counters{}
	cm, err := client()
	if err != nil {
		return c, err
	}
	c.merge("client.", cm)
	sm, err := srv.snapshot()
	if err != nil {
		return c, err
	}
	c.merge("server.", sm)
	if r.rxe && srv.proto() == "rdma" {
		xm, err := rxeSnapshot()
		if err != nil {
			return c, err
		}
		c.merge("rxe.", xm)
	}
	if r.rxe {
		vm, err := vmCPUSnapshot()
		if err != nil {
			return c, err
		}
		c.merge("vm.", vm)
	}
	return c, nil
}
