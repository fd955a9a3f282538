package client

import (
	"context"
	"errors"
	"sync"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// ioBuf holds the call and reply buffers of one READ, WRITE or COMMIT,
// reused through ioBufs so that the hot path does not allocate.
type ioBuf struct{ msg, reply []byte }

// ioBufs is a free list of ioBufs for small calls (a channel rather than
// a sync.Pool, which the race detector makes drop items at random, so that
// TestClientIOAllocs holds under -race); bigIOBufs holds those with
// buffers over bigIO, which the garbage collector may take back (a burst
// of 1 MiB READs must not pin their buffers forever).
var (
	ioBufs    = make(chan *ioBuf, 128)
	bigIOBufs sync.Pool
)

// bigIO is the buffer size from which an ioBuf goes to bigIOBufs.
const bigIO = 64 << 10

// getIOBuf returns an ioBuf for a call moving about n bytes.
func getIOBuf(n int) *ioBuf {
	if n > bigIO-ioOverhead {
		if b, ok := bigIOBufs.Get().(*ioBuf); ok {
			return b
		}
	}
	select {
	case b := <-ioBufs:
		return b
	default:
		return new(ioBuf)
	}
}

func putIOBuf(b *ioBuf) {
	if cap(b.msg) > bigIO || cap(b.reply) > bigIO {
		bigIOBufs.Put(b)
		return
	}
	select {
	case ioBufs <- b:
	default:
	}
}

// grow returns b[:0] with room for n bytes.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, 0, n)
	}
	return b[:0]
}

var (
	errShortRead = errors.New("READ returned more data than asked for")
	errCountData = errors.New("count and data length differ")
)

// Read calls NFSPROC3_READ (RFC 1813 §3.3.6) for len(p) bytes at off (at
// most the Client's rsize) and returns how many it placed in p and
// whether they end the file. The server writes the data into the Write
// chunk the transport offers (RFC 8267 §4.2). Over a *transport.Conn (an
// IntoCaller) that chunk is p itself from
// transport.Config.DirectPlacementMin bytes on (on a Conn that reconnects and retransmits,
// as Mount's and Dial's do, or with a ctx that cannot end): the
// server's RDMA Write places the data straight into p, with no copy at
// all; a smaller READ is copied once into p. Over another Caller the reply, data included, is
// copied once by the Caller and the data once more into p. It does not
// allocate.
func (c *Client) Read(ctx context.Context, fh FH, off uint64, p []byte) (n int, eof bool, err error) {
	if ic, ok := c.rpc.(IntoCaller); ok {
		return c.readInto(ctx, ic, fh, off, p)
	}
	b := getIOBuf(len(p))
	defer putIOBuf(b)
	data, eof, reply, err := c.readReply(ctx, fh, off, len(p), b)
	b.reply = reply
	if err != nil {
		return 0, false, err
	}
	return copy(p, data), eof, nil
}

// IntoCaller is a Caller that can place a reply's DDP-eligible result (the
// data of a READ) in a buffer of the caller's instead of the reply, as
// *transport.Conn's CallInto does: the result is cut out of the returned
// reply, item says where it was and its length, and its bytes are in
// data[:item.N].
type IntoCaller interface {
	Caller
	CallInto(ctx context.Context, msg, reply, data []byte) ([]byte, transport.DataItem, error)
}

// readInto is Read over an IntoCaller: the data goes to p directly.
func (c *Client) readInto(ctx context.Context, ic IntoCaller, fh FH, off uint64, p []byte) (n int, eof bool, err error) {
	rsize, _ := c.IOSize()
	count := min(len(p), rsize)
	b := getIOBuf(0)
	defer putIOBuf(b)
	msg := c.readCall(b, fh, off, count)
	reply, item, err := ic.CallInto(ctx, msg, grow(b.reply, ioOverhead), p[:count])
	b.reply = reply
	if err != nil {
		return 0, false, callErr(nfs.ProcName(nfs.ProgNFS, 3, nfs.ProcRead), err)
	}
	results, err := checkReply(nfs.ProgNFS, nfs.ProcRead, msg, reply)
	if err != nil {
		return 0, false, err
	}
	if !item.Present {
		// The connection's binding does not know READ's data (not
		// nfs.Binding): the reply is whole, the data in it.
		data, eof, err := decodeRead(reply[results:], count)
		if err != nil {
			return 0, false, err
		}
		return copy(p, data), eof, nil
	}
	// The binding cut the data out of the reply, after the length word:
	// READ3res is decoded up to there, its parts by the codec's types.
	r, err := resultsOK(nfs.ProcRead, reply[results:])
	if err != nil {
		return 0, false, err
	}
	if _, err := r.Uint32(); err != nil { // the status, NFS3_OK
		return 0, false, badReply("NFS3 READ", err)
	}
	var attr nfs3.PostOpAttr
	if err := attr.Decode(&r); err != nil {
		return 0, false, badReply("NFS3 READ", err)
	}
	got, err := r.Uint32()
	if err != nil {
		return 0, false, badReply("NFS3 READ", err)
	}
	if eof, err = r.Bool(); err != nil {
		return 0, false, badReply("NFS3 READ", err)
	}
	dataLen, err := r.Uint32()
	switch {
	case err != nil:
		return 0, false, badReply("NFS3 READ", err)
	case item.Off != results+r.Offset():
		return 0, false, badReply("NFS3 READ", errors.New("the data is not where the binding placed it"))
	case int(dataLen) != item.N || int(got) != item.N:
		return 0, false, badReply("NFS3 READ", errCountData)
	case item.N > count:
		return 0, false, badReply("NFS3 READ", errShortRead)
	}
	return item.N, eof, nil
}

// readCall makes the call message of a READ of count bytes at off in
// b.msg's storage, and returns it.
func (c *Client) readCall(b *ioBuf, fh FH, off uint64, count int) []byte {
	args := nfs3.ReadArgs{File: fh, Offset: off, Count: uint32(count)}
	b.msg = args.Append(c.startCall(grow(b.msg, len(c.tmpl)+4+xdr.RoundUp(len(fh))+12), nfs.ProcRead))
	return b.msg
}

// decodeRead decodes res, a READ's results with the data in them (no
// binding placed it), with the codec, and returns the data, a slice of
// res, checked against count, the number of bytes asked for.
func decodeRead(res []byte, count int) (data []byte, eof bool, err error) {
	r, err := resultsOK(nfs.ProcRead, res)
	if err != nil {
		return nil, false, err
	}
	var rr nfs3.ReadRes
	if err := rr.Decode(&r); err != nil {
		return nil, false, badReply("NFS3 READ", err)
	}
	if len(rr.Data) > count {
		return nil, false, badReply("NFS3 READ", errShortRead)
	}
	if int(rr.Count) != len(rr.Data) {
		return nil, false, badReply("NFS3 READ", errCountData)
	}
	return rr.Data, rr.EOF, nil
}

// readReply makes a READ of count bytes at off (at most rsize) with the
// buffers of b (b.msg is kept; the reply buffer is returned, for reuse)
// and returns the data as a slice of the reply buffer.
func (c *Client) readReply(ctx context.Context, fh FH, off uint64, count int, b *ioBuf) (data []byte, eof bool, reply []byte, err error) {
	rsize, _ := c.IOSize()
	count = min(count, rsize)
	msg := c.readCall(b, fh, off, count)
	res, reply, err := c.do(ctx, nfs.ProcRead, msg, grow(b.reply, count+ioOverhead))
	if err != nil {
		return nil, false, reply, err
	}
	data, eof, err = decodeRead(res, count)
	return data, eof, reply, err
}

// WriteResult is WRITE3resok (RFC 1813 §3.3.7) without its wcc_data.
type WriteResult struct {
	// Count is how many bytes the server wrote, from the start.
	Count int
	// Committed is how stable they are.
	Committed StableHow
	// Verf is the server's write verifier, to compare with COMMIT's.
	Verf WriteVerf
}

// Write calls NFSPROC3_WRITE (RFC 1813 §3.3.7) with p at off (p at most
// the Client's wsize); the transport sends p in a Read chunk when the call
// does not fit inline (RFC 8267 §4.1). With Unstable, the data is safe
// only once a COMMIT returns the same verifier. It does not allocate.
func (c *Client) Write(ctx context.Context, fh FH, off uint64, p []byte, stable StableHow) (WriteResult, error) {
	b := getIOBuf(len(p))
	defer putIOBuf(b)
	pre := c.writePrefixLen(fh)
	msg := append(grow(b.msg, pre+len(p)+4)[:pre], p...)
	b.msg = msg
	return c.sendWrite(ctx, fh, off, msg, pre, stable, b)
}

// writePrefixLen is the length of a WRITE call to fh up to its data: the
// call header, then WRITE3args (RFC 1813 §3.3.7) file, offset, count,
// stable and the data's length word, as WriteArgs.AppendHead appends them.
func (c *Client) writePrefixLen(fh FH) int {
	var buf [128]byte // enough for any handle of NFS3_FHSIZE bytes
	args := nfs3.WriteArgs{File: fh}
	return len(c.tmpl) + len(args.AppendHead(buf[:0]))
}

// errPrefix: a WRITE's prefix did not come out at writePrefixLen bytes.
var errPrefix = errors.New("nfs: WRITE prefix length mismatch")

// sendWrite makes msg, whose data follows pre (writePrefixLen) bytes of
// room, into a WRITE of that data at off and sends it; msg needs room for
// the data's XDR pad after it. A File's write-behind blocks are such
// messages from the start, so their data is never copied into a call.
// The reply buffer of b is used and kept.
func (c *Client) sendWrite(ctx context.Context, fh FH, off uint64, msg []byte, pre int, stable StableHow, b *ioBuf) (WriteResult, error) {
	n := len(msg) - pre
	// The arguments' head, in place before the data, which Data only
	// measures: AppendHead writes its length, not its bytes.
	args := nfs3.WriteArgs{File: fh, Offset: off, Count: uint32(n), Stable: nfs3.StableHow(stable), Data: msg[pre : pre+n]}
	hdr := args.AppendHead(c.startCall(msg[:0], nfs.ProcWrite))
	if len(hdr) != pre {
		return WriteResult{}, errPrefix
	}
	msg = msg[:pre+n]
	for range xdr.Padding(n) {
		msg = append(msg, 0)
	}
	res, reply, err := c.do(ctx, nfs.ProcWrite, msg, grow(b.reply, 512))
	b.reply = reply
	if err != nil {
		return WriteResult{}, err
	}
	r, err := resultsOK(nfs.ProcWrite, res)
	if err != nil {
		return WriteResult{}, err
	}
	var wres nfs3.WriteRes
	if err := wres.Decode(&r); err != nil {
		return WriteResult{}, badReply("NFS3 WRITE", err)
	}
	if int64(wres.Count) > int64(n) {
		return WriteResult{}, badReply("NFS3 WRITE", errors.New("count out of range"))
	}
	return WriteResult{Count: int(wres.Count), Committed: StableHow(wres.Committed), Verf: wres.Verf}, nil
}

// Commit calls NFSPROC3_COMMIT (RFC 1813 §3.3.21) for count bytes at off
// (0, 0: the whole file) and returns the write verifier, which matches the
// unstable WRITEs' when their data is now stable.
func (c *Client) Commit(ctx context.Context, fh FH, off uint64, count uint32) (WriteVerf, error) {
	b := getIOBuf(0)
	defer putIOBuf(b)
	args := nfs3.CommitArgs{File: fh, Offset: off, Count: count}
	msg := args.Append(c.startCall(grow(b.msg, len(c.tmpl)+4+xdr.RoundUp(len(fh))+12), nfs.ProcCommit))
	b.msg = msg
	res, reply, err := c.do(ctx, nfs.ProcCommit, msg, grow(b.reply, 512))
	b.reply = reply
	if err != nil {
		return WriteVerf{}, err
	}
	r, err := resultsOK(nfs.ProcCommit, res)
	if err != nil {
		return WriteVerf{}, err
	}
	var cres nfs3.CommitRes
	if err := cres.Decode(&r); err != nil {
		return WriteVerf{}, badReply("NFS3 COMMIT", err)
	}
	return cres.Verf, nil
}
