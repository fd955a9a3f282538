//go:build e2eguest

package knfsdclient_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
	"github.com/stretchr/testify/require"
)

// ioGuard bounds every blocking call, so that a hang fails the test instead
// of waiting for the VM's timeout. It is a safety net, not a timing
// assertion.
const ioGuard = 2 * time.Minute

// rpcClient is a minimal ONC RPC version 2 client (RFC 5531) for the calls
// the tests send raw, to control their pipelining or to see the
// transport's *RemoteError (package nfs/client makes every other call).
// Calls carry an AUTH_SYS credential for uid 0 (knfsd refuses AUTH_NONE);
// the call header is encoded by our xdr package, the arguments by whatever
// io.WriterTo the caller passes.
//
// It runs over a requester *transport.Conn in message mode (WriteMsg and
// ReadMsg: one RPC message each). send and recv may run in different
// goroutines.
type rpcClient struct {
	msgConn *transport.Conn
	cred    xdr.OpaqueAuth
	xid     atomic.Uint32
	rmu     sync.Mutex
}

// authSys is the AUTH_SYS credential of root, as the Linux client sends it
// for a root user (RFC 5531 appendix A).
func authSys() xdr.OpaqueAuth {
	a := xdr.AuthSys{Stamp: 0x4b4e4644, MachineName: []byte("knfsdclient"), UID: 0, GID: 0, GIDs: []uint32{0}}
	return a.OpaqueAuth(nil)
}

// newRDMAClient starts its XIDs at a random value, as the Linux client
// does for each transport (xprt_init_xid): knfsd's duplicate reply cache
// knows a call by its XID, client address, procedure and a checksum of its
// arguments, and would answer a new connection's CREATE or WRITE that
// happens to repeat all of them from the cache, without executing it.
func newRDMAClient(c *transport.Conn) *rpcClient {
	c0 := &rpcClient{msgConn: c, cred: authSys()}
	c0.xid.Store(rand.Uint32())
	return c0
}

// encode returns the XDR encoding of v (nil: no bytes).
func encode(v io.WriterTo) []byte {
	if v == nil {
		return nil
	}
	var b bytes.Buffer
	if _, err := v.WriteTo(&b); err != nil {
		panic(err) // bytes.Buffer does not fail; a type that cannot encode is a test bug
	}
	return b.Bytes()
}

// send sends one call and returns its XID.
func (c *rpcClient) send(prog, vers, proc uint32, args io.WriterTo) (uint32, error) {
	h := xdr.CallHeader{XID: c.xid.Add(1), Prog: prog, Vers: vers, Proc: proc, Cred: c.cred, Verf: xdr.OpaqueAuth{Flavor: xdr.FlavorNone}}
	msg := append(h.Append(nil), encode(args)...)
	return h.XID, c.msgConn.WriteMsg(msg)
}

// reply is a decoded RPC reply: its header and the results that follow.
type reply struct {
	hdr     xdr.ReplyHeader
	results *bytes.Reader
	// remote is the transport's *RemoteError when the responder answered
	// with RDMA_ERROR (the header is then a synthesized SYSTEM_ERR).
	remote *transport.RemoteError
}

// recv reads and decodes the next reply.
func (c *rpcClient) recv() (reply, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	var rep reply
	msg, err := c.msgConn.ReadMsg(nil)
	if errors.As(err, &rep.remote) {
		err = nil
	}
	if err != nil {
		return reply{}, err
	}
	off, err := rep.hdr.Unmarshal(msg)
	if err != nil {
		return reply{}, fmt.Errorf("decoding reply header: %w", err)
	}
	rep.results = bytes.NewReader(msg[off:])
	return rep, nil
}

// callReply sends one call and returns its reply, whatever it says.
func (c *rpcClient) callReply(t testing.TB, prog, vers, proc uint32, args io.WriterTo) reply {
	t.Helper()
	xid, err := c.send(prog, vers, proc, args)
	require.NoError(t, err, "sending call %d/%d/%d", prog, vers, proc)
	rep, err := c.recv()
	require.NoError(t, err, "receiving the reply to %d/%d/%d", prog, vers, proc)
	require.Equal(t, xid, rep.hdr.XID, "reply XID")
	return rep
}

// decode decodes a value with read and requires that it takes every
// remaining byte of r: a reply must be exactly its results.
func decode[T any](t testing.TB, r *bytes.Reader, read func(io.Reader) (T, int64, error)) T {
	t.Helper()
	v, _, err := read(r)
	require.NoError(t, err, "decoding results")
	require.Zero(t, r.Len(), "bytes after the results")
	return v
}
