//go:build e2eguest

// The tests in this file run inside the VM, started by e2e/knfsd_test.go
// after rxevm-nfsd-start: our requester on rxe1 (10.0.0.2) against knfsd
// on rxe0 (10.0.0.1), NFS/RDMA port 20049.

package knfsdclient_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"github.com/go-rpcrdma/rpcrdma/e2e/internal/guesttest"
	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
	"github.com/go-rpcrdma/rpcrdma/xdr"
	"github.com/stretchr/testify/require"
)

const (
	serverIP = "10.0.0.1" // rxe0, knfsd
	clientIP = "10.0.0.2" // rxe1, our requester
	// nfsRDMAAddr is knfsd's RPC-over-RDMA listener (rxevm-nfsd-start
	// writes "rdma 20049" to /proc/fs/nfsd/portlist).
	nfsRDMAAddr = serverIP + ":20049"
	// exportPath is the export, a tmpfs; the tests also look at it
	// directly, as the kernel's own view of what knfsd served.
	exportPath = "/export"

	// bigSize is far above the 4096-byte inline threshold both sides
	// negotiate.
	bigSize = 100 << 10
)

// linuxServerPrivateData is the RFC 8797 message knfsd sends with its CM
// accept (svc_rdma_accept): version 1, R clear, send and receive sizes
// coded 3 (4096 bytes).
var linuxServerPrivateData = []byte{0xf6, 0xab, 0x0e, 0x18, 0x01, 0x00, 0x03, 0x03}

// recordingProvider is a verbs.Provider that keeps each connection it
// dials with its raw private data, as the CM delivered it, so that a test
// can show exactly what Linux sent and, on failure, why a connection died.
type recordingProvider struct {
	verbs.Provider
	mu    sync.Mutex
	seen  [][]byte
	conns []verbs.Conn
}

// Dial implements verbs.Provider.
func (p *recordingProvider) Dial(ctx context.Context, addr string, opts *verbs.ConnOptions) (verbs.Conn, error) {
	c, err := p.Provider.Dial(ctx, addr, opts)
	if err == nil {
		p.mu.Lock()
		p.seen = append(p.seen, bytes.Clone(c.PeerPrivateData()))
		p.conns = append(p.conns, c)
		p.mu.Unlock()
	}
	return c, err
}

// privateData returns the private data of the only connection dialled.
func (p *recordingProvider) privateData(t testing.TB) []byte {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	require.Len(t, p.seen, 1, "connections dialled")
	return p.seen[0]
}

// logConnErrors logs why each dialled connection failed, if it did: the
// provider's own account (the first failed work completion and its
// device status).
func (p *recordingProvider) logConnErrors(t testing.TB) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, c := range p.conns {
		if err := c.Err(); err != nil && !errors.Is(err, verbs.ErrClosed) {
			t.Logf("verbs connection %d: %v", i, err)
		}
	}
}

// session is one requester connection to knfsd with the export's root.
type session struct {
	conn *transport.Conn
	rec  *recordingProvider
	nfs  nfsClient  // package nfs/client
	rpc  *rpcClient // raw calls (pipelining by hand, RDMA_ERROR)
	root []byte
}

// dialKnfsd connects a requester configured by cfg (Provider and Logger are
// set here) to knfsd and mounts the export, after clearing the trace of
// knfsd's svcrdma events. On failure the last of those events and the tail
// of the kernel log are added to the test's output.
func dialKnfsd(t *testing.T, cfg transport.Config) *session {
	t.Helper()
	t.Cleanup(func() {
		if t.Failed() {
			logServerTail(t)
			guesttest.LogKernelTail(t, 40)
		}
	})
	clearServerTrace(t)
	rec := &recordingProvider{Provider: &rdmacore.Provider{LocalAddr: clientIP}}
	t.Cleanup(func() {
		if t.Failed() {
			rec.logConnErrors(t)
		}
	})
	cfg.Provider = rec
	cfg.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})).With("test", t.Name())
	ctx, cancel := context.WithTimeout(context.Background(), ioGuard)
	defer cancel()
	c, err := transport.Dial(ctx, nfsRDMAAddr, &cfg)
	require.NoError(t, err, "dialling knfsd at %s", nfsRDMAAddr)
	require.NoError(t, c.SetDeadline(time.Now().Add(ioGuard)))
	t.Cleanup(func() { _ = c.Close() })
	// Root's AUTH_SYS credential, as the raw calls' (rpcClient).
	auth := client.Auth{UID: 0, GID: 0, GIDs: []uint32{0}, MachineName: "knfsdclient"}
	nc, err := client.New(c, &client.Config{Auth: &auth})
	require.NoError(t, err)
	return &session{conn: c, rec: rec, nfs: nfsClient{t, nc},
		rpc: newRDMAClient(c), root: mountRoot(t, serverIP, exportPath)}
}

// serverEvents returns what knfsd's svcrdma tracepoints recorded since the
// session began, logged, and checks that they report no error.
func (s *session) serverEvents(t *testing.T) serverEvents {
	t.Helper()
	ev := readServerEvents(t)
	t.Logf("knfsd's svcrdma events: %v", ev)
	ev.requireHealthy(t)
	return ev
}

// requireAttrs checks attributes from knfsd against the kernel's own view
// of the same file.
func requireAttrs(t *testing.T, a *client.Attr, path string) {
	t.Helper()
	var st syscall.Stat_t
	require.NoError(t, syscall.Stat(path, &st))
	require.Equal(t, st.Ino, a.FileID, "fileid of %s", path)
	require.Equal(t, st.Mode&0o7777, a.Mode, "mode of %s", path)
	require.EqualValues(t, st.Nlink, a.Nlink, "nlink of %s", path)
	require.Equal(t, st.Uid, a.UID, "uid of %s", path)
	require.Equal(t, st.Gid, a.GID, "gid of %s", path)
	require.EqualValues(t, st.Size, a.Size, "size of %s", path)
}

// requireClean checks the counters that must stay zero on a healthy
// connection.
func requireClean(t *testing.T, s transport.Stats) {
	t.Helper()
	require.Zero(t, s.BadReplies, "bad replies")
	require.Zero(t, s.BadXIDs, "replies with unknown XIDs")
	require.Zero(t, s.RemoteErrors, "RDMA_ERROR replies")
	require.Zero(t, s.Reconnects, "reconnections")
}

// TestKnfsdNullGetattr: NFSPROC3_NULL and a real GETATTR of the export's
// root, with what knfsd sent in its CM private data decoded and checked
// against the negotiated settings.
func TestKnfsdNullGetattr(t *testing.T) {
	s := dialKnfsd(t, transport.Config{})

	// The private data of knfsd's accept, as the CM delivered it (196
	// bytes on InfiniBand/RoCE, zero padded).
	raw := s.rec.privateData(t)
	require.GreaterOrEqual(t, len(raw), 8)
	require.Equal(t, linuxServerPrivateData, raw[:8], "knfsd's RFC 8797 message")
	require.Empty(t, bytes.Trim(raw[8:], "\x00"), "CM padding after the message")
	m, st := cmpriv.Parse(raw)
	require.Equal(t, cmpriv.StatusFound, st)
	require.Equal(t, cmpriv.Message{RemoteInvalidate: false, SendSize: 4096, RecvSize: 4096}, m)
	t.Logf("knfsd's CM private data: % x (%d bytes from the CM) = %v (%v)", raw[:8], len(raw), m, st)

	neg := s.conn.Stats().Negotiated
	require.Equal(t, "found", neg.PeerPrivateData)
	require.Equal(t, 4096, neg.SendInline)
	require.Equal(t, 4096, neg.RecvInline)
	require.False(t, neg.PeerR, "knfsd's R bit")
	require.True(t, neg.LocalR, "our R bit")
	// knfsd uses Send With Invalidate because WE set R (svc_rdma_accept:
	// sc_snd_w_inv from the client's flag); its own R bit says nothing
	// about what it accepts.
	require.True(t, neg.ExpectRemoteInvalidate)

	s.nfs.null()
	cs := s.conn.Stats()
	require.EqualValues(t, 1, cs.InlineCalls, "NULL goes inline")
	require.Zero(t, cs.ReplyChunks, "NULL's reply is known to fit inline: no Reply chunk")
	require.Zero(t, cs.RemoteInvalidations+cs.LocalInvalidations, "NULL exposes no memory")
	// A grant arrived with the reply: knfsd's constant credit grant.
	neg = s.conn.Stats().Negotiated
	t.Logf("negotiated with knfsd: %+v", neg)
	require.EqualValues(t, 64, neg.Credits, "knfsd's credit grant")

	a := s.nfs.getattr(s.root)
	require.Equal(t, client.TypeDir, a.Type, "type of the export's root")
	requireAttrs(t, a, exportPath)
	t.Logf("GETATTR of %s: type %v mode %#o nlink %d uid %d fileid %d", exportPath, a.Type, a.Mode, a.Nlink, a.UID, a.FileID)

	// Without an NFS binding the transport cannot bound a GETATTR reply:
	// it offered a Reply chunk, knfsd answered RDMA_NOMSG through it and
	// invalidated the call's one rkey with Send With Invalidate.
	cs = s.conn.Stats()
	require.EqualValues(t, 2, cs.InlineCalls, "inline calls")
	require.EqualValues(t, 1, cs.ReplyChunks, "Reply chunks offered")
	require.EqualValues(t, 1, cs.RemoteInvalidations, "replies by Send With Invalidate")
	require.Zero(t, cs.LocalInvalidations, "rkeys we had to invalidate ourselves")
	requireClean(t, cs)

	info := s.nfs.fsinfo(s.root)
	t.Logf("FSINFO: rtmax %d rtpref %d wtmax %d wtpref %d dtpref %d maxfilesize %d", info.RTMax, info.RTPref, info.WTMax, info.WTPref, info.DTPref, info.MaxFileSize)
	require.GreaterOrEqual(t, info.RTMax, uint32(bigSize), "rtmax")
	require.GreaterOrEqual(t, info.WTMax, uint32(bigSize), "wtmax")

	// knfsd's own record: three calls decoded, two replies through our
	// Reply chunk, each by Send With Invalidate of that chunk's rkey.
	ev := s.serverEvents(t)
	require.Equal(t, 3, ev.count["decode_rqst"], "calls knfsd decoded (NULL, GETATTR, FSINFO)")
	require.Equal(t, 2, ev.count["post_reply_chunk"], "replies knfsd wrote into our Reply chunk")
	require.Len(t, ev.invRKeys, 2, "replies knfsd sent by Send With Invalidate")
}

// TestKnfsdRead reads over RDMA a file written on the server's side: the
// READ replies exceed the inline threshold, so they come through our Reply
// chunk (RDMA Write by knfsd, then RDMA_NOMSG by Send With Invalidate).
func TestKnfsdRead(t *testing.T) {
	data := guesttest.Pattern(bigSize, 1)
	path := filepath.Join(exportPath, "read.bin")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	s := dialKnfsd(t, transport.Config{})

	h, st := s.nfs.lookup(s.root, "read.bin")
	require.Equal(t, nfsv3.NFS3_OK, st, "LOOKUP read.bin")
	a := s.nfs.getattr(h)
	require.Equal(t, client.TypeReg, a.Type)
	requireAttrs(t, a, path)

	got, eof := s.nfs.read(h, 0, bigSize)
	guesttest.RequireData(t, data, got, "100 KiB read")
	require.True(t, eof)
	got, eof = s.nfs.read(h, 12345, 5001)
	guesttest.RequireData(t, data[12345:17346], got, "read at an odd offset")
	require.False(t, eof)
	got, eof = s.nfs.read(h, bigSize-10, 4096)
	guesttest.RequireData(t, data[bigSize-10:], got, "read across the end")
	require.True(t, eof)
	got, eof = s.nfs.read(h, 7, 100)
	guesttest.RequireData(t, data[7:107], got, "small read")
	require.False(t, eof)

	cs := s.conn.Stats()
	t.Logf("requester stats after the reads: %+v", cs)
	require.EqualValues(t, 6, cs.ReplyChunks, "every call but NULL offers a Reply chunk (LOOKUP, GETATTR, 4 READs)")
	require.EqualValues(t, 6, cs.RemoteInvalidations, "knfsd invalidated each call's rkey")
	require.Zero(t, cs.LocalInvalidations)
	require.Zero(t, cs.LongCalls+cs.ReadChunkCalls, "every call fits inline")
	requireClean(t, cs)

	ev := s.serverEvents(t)
	require.Equal(t, 6, ev.count["decode_rqst"])
	require.Equal(t, 6, ev.count["post_reply_chunk"], "replies knfsd wrote into our Reply chunk")
	require.Len(t, ev.invRKeys, 6, "replies knfsd sent by Send With Invalidate")
}

// exposeOK lets a connection expose the caller's memory for calls whose
// context can end (the tests' contexts have timeouts): the transport does
// so only when it reconnects and retransmits, cancelling such a call
// costing the connection (transport.Conn.CallInto).
var exposeOK = transport.ReconnectPolicy{Enabled: true, Retransmit: true}

// TestKnfsdReadMax reads knfsd's largest READ (FSINFO rtmax) in one call,
// through the Reply chunk (no binding: the chunk is Config.MaxRPCSize,
// 1 MiB + 16 KiB, which svcrdma accepts: it bounds a Reply chunk by
// RPCSVC_MAXPAGES + 2 pages, 1 MiB + 20 KiB on 4 KiB pages) and through a
// Write chunk (the NFSv3 binding).
func TestKnfsdReadMax(t *testing.T) {
	for _, tc := range []struct {
		name    string
		binding transport.Binding
	}{{"ReplyChunk", nil}, {"WriteChunk", nfs.Binding{}}} {
		t.Run(tc.name, func(t *testing.T) {
			s := dialKnfsd(t, transport.Config{Binding: tc.binding, Reconnect: exposeOK})
			rtmax := int(s.nfs.fsinfo(s.root).RTMax)
			data := guesttest.Pattern(rtmax+1, 7)
			require.NoError(t, os.WriteFile(filepath.Join(exportPath, "rtmax.bin"), data, 0o644))
			h, st := s.nfs.lookup(s.root, "rtmax.bin")
			require.Equal(t, nfsv3.NFS3_OK, st)
			got, eof := s.nfs.read(h, 0, uint32(rtmax))
			guesttest.RequireData(t, data[:rtmax], got, "READ of rtmax (%d) bytes", rtmax)
			require.False(t, eof)

			cs := s.conn.Stats()
			t.Logf("READ of %d bytes; requester stats: %+v", rtmax, cs)
			if tc.binding == nil {
				require.EqualValues(t, 3, cs.ReplyChunks, "FSINFO, LOOKUP, READ")
			} else {
				require.EqualValues(t, 1, cs.WriteChunks, "the READ's Write chunk")
				require.EqualValues(t, 1, cs.DirectPlacements, "the Write chunk was the caller's buffer")
			}
			requireClean(t, cs)
			s.serverEvents(t)
		})
	}
}

// TestKnfsdWrite creates a file and writes more than the inline threshold:
// the WRITE goes as a Long Call (RDMA_NOMSG, position-zero Read chunk) that
// knfsd pulls with RDMA Read. The kernel's view of the file and a READ back
// must both match.
func TestKnfsdWrite(t *testing.T) {
	const name = "write.bin"
	path := filepath.Join(exportPath, name)
	_ = os.Remove(path)
	s := dialKnfsd(t, transport.Config{})

	h := s.nfs.create(s.root, name, 0o640)
	// An odd length: the opaque's XDR padding is part of the Long Call.
	data := guesttest.Pattern(bigSize+3, 2)
	s.nfs.write(h, 0, data)
	a := s.nfs.getattr(h)
	require.EqualValues(t, len(data), a.Size, "size after the WRITE")
	require.EqualValues(t, 0o640, a.Mode, "mode set by CREATE")
	requireAttrs(t, a, path)
	onDisk, err := os.ReadFile(path)
	require.NoError(t, err)
	guesttest.RequireData(t, data, onDisk, "what knfsd wrote, read locally")

	// A small WRITE goes inline.
	copy(data[50000:], "hello, knfsd")
	s.nfs.write(h, 50000, []byte("hello, knfsd"))
	onDisk, err = os.ReadFile(path)
	require.NoError(t, err)
	guesttest.RequireData(t, data, onDisk, "after the small WRITE")
	got, eof := s.nfs.read(h, 0, uint32(len(data)))
	require.True(t, eof)
	guesttest.RequireData(t, data, got, "read back over RDMA")

	cs := s.conn.Stats()
	t.Logf("requester stats after the writes: %+v", cs)
	require.EqualValues(t, 1, cs.LongCalls, "the large WRITE is a Long Call")
	require.GreaterOrEqual(t, cs.ChunkBytesOffered, uint64(len(data)), "bytes exposed for RDMA")
	// The Long Call's Read chunk (read-only) and its Reply chunk
	// (write-only) are two windows, two rkeys: knfsd invalidates remotely
	// only a call with one rkey (svc_rdma_get_inv_rkey), as for the Linux
	// client's separate MRs, so that call is invalidated locally.
	require.EqualValues(t, 1, cs.LocalInvalidations, "the Long Call with a Reply chunk (two rkeys) invalidated locally")
	requireClean(t, cs)

	// CREATE, WRITE, GETATTR, WRITE, READ; knfsd pulled the Long Call
	// with RDMA Read.
	ev := s.serverEvents(t)
	require.Equal(t, 5, ev.count["decode_rqst"])
	require.Equal(t, 1, ev.count["post_read_chunk"], "Read chunks knfsd pulled")
	require.Equal(t, 1, ev.count["decode_rseg"], "Read segments (position zero)")
	require.Len(t, ev.invRKeys, 4, "replies knfsd sent by Send With Invalidate (all but the Long Call's)")

	s.nfs.remove(s.root, name)
	_, st := s.nfs.lookup(s.root, name)
	require.Equal(t, nfsv3.NFS3ERR_NOENT, st)
	_, err = os.Stat(path)
	require.True(t, os.IsNotExist(err), "%s still exists: %v", path, err)
}

// TestKnfsdNoRemoteInvalidate: with R clear in our private data, knfsd
// never uses Send With Invalidate and we invalidate every rkey ourselves.
func TestKnfsdNoRemoteInvalidate(t *testing.T) {
	data := guesttest.Pattern(20000, 3)
	path := filepath.Join(exportPath, "noinv.bin")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	s := dialKnfsd(t, transport.Config{NoRemoteInvalidate: true})

	neg := s.conn.Stats().Negotiated
	t.Logf("negotiated with knfsd: %+v", neg)
	require.Equal(t, "found", neg.PeerPrivateData)
	require.False(t, neg.LocalR)
	require.False(t, neg.ExpectRemoteInvalidate)

	require.Equal(t, client.TypeDir, s.nfs.getattr(s.root).Type)
	h, st := s.nfs.lookup(s.root, "noinv.bin")
	require.Equal(t, nfsv3.NFS3_OK, st)
	got, eof := s.nfs.read(h, 0, uint32(len(data)))
	require.True(t, eof)
	guesttest.RequireData(t, data, got)
	s.nfs.write(h, 0, data[:9000])

	cs := s.conn.Stats()
	t.Logf("requester stats: %+v", cs)
	require.Zero(t, cs.RemoteInvalidations, "replies by Send With Invalidate")
	require.EqualValues(t, 4, cs.LocalInvalidations, "rkeys invalidated locally (GETATTR, LOOKUP, READ, WRITE)")
	require.EqualValues(t, 1, cs.LongCalls)
	requireClean(t, cs)

	ev := s.serverEvents(t)
	require.Equal(t, 4, ev.count["decode_rqst"])
	require.Equal(t, 1, ev.count["post_read_chunk"])
	require.Empty(t, ev.invRKeys, "knfsd used Send With Invalidate although we did not set R")
}

// TestKnfsdPipelined keeps many READs in flight on one connection, more
// than knfsd's 64 credits: the requester holds calls back for credits and
// matches the replies by XID.
func TestKnfsdPipelined(t *testing.T) {
	const calls = 100
	data := guesttest.Pattern(bigSize, 4)
	path := filepath.Join(exportPath, "pipe.bin")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	s := dialKnfsd(t, transport.Config{})
	h, st := s.nfs.lookup(s.root, "pipe.bin")
	require.Equal(t, nfsv3.NFS3_OK, st)

	span := func(k int) (off, n int) {
		sizes := []int{1, 100, 4000, 4097, 20000}
		off = k * 7919 % bigSize
		return off, min(sizes[k%len(sizes)], bigSize-off)
	}
	rc := s.rpc
	type result struct {
		rep reply
		err error
	}
	replies := make(chan result, calls)
	go func() {
		for range calls {
			rep, err := rc.recv()
			replies <- result{rep, err}
			if err != nil {
				return
			}
		}
	}()
	xids := make(map[uint32]int, calls)
	for k := range calls {
		off, n := span(k)
		xid, err := rc.send(nfsProg, nfsVers, nfsProcRead, &nfsv3.Read3args{File: fh(h), Offset: uint64(off), Count: uint32(n)})
		require.NoError(t, err, "call %d", k)
		xids[xid] = k
	}
	for range calls {
		r := <-replies
		require.NoError(t, r.err)
		k, ok := xids[r.rep.hdr.XID]
		require.True(t, ok, "reply with XID %#x", r.rep.hdr.XID)
		delete(xids, r.rep.hdr.XID)
		got, _ := readResult(t, decode(t, r.rep.results, nfsv3.ReadRead3res))
		off, n := span(k)
		guesttest.RequireData(t, data[off:off+n], got, "READ %d", k)
	}

	require.Empty(t, xids, "calls without a reply")

	// Whether a call had to wait for a credit depends on how fast knfsd
	// answers; the stall count is logged, not asserted.
	cs := s.conn.Stats()
	t.Logf("requester stats: %+v", cs)
	require.EqualValues(t, 64, cs.Negotiated.Credits, "knfsd's grant")
	require.Zero(t, cs.LocalInvalidations)
	requireClean(t, cs)

	ev := s.serverEvents(t)
	require.Equal(t, calls+1, ev.count["decode_rqst"], "calls knfsd decoded (LOOKUP and the READs)")
	require.Len(t, ev.invRKeys, calls+1, "replies knfsd sent by Send With Invalidate")
}

// TestKnfsdDDP uses an NFSv3 binding (RFC 8267), as the Linux client does:
// the data of a large WRITE goes in a Read chunk at its position in the
// call (knfsd pulls it with RDMA Read and splices it into the arguments),
// the data of a large READ comes in a Write chunk (knfsd RDMA-writes it and
// sends the rest of the reply inline, with the bytes written in the
// chunk's segment), odd lengths and short READs included.
func TestKnfsdDDP(t *testing.T) {
	const name = "ddp.bin"
	path := filepath.Join(exportPath, name)
	_ = os.Remove(path)
	s := dialKnfsd(t, transport.Config{Binding: nfs.Binding{}, Reconnect: exposeOK})

	h := s.nfs.create(s.root, name, 0o644)
	data := guesttest.Pattern(bigSize+3, 5)
	s.nfs.write(h, 0, data)
	cs := s.conn.Stats()
	require.EqualValues(t, 1, cs.ReadChunkCalls, "the WRITE's data went in a Read chunk")
	require.Zero(t, cs.LongCalls)
	onDisk, err := os.ReadFile(path)
	require.NoError(t, err)
	guesttest.RequireData(t, data, onDisk, "what knfsd wrote, read locally")

	for _, r := range []struct{ off, count, want int }{
		{0, len(data), len(data)},             // all of it, odd length
		{12345, 5001, 5001},                   // odd offset and count
		{len(data) - 10, 8192, 10},            // short: the chunk holds less than offered
		{100, 3000, 3000},                     // fits inline: no chunk
		{len(data), 8192, 0},                  // at EOF: nothing placed
		{1 << 16, 1 << 16, len(data) - 1<<16}, // the tail
	} {
		got, eof := s.nfs.read(h, uint64(r.off), uint32(r.count))
		guesttest.RequireData(t, data[r.off:r.off+r.want], got, "READ %d at %d", r.count, r.off)
		require.Equal(t, r.off+r.want == len(data), eof, "eof of READ %d at %d", r.count, r.off)
	}

	cs = s.conn.Stats()
	t.Logf("requester stats with the NFSv3 binding: %+v", cs)
	require.EqualValues(t, 5, cs.WriteChunks, "Write chunks offered (every READ over the inline threshold)")
	// The two READs of 64 KiB and more offered the caller's own buffer as
	// the Write chunk (transport.Config.DirectPlacementMin): knfsd's RDMA
	// Write placed their data there, no copy. The smaller ones were copied
	// once into it: 5001 and 10 bytes from the slot's chunk memory, 3000
	// from the inline reply (nothing at EOF).
	require.EqualValues(t, 2, cs.DirectPlacements, "READs placed straight into the caller's buffer")
	require.EqualValues(t, 3, cs.PlacementCopies, "READs copied once into the caller's buffer")
	require.Zero(t, cs.DirectPlacementErrors)
	require.Zero(t, cs.LocalInvalidations, "knfsd invalidated every rkey")
	requireClean(t, cs)

	// knfsd pulled the WRITE data from the Read chunk at its position and
	// wrote READ data into 4 of the 5 Write chunks (nothing at EOF).
	ev := s.serverEvents(t)
	require.Equal(t, 8, ev.count["decode_rqst"], "CREATE, WRITE and 6 READs")
	require.Equal(t, 1, ev.count["post_read_chunk"], "Read chunks knfsd pulled")
	require.Equal(t, 4, ev.count["post_write_chunk"], "Write chunks knfsd filled")
	require.Zero(t, ev.count["post_reply_chunk"], "no reply through a Reply chunk: the binding bounds CREATE's")
	require.Len(t, ev.invRKeys, 6, "replies knfsd sent by Send With Invalidate (all calls with chunks: WRITE, 5 READs)")

	s.nfs.remove(s.root, name)
}

// TestKnfsdSymlinkDDP uses the other two DDP-eligible items of RFC 8267
// §4.1 and §4.2 with nfs.Binding: a SYMLINK whose pathname does not fit
// inline goes in a Read chunk at its position (knfsd pulls it), and the
// READLINK of it offers a Write chunk of MaxPathLen for the pathname, which
// knfsd fills (svcrdma places every result payload, READLINK's included).
func TestKnfsdSymlinkDDP(t *testing.T) {
	const name = "ddp.link"
	path := filepath.Join(exportPath, name)
	_ = os.Remove(path)
	s := dialKnfsd(t, transport.Config{Binding: nfs.Binding{}})

	target := strings.Repeat("t/", 2000) + "end" // 4003 bytes: the call does not fit 4096
	s.nfs.symlink(s.root, name, target)
	onDisk, err := os.Readlink(path)
	require.NoError(t, err)
	require.Equal(t, target, onDisk, "the link knfsd made")
	h, st := s.nfs.lookup(s.root, name)
	require.Equal(t, nfsv3.NFS3_OK, st)
	require.Equal(t, target, s.nfs.readlink(h))

	cs := s.conn.Stats()
	t.Logf("requester stats: %+v", cs)
	require.EqualValues(t, 1, cs.ReadChunkCalls, "the SYMLINK's pathname went in a Read chunk")
	require.Zero(t, cs.LongCalls)
	require.EqualValues(t, 1, cs.WriteChunks, "the READLINK's Write chunk")
	require.Zero(t, cs.ReplyChunks, "SYMLINK's and LOOKUP's replies are bounded under the threshold")
	requireClean(t, cs)

	ev := s.serverEvents(t)
	require.Equal(t, 1, ev.count["post_read_chunk"], "Read chunks knfsd pulled")
	require.Equal(t, 1, ev.count["post_write_chunk"], "Write chunks knfsd filled")
	require.Zero(t, ev.count["post_reply_chunk"])
	require.NoError(t, os.Remove(path))
}

// TestKnfsdErrChunk: a READ whose reply cannot fit inline, from a requester
// that offered no chunk for it (its binding understated the reply), gets
// RDMA_ERROR ERR_CHUNK from knfsd (RFC 8166 §4.5; svcrdma cannot send the
// reply). The call fails alone, with a synthesized SYSTEM_ERR reply and a
// *transport.RemoteError, and the connection goes on.
func TestKnfsdErrChunk(t *testing.T) {
	data := guesttest.Pattern(20000, 6)
	path := filepath.Join(exportPath, "errchunk.bin")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	s := dialKnfsd(t, transport.Config{Binding: understatingBinding{}})

	h, st := s.nfs.lookup(s.root, "errchunk.bin")
	require.Equal(t, nfsv3.NFS3_OK, st)
	rep := s.rpc.callReply(t, nfsProg, nfsVers, nfsProcRead, &nfsv3.Read3args{File: fh(h), Count: uint32(len(data))})
	require.NotNil(t, rep.remote, "RDMA_ERROR for the READ")
	t.Logf("knfsd answered the READ with %v", rep.remote)
	require.EqualValues(t, 2, rep.remote.Code, "ERR_CHUNK")
	require.Equal(t, rep.hdr.XID, rep.remote.XID)
	require.Equal(t, xdr.MsgAccepted, rep.hdr.Stat)
	require.Equal(t, xdr.AcceptSystemErr, rep.hdr.AcceptStat, "the synthesized reply")

	// The connection is still good.
	got, eof := s.nfs.read(h, 0, 1000)
	require.False(t, eof)
	guesttest.RequireData(t, data[:1000], got)
	s.nfs.null()

	cs := s.conn.Stats()
	t.Logf("requester stats: %+v", cs)
	require.EqualValues(t, 1, cs.RemoteErrors, "RDMA_ERRORs")
	require.Zero(t, cs.ReplyChunks+cs.WriteChunks+cs.ReadChunks, "no chunk offered")
	require.Zero(t, cs.BadReplies+cs.BadXIDs+cs.Reconnects)

	ev := readServerEvents(t)
	t.Logf("knfsd's svcrdma events: %v", ev)
	require.Equal(t, 1, ev.count["err_chunk"], "ERR_CHUNK knfsd sent")
	require.Len(t, ev.errors, 1, "error events: the ERR_CHUNK only")
}

// understatingBinding claims that every reply fits in 1024 bytes, so the
// requester offers no chunk for it: a reply that is in fact larger than
// the inline threshold has no way back but RDMA_ERROR.
type understatingBinding struct{ transport.NullBinding }

// Call implements transport.Binding.
func (understatingBinding) Call(*xdr.CallHeader, []byte, int) transport.CallInfo {
	return transport.CallInfo{MaxReply: 1024}
}
