package soft

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// bindWindow binds a new window of c to n bytes of r at off and waits for
// the bind's completion.
func bindWindow(t *testing.T, c *conn, r verbs.Region, off, n int, access verbs.Access) verbs.Window {
	t.Helper()
	w, err := c.AllocWindow()
	require.NoError(t, err)
	require.NoError(t, c.PostSend([]verbs.WorkRequest{{
		ID: 0xb1d, Op: verbs.OpBindWindow, Window: w,
		Bind: verbs.SGE{Region: r, Offset: off, Length: n}, Access: access,
	}}))
	comp := nextCompletion(t, c)
	require.Equal(t, uint64(0xb1d), comp.ID)
	require.NoError(t, comp.Err())
	return w
}

// TestWriteAfterLocalInvalidateRefused: an RDMA Write whose rkey check
// passed, and whose payload is still arriving when a Local Invalidate of
// the window completes, lands nothing more: the rest is refused with a
// remote access error (NAK), and the connection fails. The fake peer
// holds back the second half of the payload, so the reader is inside the
// Write, past its rkey check, when the invalidation runs.
func TestWriteAfterLocalInvalidateRefused(t *testing.T) {
	c, f := dialFake(t, nil, 16)
	reg, err := c.AllocRegion(4096)
	require.NoError(t, err)
	w := bindWindow(t, c, reg, 0, 4096, verbs.AccessRemoteWrite)

	const n = 1000
	hdr := frameHeader{Type: frameWrite, Seq: f.seq, RKey: w.RKey(), Addr: reg.Addr(0), Length: n}
	f.seq++
	f.write(append(appendHeader(nil, &hdr), bytes.Repeat([]byte{0xaa}, n/2)...))
	require.Eventually(t, func() bool { return reg.Bytes()[n/2-1] == 0xaa },
		10*time.Second, time.Millisecond, "the first half of the Write lands")

	require.NoError(t, c.PostSend([]verbs.WorkRequest{{ID: 7, Op: verbs.OpLocalInvalidate, InvalidateRKey: w.RKey()}}))
	comp := nextCompletion(t, c)
	require.Equal(t, uint64(7), comp.ID)
	require.NoError(t, comp.Err())

	// The invalidation completed: from now on nothing may land.
	f.write(append(bytes.Repeat([]byte{0xbb}, n/2), trailerOK))
	h, _, _ := f.read()
	require.Equal(t, make([]byte, n/2), reg.Bytes()[n/2:n], "bytes landed after the Local Invalidate completed")
	require.Equal(t, frameNak, h.Type, "the rest of the Write is refused")
	require.Equal(t, hdr.Seq, h.Seq)
	require.Equal(t, nakRemoteAccess, h.Code)
	waitDone(t, c)
	require.ErrorIs(t, c.Err(), verbs.ErrRemoteAccess)
}

// TestReadResponseAfterSendWithInvalidateVoided: the reader executes the
// peer's Send With Invalidate while the writer is still sending the
// response of an earlier RDMA Read through the same window (the fake peer
// does not read, so the writer blocks on the stream). Once the Receive
// completion reports the invalidation, the window's memory is the
// owner's again: what it writes there must not reach the peer. The rest of
// the response goes out as zeros, voided by its trailer (a remote access
// error for the requester), and the responder fails too.
func TestReadResponseAfterSendWithInvalidateVoided(t *testing.T) {
	_, opts := recvSetup(64, 1)
	c, f := dialFake(t, opts, 16)
	// The fake peer reads nothing until the end: the writer blocks once
	// the socket buffers are full (at most about 4 MiB on Linux: the
	// send buffer's tcp_wmem limit plus a receive window that has not
	// grown), long before the last 2 MiB of the response.
	const size = MaxMessageSize
	reg, err := c.AllocRegion(size)
	require.NoError(t, err)
	mem := reg.Bytes()
	for i := range mem {
		mem[i] = 0x11
	}
	w := bindWindow(t, c, reg, 0, size, verbs.AccessRemoteRead)
	rkey := w.RKey()

	f.request(frameHeader{Type: frameReadRequest, RKey: rkey, Addr: reg.Addr(0), Length: size}, nil)
	f.request(frameHeader{Type: frameSend, Flags: flagInvalidate, RKey: rkey, Length: 4}, []byte("inv!"))
	comp := nextCompletion(t, c)
	require.NoError(t, comp.Err())
	require.True(t, comp.Invalidated)
	require.Equal(t, rkey, comp.InvalidatedRKey)

	// The owner reuses the last 2 MiB of the memory.
	const tail = size - 2<<20
	for i := tail; i < size; i++ {
		mem[i] = 0x5e
	}
	h, payload, trailer := f.read()
	require.Equal(t, frameReadResponse, h.Type)
	require.Len(t, payload, size)
	require.Equal(t, -1, bytes.IndexByte(payload[tail:], 0x5e), "the read response carries memory written after the invalidation completed")
	require.Equal(t, byte(trailerAborted), trailer, "the response is voided")
	waitDone(t, c)
	require.ErrorIs(t, c.Err(), verbs.ErrRemoteAccess)
}

// TestWindowCloseRefusesWriteInProgress: closing a window ends its binding
// for an RDMA Write in progress as a Local Invalidate does.
func TestWindowCloseRefusesWriteInProgress(t *testing.T) {
	c, f := dialFake(t, nil, 16)
	reg, err := c.AllocRegion(4096)
	require.NoError(t, err)
	w := bindWindow(t, c, reg, 0, 4096, verbs.AccessRemoteWrite)

	const n = 1000
	hdr := frameHeader{Type: frameWrite, Seq: f.seq, RKey: w.RKey(), Addr: reg.Addr(0), Length: n}
	f.seq++
	f.write(append(appendHeader(nil, &hdr), bytes.Repeat([]byte{0xaa}, n/2)...))
	require.Eventually(t, func() bool { return reg.Bytes()[n/2-1] == 0xaa },
		10*time.Second, time.Millisecond, "the first half of the Write lands")
	require.NoError(t, w.Close())
	f.write(append(bytes.Repeat([]byte{0xbb}, n/2), trailerOK))
	h, _, _ := f.read()
	require.Equal(t, make([]byte, n/2), reg.Bytes()[n/2:n], "bytes landed after the window was closed")
	require.Equal(t, frameNak, h.Type)
	require.Equal(t, nakRemoteAccess, h.Code)
}
