package bench

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
	"golang.org/x/sys/unix"
)

// ClientGoNFS names the Go NFS client's rows of the matrix.
const ClientGoNFS = "go-nfs"

// matrixInlines are the matrix's inline settings: the RFC 8166 default,
// the Linux default and the largest the Linux client accepts.
var matrixInlines = []int{1024, 4096, 65536}

// MatrixRow is one cell of the interoperability matrix.
type MatrixRow struct {
	Client string `json:"client"` // "kernel", "go-nfs" (package nfs/client), "go" (our requester: NULL only)
	Server string `json:"server"`
	Inline int    `json:"inline"`
	R      bool   `json:"r"` // remote invalidation offered
	// V2: the Go client offered RPC-over-RDMA version 2 (docs/v2.md), to
	// rdma-nfsd run with -rpcrdma-v2, which must take it, or to knfsd,
	// which must refuse it (version 1 on the same connection).
	V2      bool    `json:"v2,omitempty"`
	Status  string  `json:"status"` // "ok", "FAIL" or "n/a"
	Ours    string  `json:"ours"`   // the settings our side reports
	Kernel  string  `json:"kernel"` // the settings the kernel reports
	Checks  string  `json:"checks"` // what was checked
	Seconds float64 `json:"seconds"`
	Err     string  `json:"error,omitempty"`
}

// String is the row's line.
func (m MatrixRow) String() string {
	r := "off"
	if m.R {
		r = "on"
	}
	client := m.Client
	if m.V2 {
		client += "/v2"
	}
	s := fmt.Sprintf("%-9s %-9s %5d R=%-3s %-4s %5.1fs", client, m.Server, m.Inline, r, m.Status, m.Seconds)
	if m.Err != "" {
		return s + "  " + m.Err
	}
	return s + "  " + m.Checks
}

// guestMatrix runs every cell of the interoperability matrix in this boot.
func guestMatrix(ctx context.Context, spec Spec, bin string, out, stdout io.Writer) error {
	servers := []server{newRdmaNfsd(bin, "rdmacore", vmServerIP, goExportRoot+"/matrix"), newKnfsd()}
	inlines := spec.Inlines
	if len(inlines) == 0 {
		inlines = matrixInlines
	}
	enc := json.NewEncoder(out)
	emit := func(m MatrixRow) {
		_ = enc.Encode(m)
		b, _ := json.Marshal(m)
		fmt.Fprintf(stdout, "%s%s\n", tagMatrix, b)
	}
	k := &kernelClient{mnt: "/mnt/matrix"}
	for _, srv := range servers {
		for _, inline := range inlines {
			for _, r := range []bool{true, false} {
				t0 := time.Now()
				row := MatrixRow{Client: ClientKernel, Server: srv.name(), Inline: inline, R: r}
				if srv.name() == ServerKnfsd && !r {
					row.Status, row.Checks = "n/a", "knfsd always offers remote invalidation and the kernel client always accepts it"
					emit(row)
				} else {
					matrixKernelCell(ctx, srv, k, &row)
					row.Seconds = time.Since(t0).Seconds()
					emit(row)
				}
				t0 = time.Now()
				grow := MatrixRow{Client: ClientGo, Server: srv.name(), Inline: inline, R: r}
				matrixGoCell(ctx, srv, &grow)
				grow.Seconds = time.Since(t0).Seconds()
				emit(grow)
				srv.stop()
				// The version axis: the Go client offering version 2.
				t0 = time.Now()
				v2 := MatrixRow{Client: ClientGo, Server: srv.name(), Inline: inline, R: r, V2: true}
				stop := withVersion2(srv)
				matrixGoCell(ctx, srv, &v2)
				v2.Seconds = time.Since(t0).Seconds()
				emit(v2)
				srv.stop()
				stop()
			}
		}
	}
	return nil
}

// withVersion2 makes rdma-nfsd, if srv is, accept RPC-over-RDMA version 2
// (-rpcrdma-v2) from its next start, and returns what undoes it.
func withVersion2(srv server) func() {
	g, ok := srv.(*rdmaNfsd)
	if !ok {
		return func() {}
	}
	extra := g.extra
	g.extra = append(slices.Clip(extra), "-rpcrdma-v2")
	return func() { g.extra = extra }
}

// matrixFiles are the sizes the matrix writes and reads back: inline at
// every setting, across each threshold, one chunk, several WRITEs.
var matrixFiles = []int{100, 1024, 2048, 3000, 8192, 65537, 1 << 20}

// matrixKernelCell mounts srv with the kernel client at one setting and
// checks it: the thresholds both sides negotiated, the files' data through
// the mount (O_DIRECT) and on the server's disk, the chunks a 2 KiB WRITE,
// a 2 KiB READ and an 8 KiB READ use (mountstats), and who invalidated a
// 128 KiB READ's Write chunk.
func matrixKernelCell(ctx context.Context, srv server, k *kernelClient, row *MatrixRow) {
	fail := func(err error) { row.Status, row.Err = "FAIL", err.Error() }
	if err := srv.start(ctx, row.Inline, !row.R); err != nil {
		fail(err)
		return
	}
	clearTrace()
	if err := k.mount(srv, row.Inline); err != nil {
		fail(err)
		return
	}
	defer func() {
		if err := k.umount(); err != nil && row.Err == "" {
			fail(err)
		}
	}()
	var checks []string
	// Negotiated thresholds: the kernel's tracepoint, and ours.
	s, r, ok := traceInlineThresh()
	if !ok {
		fail(errors.New("no xprtrdma_inline_thresh event: the kernel's negotiation is not visible"))
		return
	}
	row.Kernel = fmt.Sprintf("neg %d/%d", s, r)
	if s != row.Inline || r != row.Inline {
		fail(fmt.Errorf("the kernel negotiated send/recv %d/%d, want %d/%d", s, r, row.Inline, row.Inline))
		return
	}
	if g, ok := srv.(*rdmaNfsd); ok {
		line := g.acceptedLine()
		row.Ours = g.negotiated()
		want := fmt.Sprintf("send_inline=%d recv_inline=%d send_with_invalidate=%v", row.Inline, row.Inline, row.R)
		if !strings.Contains(line, want) {
			fail(fmt.Errorf("rdma-nfsd's connection line lacks %q: %s", want, line))
			return
		}
	}
	checks = append(checks, "negotiated")
	// Data.
	_, dir := srv.export()
	for i, n := range matrixFiles {
		name := fmt.Sprintf("m-%d-%d", i, n)
		if err := writeReadBack(filepath.Join(k.mnt, name), filepath.Join(dir, name), n); err != nil {
			fail(err)
			return
		}
	}
	checks = append(checks, fmt.Sprintf("%d files", len(matrixFiles)))
	// Chunks: what the threshold changes.
	probes := []struct {
		what  string
		write bool
		size  int
		field string
		want  uint64
	}{
		{"2 KiB WRITE", true, 2048, "read_chunk_count", b2u(row.Inline < 4096)},
		{"2 KiB READ", false, 2048, "write_chunk_count", b2u(row.Inline < 4096)},
		{"8 KiB READ", false, 8192, "write_chunk_count", b2u(row.Inline <= 8192)},
	}
	for _, p := range probes {
		got, err := k.probe(p.write, p.size, p.field)
		if err != nil {
			fail(fmt.Errorf("%s: %w", p.what, err))
			return
		}
		if got != p.want {
			fail(fmt.Errorf("%s: %s grew by %d, want %d at inline %d", p.what, p.field, got, p.want, row.Inline))
			return
		}
	}
	checks = append(checks, "chunks")
	// Remote invalidation: the 128 KiB READ's Write chunk is invalidated
	// by the server's Send With Invalidate (R on) or by the client.
	got, err := k.probe(false, 128<<10, "local_inv_needed")
	if err != nil {
		fail(fmt.Errorf("128 KiB READ: %w", err))
		return
	}
	if row.R != (got == 0) {
		fail(fmt.Errorf("128 KiB READ with R=%v: the client invalidated %d MRs itself", row.R, got))
		return
	}
	checks = append(checks, fmt.Sprintf("invalidation (local %d)", got))
	row.Status, row.Checks = "ok", strings.Join(checks, ", ")
}

func b2u(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// probe does one O_DIRECT READ or WRITE of size bytes on a file of its
// own and returns how much the mountstats counter field grew.
func (k *kernelClient) probe(write bool, size int, field string) (uint64, error) {
	name := filepath.Join(k.mnt, fmt.Sprintf("probe-%d", size))
	buf, err := alignedBuf(size)
	if err != nil {
		return 0, err
	}
	defer unix.Munmap(buf[:cap(buf)])
	if !write {
		if err := os.WriteFile(name, make([]byte, size), 0o644); err != nil {
			return 0, err
		}
	}
	flags := unix.O_RDONLY
	if write {
		flags = unix.O_WRONLY | unix.O_CREAT
	}
	fd, err := unix.Open(name, flags|unix.O_DIRECT, 0o644)
	if err != nil {
		return 0, err
	}
	defer unix.Close(fd)
	before, _, err := k.xprt()
	if err != nil {
		return 0, err
	}
	var n int
	if write {
		n, err = unix.Pwrite(fd, buf, 0)
	} else {
		n, err = unix.Pread(fd, buf, 0)
	}
	if err == nil && n != size {
		err = fmt.Errorf("%d of %d bytes", n, size)
	}
	if err != nil {
		return 0, err
	}
	after, _, err := k.xprt()
	if err != nil {
		return 0, err
	}
	return after[field] - before[field], nil
}

// writeReadBack writes n random bytes to path with O_DIRECT, reads them
// back with O_DIRECT (past the client's cache) and from the server's disk
// at disk, and compares.
func writeReadBack(path, disk string, n int) error {
	buf, err := alignedBuf(n)
	if err != nil {
		return err
	}
	defer unix.Munmap(buf[:cap(buf)])
	_, _ = crand.Read(buf)
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CREAT|unix.O_DIRECT, 0o644)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if w, err := unix.Pwrite(fd, buf, 0); err != nil || w != n {
		return fmt.Errorf("%s: wrote %d of %d: %v", path, w, n, err)
	}
	got, err := alignedBuf(n)
	if err != nil {
		return err
	}
	defer unix.Munmap(got[:cap(got)])
	if r, err := unix.Pread(fd, got, 0); err != nil || r != n {
		return fmt.Errorf("%s: read %d of %d: %v", path, r, n, err)
	}
	if !bytes.Equal(got, buf) {
		return fmt.Errorf("%s: the %d bytes read back differ", path, n)
	}
	onDisk, err := os.ReadFile(disk)
	if err != nil {
		return err
	}
	if !bytes.Equal(onDisk, buf) {
		return fmt.Errorf("%s: the server's file differs (%d bytes)", disk, len(onDisk))
	}
	return nil
}

// matrixGoCell is the Go client's row: the first registered Go NFS client
// (package nfs/client) mounts and checks the negotiated settings, the data,
// the chunks and the invalidations (goNFSSession.Check); without one, our
// requester connects, checks the negotiated settings and makes 100 NULL
// calls.
func matrixGoCell(ctx context.Context, srv server, row *MatrixRow) {
	fail := func(err error) { row.Status, row.Err = "FAIL", err.Error() }
	if g, ok := srv.(*rdmaNfsd); ok && g.cmd == nil {
		if err := srv.start(ctx, row.Inline, !row.R); err != nil {
			fail(err)
			return
		}
	}
	if k, ok := srv.(knfsd); ok {
		if err := k.start(ctx, row.Inline, false); err != nil {
			fail(err)
			return
		}
	}
	p := &rdmacore.Provider{LocalAddr: vmClientIP}
	if len(goClientCells) > 0 {
		gc := goClientCells[0]
		path, disk := srv.export()
		// Offering version 2 (row.V2), rdma-nfsd must take it (Open
		// checks) and knfsd refuse it: the same checks then run over
		// version 1 on the connection the offer opened.
		_, isKnfsd := srv.(knfsd)
		s, err := gc.Open(ctx, goOpen{Provider: p, Addr: srv.rdmaAddr(), MountAddr: mountAddrOf(srv), ExportPath: path,
			Inline: row.Inline, NoRI: !row.R, Offer2: row.V2, Version2: row.V2 && !isKnfsd})
		if err != nil {
			fail(err)
			return
		}
		defer s.Close()
		row.Client, row.Ours = ClientGoNFS, s.Negotiated()
		if want := " version 1"; row.V2 && isKnfsd && !strings.HasSuffix(row.Ours, want) {
			fail(fmt.Errorf("knfsd and a Go client offering version 2: %s, want%s", row.Ours, want))
			return
		}
		checks, err := s.Check(ctx, disk)
		if err != nil {
			fail(err)
			return
		}
		row.Status, row.Checks = "ok", checks
		return
	}
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, isKnfsd := srv.(knfsd)
	cfg := transport.Config{Provider: p, InlineSend: row.Inline, InlineRecv: row.Inline, Binding: nfs.Binding{},
		NoRemoteInvalidate: !row.R, OfferVersion2: row.V2}
	g, err := dialGoCfg(dctx, srv.rdmaAddr(), &cfg)
	if err != nil {
		fail(err)
		return
	}
	defer g.close()
	n := g.conn.Stats().Negotiated
	row.Ours = g.negotiated()
	if err := checkVersion(g.conn, row.V2 && !isKnfsd); err != nil || row.V2 && isKnfsd && n.Version != 1 {
		fail(fmt.Errorf("offering version 2 (%v) to %s: %s", row.V2, srv.name(), row.Ours))
		return
	}
	if n.SendInline != row.Inline || n.RecvInline != row.Inline || n.LocalR != row.R {
		fail(fmt.Errorf("negotiated %s, want send/recv %d/%d and R=%v", row.Ours, row.Inline, row.Inline, row.R))
		return
	}
	op := g.nullOps(1)
	for range 100 {
		if _, err := op(0); err != nil {
			fail(fmt.Errorf("NULL: %w", err))
			return
		}
	}
	row.Status, row.Checks = "ok", "negotiated, 100 NULL (no Go NFS client registered)"
}
