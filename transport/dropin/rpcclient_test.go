package dropin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/rpcv2"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
	"github.com/stretchr/testify/require"
)

// streamFragment is the fragment size of the records a stream-mode client
// writes to a requester Conn: calls larger than it go as several fragments
// (RFC 5531 §11), which the Conn must join into one RPC message. (go-nfs
// itself rejects records of more than one fragment: over TCP a client must
// send single-fragment records; over our Conn it never sees the fragments.)
const streamFragment = 8 << 10

// maxReply bounds a reply record a stream-mode client accepts.
const maxReply = 4 << 20

// rpcClient is a minimal ONC RPC version 2 client (RFC 5531) over a
// connection, with calls and replies encoded by buildbarn/go-xdr's rpcv2
// types. In stream mode it writes and reads the record-marked byte stream,
// as a TCP client does, each call as several fragments over two Writes; in
// message mode it uses the transport's WriteMsg and ReadMsg.
//
// send and recv may be used from different goroutines to keep calls in
// flight; call does both for one call.
type rpcClient struct {
	conn     net.Conn
	msgConn  *transport.Conn // message mode when non-nil
	fragment int             // stream mode: largest fragment (0: one per record)
	cred     rpcv2.OpaqueAuth
	xid      atomic.Uint32
	wmu      sync.Mutex // one record at a time on the stream
	rmu      sync.Mutex
	cmu      sync.Mutex // one Call at a time
}

// newStreamClient returns a stream-mode client on c that writes fragments
// of at most fragment bytes (0: each record in one fragment).
func newStreamClient(c net.Conn, fragment int) *rpcClient {
	return &rpcClient{conn: c, fragment: fragment, cred: authSys()}
}

// newMsgClient returns a message-mode client on c.
func newMsgClient(c *transport.Conn) *rpcClient {
	return &rpcClient{conn: c, msgConn: c, cred: authSys()}
}

// authSys is an AUTH_SYS credential (RFC 5531 appendix A), as the Linux
// client sends.
func authSys() rpcv2.OpaqueAuth {
	p := rpcv2.AuthsysParms{Stamp: 1, Machinename: "dropin", Uid: 0, Gid: 0, Gids: []uint32{0}}
	var b bytes.Buffer
	if _, err := p.WriteTo(&b); err != nil {
		panic(err) // bytes.Buffer does not fail
	}
	return rpcv2.OpaqueAuth{Flavor: rpcv2.AUTH_SYS, Body: b.Bytes()}
}

// encodeCall encodes a call message: the rpcv2 header and args.
func (c *rpcClient) encodeCall(xid, prog, vers, proc uint32, args io.WriterTo) ([]byte, error) {
	var b bytes.Buffer
	m := rpcv2.RpcMsg{Xid: xid, Body: &rpcv2.RpcMsgBody_CALL{Cbody: rpcv2.CallBody{
		Rpcvers: 2, Prog: prog, Vers: vers, Proc: proc,
		Cred: c.cred, Verf: rpcv2.OpaqueAuth{Flavor: rpcv2.AUTH_NONE},
	}}}
	if _, err := m.WriteTo(&b); err != nil {
		return nil, err
	}
	if args != nil {
		if _, err := args.WriteTo(&b); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// send sends one call and returns its XID.
func (c *rpcClient) send(prog, vers, proc uint32, args io.WriterTo) (uint32, error) {
	xid := c.xid.Add(1)
	msg, err := c.encodeCall(xid, prog, vers, proc, args)
	if err != nil {
		return 0, err
	}
	return xid, c.sendMsg(msg)
}

func (c *rpcClient) sendMsg(msg []byte) error {
	if c.msgConn != nil {
		return c.msgConn.WriteMsg(msg)
	}
	rec := xdr.AppendRecord(nil, msg, c.fragment)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	// Two Writes cut at a point that is neither a fragment nor a word
	// boundary: the Conn must rebuild the record from the stream.
	cut := len(rec)/3 + 1
	for _, part := range [][]byte{rec[:cut], rec[cut:]} {
		if _, err := c.conn.Write(part); err != nil {
			return err
		}
	}
	return nil
}

// Call implements client.Caller: it sends msg and returns the next reply
// message, unparsed, whatever its XID (calls made through Call go one at
// a time).
func (c *rpcClient) Call(ctx context.Context, msg, _ []byte) ([]byte, error) {
	c.cmu.Lock()
	defer c.cmu.Unlock()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.sendMsg(msg); err != nil {
		return nil, err
	}
	c.rmu.Lock()
	defer c.rmu.Unlock()
	return c.recvMsg()
}

// recvMsg reads the next reply message; the caller holds rmu.
func (c *rpcClient) recvMsg() ([]byte, error) {
	if c.msgConn != nil {
		return c.msgConn.ReadMsg(nil)
	}
	return xdr.ReadRecord(c.conn, nil, maxReply)
}

// reply is a decoded RPC reply.
type reply struct {
	xid      uint32
	accepted bool                    // MSG_ACCEPTED
	data     rpcv2.AcceptedReplyData // its accept status and data
	results  *bytes.Reader           // what follows: a SUCCESS reply's results
}

var errNotReply = errors.New("dropin: received message is not an RPC reply")

// recv reads and decodes the next reply.
func (c *rpcClient) recv() (reply, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	msg, err := c.recvMsg()
	if err != nil {
		return reply{}, err
	}
	r := bytes.NewReader(msg)
	var m rpcv2.RpcMsg
	if _, err := m.ReadFrom(r); err != nil {
		return reply{}, fmt.Errorf("decoding reply header: %w", err)
	}
	body, ok := m.Body.(*rpcv2.RpcMsgBody_REPLY)
	if !ok {
		return reply{}, errNotReply
	}
	rep := reply{xid: m.Xid, results: r}
	if a, ok := body.Rbody.(*rpcv2.ReplyBody_MSG_ACCEPTED); ok {
		rep.accepted = true
		rep.data = a.Areply.ReplyData
	}
	return rep, nil
}

// call sends one call, waits for its reply and returns the results of a
// SUCCESS reply; anything else fails t.
func (c *rpcClient) call(t testing.TB, prog, vers, proc uint32, args io.WriterTo) *bytes.Reader {
	t.Helper()
	rep := c.callReply(t, prog, vers, proc, args)
	require.True(t, rep.accepted, "reply not MSG_ACCEPTED")
	require.Equal(t, rpcv2.SUCCESS, rep.data.GetStat(), "accept_stat")
	return rep.results
}

// callReply sends one call and returns its reply, whatever it says.
func (c *rpcClient) callReply(t testing.TB, prog, vers, proc uint32, args io.WriterTo) reply {
	t.Helper()
	xid, err := c.send(prog, vers, proc, args)
	require.NoError(t, err, "sending call")
	rep, err := c.recv()
	require.NoError(t, err, "receiving reply")
	require.Equal(t, xid, rep.xid, "reply XID")
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
