package bench

import (
	"bytes"
	"context"
	crand "crypto/rand"
	"fmt"
	"io"
	"net"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/transport"
)

// nfsClient is the Go NFS client of package nfs/client (client.Mount,
// *client.Client) as the bench's goNFSClient. Its cells are the kernel
// client's in the form a program without a page cache takes (RFC 1813
// procedures called directly, each worker goroutine one call in flight):
//
//   - read: Client.Read of Size bytes at a random Size-aligned offset of a
//     16 MiB file (one NFSv3 READ up to rsize, as the kernel's O_DIRECT
//     pread; larger sizes READs of rsize all in flight at once, as the
//     kernel issues them);
//   - write: Client.Write of Size bytes, FILE_SYNC, each worker over a file
//     of its own (one NFSv3 WRITE FILE_SYNC up to wsize, as the kernel's
//     O_DIRECT pwrite of at most wsize bytes, which Linux sends FILE_SYNC;
//     larger sizes WRITEs of wsize all in flight at once);
//   - getattr: Client.Getattr of the 16 MiB file (one GETATTR, as fstat on
//     the noac mount);
//   - create: CREATE GUARDED of a new file and a FILE_SYNC WRITE of Size
//     bytes (2 RPCs; the kernel's open O_CREAT|O_EXCL, write, close makes
//     CREATE EXCLUSIVE, SETATTR, WRITE and GETATTRs).
type nfsClient struct{}

func init() { goClientCells = append(goClientCells, nfsClient{}) }

// Supports is every NFS workload; NULL stays with goRequester.
func (nfsClient) Supports(w string) bool {
	return w == WorkRead || w == WorkWrite || w == WorkGetattr || w == WorkCreate || w == WorkLookup || w == WorkReaddir
}

// readdirEntries is the size of the directory a readdir cell lists: the
// files and ".", "..", in one READDIRPLUS reply (about 150 bytes an
// entry, a Reply chunk at every inline setting below 16 KiB).
const readdirEntries = 64

// Open mounts p.ExportPath with client.Mount (MNT over TCP, NFS over
// RPC-over-RDMA at the port of p.Addr, FSINFO) offering p.Inline each way
// (RFC 8797) and makes a directory of its own for its files.
func (nfsClient) Open(ctx context.Context, p goOpen) (goNFSSession, error) {
	host, port, err := net.SplitHostPort(p.Addr)
	if err != nil {
		return nil, fmt.Errorf("go-nfs: %w", err)
	}
	rdmaPort, err := strconv.Atoi(port)
	if err != nil {
		return nil, fmt.Errorf("go-nfs: port %q: %w", port, err)
	}
	mctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	exp, err := client.Mount(mctx, host, p.ExportPath, &client.MountOptions{
		Client: client.Config{Transport: transport.Config{Provider: p.Provider, InlineSend: p.Inline,
			InlineRecv: p.Inline, NoRemoteInvalidate: p.NoRI, OfferVersion2: p.Version2 || p.Offer2}},
		RDMAPort:  rdmaPort,
		MountAddr: p.MountAddr,
	})
	if err != nil {
		return nil, fmt.Errorf("go-nfs: mounting %s:%s: %w", host, p.ExportPath, err)
	}
	if err := checkVersion(exp.Client.Conn(), p.Version2); err != nil {
		exp.Close()
		return nil, fmt.Errorf("go-nfs: %w", err)
	}
	s := &nfsSession{exp: exp, c: exp.Client, inline: p.Inline, noRI: p.NoRI,
		dir: fmt.Sprintf("gobench-%d-%d", p.Inline, time.Now().UnixNano())}
	if err := exp.Mkdir(mctx, s.dir, 0o755); err != nil {
		exp.Close()
		return nil, fmt.Errorf("go-nfs: %w", err)
	}
	if s.dirFH, _, err = exp.Lookup(mctx, s.dir, false); err != nil {
		exp.Close()
		return nil, fmt.Errorf("go-nfs: %w", err)
	}
	return s, nil
}

// nfsSession is one mount of the Go NFS client.
type nfsSession struct {
	exp    *client.Export
	c      *client.Client
	inline int
	noRI   bool
	dir    string // the session's directory, relative to the export root
	dirFH  client.FH
	rfile  client.FH // the 16 MiB file of READ and GETATTR, made on first use
	cells  int
}

// callCtx is the context of every call of a cell: one that never ends, as
// for the NULL cells (goRequester) and as a program that wants the
// zero-copy path uses (transport.Conn.CallInto exposes the caller's buffer
// only then). A lost or silent connection still fails the cell rather than
// hang the run: the Conn's ReconnectPolicy.CallTimeout (60 s by default)
// drops it and fails its calls. A timer per call would be work the kernel
// client's cells do not pay.
var callCtx = context.Background()

// prepare writes the 16 MiB file READ and GETATTR cells use, through
// client.File (UNSTABLE WRITEs, then COMMIT), once per session.
func (s *nfsSession) prepare(ctx context.Context) error {
	if s.rfile != nil {
		return nil
	}
	name := path.Join(s.dir, "rfile")
	f, err := s.exp.Create(ctx, name)
	if err != nil {
		return err
	}
	if err := writeReadFile(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	s.rfile = f.Handle()
	return nil
}

// create makes (or truncates) name in the session's directory and returns
// its handle.
func (s *nfsSession) create(ctx context.Context, name string, mode client.CreateMode) (client.FH, error) {
	perm, size := uint32(0o644), uint64(0)
	how := client.CreateHow{Mode: mode, Attr: &client.SetAttr{Mode: &perm}}
	if mode == client.Unchecked {
		how.Attr.Size = &size
	}
	fh, _, err := s.c.Create(ctx, s.dirFH, name, how)
	return fh, err
}

// Ops returns the operation of cell c; see nfsClient for what each is.
func (s *nfsSession) Ops(c Cell) (opFunc, func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s.cells++
	bufs := make([][]byte, c.InFlight)
	for w := range bufs {
		bufs[w] = make([]byte, c.Size)
		_, _ = crand.Read(bufs[w])
	}
	slots := max(1, readFileSize/max(c.Size, 1))
	undo := func() {}
	switch c.Workload {
	case WorkRead, WorkGetattr, WorkLookup:
		if err := s.prepare(ctx); err != nil {
			return nil, nil, fmt.Errorf("go-nfs: preparing the file: %w", err)
		}
		switch c.Workload {
		case WorkGetattr:
			return func(int) (int, error) {
				_, err := s.c.Getattr(callCtx, s.rfile)
				return 0, err
			}, undo, nil
		case WorkLookup:
			return func(int) (int, error) {
				_, _, err := s.c.Lookup(callCtx, s.dirFH, "rfile")
				return 0, err
			}, undo, nil
		}
		rngs := workerRands(c.InFlight)
		return func(w int) (int, error) {
			return s.readAt(callCtx, s.rfile, uint64(rngs[w].IntN(slots))*uint64(c.Size), bufs[w])
		}, undo, nil
	case WorkWrite:
		fhs := make([]client.FH, c.InFlight)
		for w := range fhs {
			var err error
			if fhs[w], err = s.create(ctx, fmt.Sprintf("wfile-%d", w), client.Unchecked); err != nil {
				return nil, nil, fmt.Errorf("go-nfs: %w", err)
			}
		}
		next := make([]uint64, c.InFlight)
		// The files go after the cell: a run writes up to
		// readFileSize per file and in flight, and the exports are
		// tmpfs in the VM's memory.
		undo = func() {
			for w := range fhs {
				s.remove(fmt.Sprintf("wfile-%d", w))
			}
		}
		return func(w int) (int, error) {
			off := next[w] % uint64(slots) * uint64(c.Size)
			next[w]++
			return s.writeAt(callCtx, fhs[w], off, bufs[w])
		}, undo, nil
	case WorkReaddir:
		dir, undo, err := s.cellDir(ctx, "readdir", c)
		if err != nil {
			return nil, nil, err
		}
		for i := range readdirEntries - 2 {
			mode := uint32(0o644)
			if _, _, err := s.c.Create(ctx, dir, fmt.Sprintf("entry-%03d", i), client.CreateHow{Mode: client.Guarded, Attr: &client.SetAttr{Mode: &mode}}); err != nil {
				undo()
				return nil, nil, fmt.Errorf("go-nfs: %w", err)
			}
		}
		return func(int) (int, error) {
			page, err := s.c.Readdirplus(callCtx, dir, 0, [8]byte{}, 16<<10, 64<<10)
			if err == nil && (len(page.Entries) != readdirEntries || !page.EOF) {
				err = fmt.Errorf("READDIRPLUS: %d entries (EOF %v), want %d in one reply", len(page.Entries), page.EOF, readdirEntries)
			}
			return 0, err
		}, undo, nil
	case WorkCreate:
		dir, undo, err := s.cellDir(ctx, "create", c)
		if err != nil {
			return nil, nil, err
		}
		var seq atomic.Uint64
		return func(w int) (int, error) {
			mode := uint32(0o644)
			fh, _, err := s.c.Create(callCtx, dir, fmt.Sprintf("f%d", seq.Add(1)), client.CreateHow{Mode: client.Guarded, Attr: &client.SetAttr{Mode: &mode}})
			if err != nil {
				return 0, err
			}
			return s.writeAt(callCtx, fh, 0, bufs[w])
		}, undo, nil
	}
	return nil, nil, fmt.Errorf("go-nfs: no %s workload", c.Workload)
}

// cellDir makes a directory of cell c's own in the session's directory,
// named after what and the cell, and returns it and what removes it with
// its files.
func (s *nfsSession) cellDir(ctx context.Context, what string, c Cell) (client.FH, func(), error) {
	name := fmt.Sprintf("%s-%d-%d-%d", what, c.Inline, c.InFlight, s.cells)
	perm := uint32(0o755)
	dir, _, err := s.c.Mkdir(ctx, s.dirFH, name, &client.SetAttr{Mode: &perm})
	if err != nil {
		return nil, nil, fmt.Errorf("go-nfs: %w", err)
	}
	return dir, func() { s.removeDir(dir, name) }, nil
}

// remove removes name from the session's directory, if it is there.
func (s *nfsSession) remove(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = s.c.Remove(ctx, s.dirFH, name)
}

// removeDir removes the directory name (handle dir) of the session's
// directory and the files in it.
func (s *nfsSession) removeDir(dir client.FH, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	entries, err := s.c.ReadDirAll(ctx, dir, false)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.Name != "." && e.Name != ".." {
			_ = s.c.Remove(ctx, dir, e.Name)
		}
	}
	_ = s.c.Rmdir(ctx, s.dirFH, name)
}

// readAt fills p from off with READs of at most rsize, all in flight at
// once, as the kernel client issues the pieces of an O_DIRECT pread larger
// than rsize (nfs_direct_read_schedule_iovec): a 1 MiB read of a server
// whose rsize is 256 KiB is four READs at a time there too.
func (s *nfsSession) readAt(ctx context.Context, fh client.FH, off uint64, p []byte) (int, error) {
	rsize, _ := s.c.IOSize()
	return inPieces(len(p), rsize, func(lo, hi int) (int, error) {
		return s.readPiece(ctx, fh, off+uint64(lo), p[lo:hi])
	})
}

// readPiece fills p from off with READs, one after the other while the
// server returns less.
func (s *nfsSession) readPiece(ctx context.Context, fh client.FH, off uint64, p []byte) (int, error) {
	done := 0
	for done < len(p) {
		n, eof, err := s.c.Read(ctx, fh, off+uint64(done), p[done:])
		done += n
		if err != nil {
			return done, err
		}
		if n == 0 || (eof && done < len(p)) {
			return done, fmt.Errorf("short READ: %d of %d bytes", done, len(p))
		}
	}
	return done, nil
}

// writeAt writes p at off with FILE_SYNC WRITEs of at most wsize, all in
// flight at once, as the kernel client issues the pieces of an O_DIRECT
// pwrite larger than wsize.
func (s *nfsSession) writeAt(ctx context.Context, fh client.FH, off uint64, p []byte) (int, error) {
	_, wsize := s.c.IOSize()
	return inPieces(len(p), wsize, func(lo, hi int) (int, error) {
		return s.writePiece(ctx, fh, off+uint64(lo), p[lo:hi])
	})
}

// writePiece writes p at off with FILE_SYNC WRITEs, one after the other
// while the server takes less.
func (s *nfsSession) writePiece(ctx context.Context, fh client.FH, off uint64, p []byte) (int, error) {
	done := 0
	for done < len(p) {
		res, err := s.c.Write(ctx, fh, off+uint64(done), p[done:], client.FileSync)
		done += res.Count
		if err != nil {
			return done, err
		}
		if res.Count == 0 || res.Committed != client.FileSync {
			return done, fmt.Errorf("WRITE: %d of %d bytes, committed %d", done, len(p), res.Committed)
		}
	}
	return done, nil
}

// inPieces runs piece over [0, n) cut into pieces of at most size bytes,
// all at once (one goroutine each beyond the first), and returns the bytes
// they did and the first piece's error. One piece runs on the caller's
// goroutine alone.
func inPieces(n, size int, piece func(lo, hi int) (int, error)) (int, error) {
	if n <= size || size <= 0 {
		return piece(0, n)
	}
	k := (n + size - 1) / size
	done := make([]int, k)
	errs := make([]error, k)
	var wg sync.WaitGroup
	for i := 1; i < k; i++ {
		wg.Go(func() { done[i], errs[i] = piece(i*size, min(n, (i+1)*size)) })
	}
	done[0], errs[0] = piece(0, size)
	wg.Wait()
	total := 0
	for i := range k {
		total += done[i]
	}
	for _, err := range errs {
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// Counters are the connection's transport.Stats under fill's names: every
// call is one Send (the RPC count), every reply one Receive.
func (s *nfsSession) Counters() map[string]uint64 {
	st := s.c.Conn().Stats()
	return map[string]uint64{"rpcs": st.Sends, "sends": st.Sends, "recvs": st.Recvs,
		"read_chunks": st.ReadChunks, "write_chunks": st.WriteChunks, "reply_chunks": st.ReplyChunks,
		"local_inv": st.LocalInvalidations, "remote_inv": st.RemoteInvalidations, "send_posts": st.SendPosts}
}

// Negotiated is the connection's RFC 8797 outcome as the client sees it.
func (s *nfsSession) Negotiated() string { return negotiatedString(s.c.Conn().Stats().Negotiated) }

// Close removes nothing (the servers' exports are scratch space) and
// unmounts.
func (s *nfsSession) Close() error { return s.exp.Close() }

// Check is the matrix's test of one mount (RFC 8166, RFC 8267, RFC 8797):
// the thresholds negotiated and our R bit; the files of matrixFiles
// written through client.File (UNSTABLE WRITEs and COMMIT), read back with
// direct READs and through client.File, and compared with the server's disk
// under disk (when not ""); the chunks a 2 KiB WRITE and READ and an 8 KiB
// READ use; who invalidated a 128 KiB READ's Write chunk. It returns what
// it checked.
func (s *nfsSession) Check(ctx context.Context, disk string) (string, error) {
	var checks []string
	n := s.c.Conn().Stats().Negotiated
	if n.SendInline != s.inline || n.RecvInline != s.inline || n.LocalR == s.noRI {
		return "", fmt.Errorf("negotiated %s (our R=%v), want send/recv %d/%d and R=%v", s.Negotiated(), n.LocalR, s.inline, s.inline, !s.noRI)
	}
	checks = append(checks, "negotiated")
	for i, size := range matrixFiles {
		name := path.Join(s.dir, fmt.Sprintf("m-%d-%d", i, size))
		if err := s.writeReadBack(ctx, name, size, disk); err != nil {
			return "", err
		}
	}
	checks = append(checks, fmt.Sprintf("%d files", len(matrixFiles)))
	probes := []struct {
		what  string
		write bool
		size  int
		field func(transport.Stats) uint64
		want  uint64
	}{
		{"2 KiB WRITE: Read chunks", true, 2048, func(s transport.Stats) uint64 { return s.ReadChunks }, b2u(s.inline < 4096)},
		{"2 KiB READ: Write chunks", false, 2048, func(s transport.Stats) uint64 { return s.WriteChunks }, b2u(s.inline < 4096)},
		{"8 KiB READ: Write chunks", false, 8192, func(s transport.Stats) uint64 { return s.WriteChunks }, b2u(s.inline <= 8192)},
	}
	for _, p := range probes {
		before, after, err := s.probe(ctx, p.write, p.size)
		if err != nil {
			return "", fmt.Errorf("%s: %w", p.what, err)
		}
		if got := p.field(after) - p.field(before); got != p.want {
			return "", fmt.Errorf("%s: %d, want %d at inline %d", p.what, got, p.want, s.inline)
		}
	}
	checks = append(checks, "chunks")
	before, after, err := s.probe(ctx, false, 128<<10)
	if err != nil {
		return "", fmt.Errorf("128 KiB READ: %w", err)
	}
	local := after.LocalInvalidations - before.LocalInvalidations
	remote := after.RemoteInvalidations - before.RemoteInvalidations
	if s.noRI != (local > 0) || s.noRI != (remote == 0) {
		return "", fmt.Errorf("128 KiB READ with R=%v: %d local and %d remote invalidations", !s.noRI, local, remote)
	}
	checks = append(checks, fmt.Sprintf("invalidation (local %d, remote %d)", local, remote))
	return strings.Join(checks, ", "), nil
}

// probe makes one direct READ or FILE_SYNC WRITE of size bytes on a file
// of its own and returns the connection's counters before and after.
func (s *nfsSession) probe(ctx context.Context, write bool, size int) (before, after transport.Stats, err error) {
	fh, err := s.create(ctx, fmt.Sprintf("probe-%d", size), client.Unchecked)
	if err != nil {
		return before, after, err
	}
	buf := make([]byte, size)
	if !write {
		if _, err := s.c.Write(ctx, fh, 0, buf, client.FileSync); err != nil {
			return before, after, err
		}
	}
	before = s.c.Conn().Stats()
	var got int
	if write {
		var res client.WriteResult
		res, err = s.c.Write(ctx, fh, 0, buf, client.FileSync)
		got = res.Count
	} else {
		got, _, err = s.c.Read(ctx, fh, 0, buf)
	}
	if err == nil && got != size {
		err = fmt.Errorf("%d of %d bytes", got, size)
	}
	return before, s.c.Conn().Stats(), err
}

// writeReadBack writes n random bytes to name through client.File, reads them
// back with direct READs of at most rsize and through client.File, and
// compares all of them, and the server's file under disk, with what was
// written.
func (s *nfsSession) writeReadBack(ctx context.Context, name string, n int, disk string) error {
	data := make([]byte, n)
	_, _ = crand.Read(data)
	f, err := s.exp.Create(ctx, name)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", name, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	got := make([]byte, n)
	if _, err := s.readAt(ctx, f.Handle(), 0, got); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !bytes.Equal(got, data) {
		return fmt.Errorf("%s: the %d bytes READ back differ", name, n)
	}
	rf, err := s.exp.Open(ctx, name)
	if err != nil {
		return err
	}
	all, err := io.ReadAll(rf)
	rf.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if !bytes.Equal(all, data) {
		return fmt.Errorf("%s: the %d bytes read through client.File differ (%d read)", name, n, len(all))
	}
	if disk == "" {
		return nil
	}
	onDisk, err := os.ReadFile(filepath.Join(disk, filepath.FromSlash(name)))
	if err != nil {
		return err
	}
	if !bytes.Equal(onDisk, data) {
		return fmt.Errorf("%s: the server's file differs (%d bytes)", name, len(onDisk))
	}
	return nil
}

// mountAddrOf is where a Go client finds srv's MOUNT service: rdma-nfsd's
// TCP listener (it runs without rpcbind), or "" (ask the portmapper on the
// server host, as for knfsd).
func mountAddrOf(srv server) string {
	g, ok := srv.(*rdmaNfsd)
	if !ok {
		return ""
	}
	if a := g.boundMount(); a != "" {
		return a
	}
	return net.JoinHostPort(g.addr, strconv.Itoa(g.tcpPort))
}
