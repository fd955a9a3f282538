package dropin_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/mount"
	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/buildbarn/go-xdr/pkg/protocols/rpcv2"
	"github.com/buildbarn/go-xdr/pkg/rpcserver"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/stretchr/testify/require"
)

// memProgram is a tiny NFSv3 and MOUNT v3 program for buildbarn/go-xdr's
// generated service stubs: MNT hands out a file handle per path, and each
// such file supports GETATTR, READ and WRITE. The embedded interfaces are
// nil: the tests call no other procedure.
type memProgram struct {
	nfsv3.NfsProgram
	mount.MountProgram

	mu    sync.Mutex
	files map[string][]byte // by handle
}

func newMemProgram() *memProgram { return &memProgram{files: map[string][]byte{}} }

func (p *memProgram) contents(h string) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]byte(nil), p.files[h]...)
}

func (p *memProgram) MountV3Mountproc3Null(context.Context) error { return nil }

func (p *memProgram) MountV3Mountproc3Mnt(_ context.Context, path string) (mount.Mountres3, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.files[path]; !ok {
		p.files[path] = nil
	}
	return &mount.Mountres3_MNT3_OK{Mountinfo: mount.Mountres3Ok{
		Fhandle: []byte(path), AuthFlavors: []int32{int32(rpcv2.AUTH_SYS)},
	}}, nil
}

func (p *memProgram) NfsV3Nfsproc3Null(context.Context) error { return nil }

func fattr(h []byte, size int) nfsv3.Fattr3 {
	sum := sha256.Sum256(h)
	return nfsv3.Fattr3{Type: nfsv3.NF3REG, Mode: 0o644, Nlink: 1, Size: uint64(size), Used: uint64(size),
		Fileid: binary.BigEndian.Uint64(sum[:])}
}

func (p *memProgram) NfsV3Nfsproc3Getattr(_ context.Context, a *nfsv3.Getattr3args) (nfsv3.Getattr3res, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.files[string(a.Object.Data)]
	if !ok {
		return &nfsv3.Getattr3res_default{Status: nfsv3.NFS3ERR_STALE}, nil
	}
	return &nfsv3.Getattr3res_NFS3_OK{Resok: nfsv3.Getattr3resok{ObjAttributes: fattr(a.Object.Data, len(f))}}, nil
}

func (p *memProgram) NfsV3Nfsproc3Read(_ context.Context, a *nfsv3.Read3args) (nfsv3.Read3res, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.files[string(a.File.Data)]
	if !ok {
		return &nfsv3.Read3res_default{Status: nfsv3.NFS3ERR_STALE,
			Resfail: nfsv3.Read3resfail{FileAttributes: &nfsv3.PostOpAttr_FALSE{}}}, nil
	}
	off := min(a.Offset, uint64(len(f)))
	end := min(off+uint64(a.Count), uint64(len(f)))
	data := append([]byte(nil), f[off:end]...)
	return &nfsv3.Read3res_NFS3_OK{Resok: nfsv3.Read3resok{
		FileAttributes: &nfsv3.PostOpAttr_TRUE{Attributes: fattr(a.File.Data, len(f))},
		Count:          uint32(len(data)), Eof: end == uint64(len(f)), Data: data,
	}}, nil
}

func (p *memProgram) NfsV3Nfsproc3Write(_ context.Context, a *nfsv3.Write3args) (nfsv3.Write3res, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.files[string(a.File.Data)]
	fail := func(st nfsv3.Nfsstat3) (nfsv3.Write3res, error) {
		return &nfsv3.Write3res_default{Status: st, Resfail: nfsv3.Write3resfail{
			FileWcc: nfsv3.WccData{Before: &nfsv3.PreOpAttr_FALSE{}, After: &nfsv3.PostOpAttr_FALSE{}}}}, nil
	}
	switch {
	case !ok:
		return fail(nfsv3.NFS3ERR_STALE)
	case int(a.Count) != len(a.Data) || a.Offset > 1<<30:
		return fail(nfsv3.NFS3ERR_INVAL)
	}
	end := int(a.Offset) + len(a.Data)
	if end > len(f) {
		f = append(f, make([]byte, end-len(f))...)
	}
	copy(f[a.Offset:], a.Data)
	p.files[string(a.File.Data)] = f
	return &nfsv3.Write3res_NFS3_OK{Resok: nfsv3.Write3resok{
		FileWcc:   nfsv3.WccData{Before: &nfsv3.PreOpAttr_FALSE{}, After: &nfsv3.PostOpAttr_TRUE{Attributes: fattr(a.File.Data, len(f))}},
		Count:     a.Count,
		Committed: nfsv3.FILE_SYNC,
	}}, nil
}

// readSpan is the k-th READ of the concurrent part: offsets spread over the
// file, sizes on both sides of the inline threshold.
func readSpan(k, size int) (off, n int) {
	sizes := []int{1, 100, 4000, 4097, 20000, 65536}
	off = k * 7919 % size
	return off, min(sizes[k%len(sizes)], size-off)
}

// testRPCServer serves memProgram with buildbarn/go-xdr's rpcserver over an
// accepted *transport.Conn of stack s: HandleConnection gets the Conn as
// its record-marked reader and writer. The client is a message-mode
// requester from transport.Dial with the default configuration.
func testRPCServer(t *testing.T, s stack) {
	l := listen(t, s, nil)
	prog := newMemProgram()
	srv := rpcserver.NewServer(map[uint32]rpcserver.Service{
		nfsProg:   nfsv3.NewNfsProgramService(prog),
		mountProg: mount.NewMountProgramService(prog),
	}, rpcserver.AllowAuthenticator)
	accepted := make(chan *transport.Conn, 1)
	handled := make(chan error, 1)
	go func() {
		c, err := l.AcceptRDMA()
		accepted <- c
		if err != nil {
			handled <- err
			return
		}
		handled <- srv.HandleConnection(c, c)
	}()
	c := dial(t, s, l.Addr().String(), nil)
	sc := <-accepted
	if sc == nil {
		t.Fatalf("accept: %v", <-handled)
	}
	t.Cleanup(func() { _ = sc.Close() })

	rc := newMsgClient(c)
	nc := nfsClient{t, rc}
	nc.mountNull()
	const path = "/export/data"
	h := nc.mount(path)
	nc.null()

	want := []byte("xyz")
	nc.write(h, 0, want)
	big := pattern(bigSize, 2)
	nc.write(h, uint64(len(want)), big)
	want = append(want, big...)
	require.EqualValues(t, len(want), nc.getattr(h).Size)
	got, eof := nc.read(h, 0, uint32(len(want)+100))
	require.True(t, eof)
	require.Equal(t, want, got, "whole file read back")
	require.Equal(t, want, prog.contents(path), "contents on the server")

	// buildbarn's server runs each call in a goroutine of its own and may
	// answer out of order: the requester matches replies by XID.
	const calls = 64
	reads := pipeline(t, rc, calls, func(k int) (uint32, error) {
		off, n := readSpan(k, len(want))
		return rc.send(nfsProg, nfsVers, nfsProcRead, &nfsv3.Read3args{File: fh(h), Offset: uint64(off), Count: uint32(n)})
	})
	for k, rep := range reads {
		got, _ := readResult(t, decode(t, rep.results, nfsv3.ReadRead3res))
		off, n := readSpan(k, len(want))
		require.Equal(t, want[off:off+n], got, "READ %d", k)
	}

	// Replies the server makes itself for calls it cannot serve.
	rep := rc.callReply(t, 0x20000123, 1, 0, nil)
	require.True(t, rep.accepted)
	require.Equal(t, rpcv2.PROG_UNAVAIL, rep.data.GetStat())
	rep = rc.callReply(t, nfsProg, 2, nfsProcNull, nil)
	require.True(t, rep.accepted)
	mm, ok := rep.data.(*rpcv2.AcceptedReplyData_PROG_MISMATCH)
	require.True(t, ok, "NFS version 2: %v", rep.data.GetStat())
	require.EqualValues(t, 3, mm.MismatchInfo.Low)
	require.EqualValues(t, 3, mm.MismatchInfo.High)
	rep = rc.callReply(t, nfsProg, nfsVers, 99, nil)
	require.True(t, rep.accepted)
	require.Equal(t, rpcv2.PROC_UNAVAIL, rep.data.GetStat())
	nc.null() // still in step

	cs := c.Stats()
	require.Equal(t, transport.DefaultInline, cs.Negotiated.SendInline)
	require.NotZero(t, cs.LongCalls, "Long Calls")
	require.NotZero(t, cs.ReplyChunks, "Reply chunks")
	require.Zero(t, cs.BadReplies+cs.BadXIDs+cs.RemoteErrors)
	ss := sc.Stats()
	require.GreaterOrEqual(t, ss.RDMAReadBytes, uint64(bigSize), "bytes the responder pulled by RDMA Read")
	require.GreaterOrEqual(t, ss.RDMAWriteBytes, uint64(bigSize), "bytes the responder pushed by RDMA Write")
	require.Zero(t, ss.ErrChunkSent+ss.ErrVersSent+ss.Dropped, "calls the responder refused")

	// The client goes away: the server's Conn reads io.EOF and
	// HandleConnection ends cleanly.
	require.NoError(t, c.Close())
	requireCleanEnd(t, <-handled)
}

func TestRPCServer(t *testing.T) { testRPCServer(t, softStack) }
