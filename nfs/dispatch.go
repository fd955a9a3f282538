package nfs

import (
	"encoding/binary"
	"errors"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// NFS version 3 status codes (RFC 1813 §2.6, nfsstat3) the dispatch layer
// returns itself.
const (
	nfs3OK             = 0
	nfs3ErrPerm        = 1
	nfs3ErrNoEnt       = 2
	nfs3ErrIO          = 5
	nfs3ErrAcces       = 13
	nfs3ErrExist       = 17
	nfs3ErrXDev        = 18
	nfs3ErrNotDir      = 20
	nfs3ErrIsDir       = 21
	nfs3ErrInval       = 22
	nfs3ErrNotEmpty    = 66
	nfs3ErrNoSpc       = 28
	nfs3ErrROFS        = 30
	nfs3ErrMLink       = 31
	nfs3ErrNameTooLong = 63
	nfs3ErrDQuot       = 69
	nfs3ErrStale       = 70
	nfs3ErrNotSupp     = 10004
)

// nfs3FHSize is the largest NFSv3 file handle (RFC 1813 §2.4, NFS3_FHSIZE).
const nfs3FHSize = 64

// msgConn carries whole RPC messages: a *transport.Conn, or recordConn
// over TCP. WriteMsg is safe for concurrent use.
type msgConn interface {
	ReadMsg(buf []byte) ([]byte, error)
	// ReadMsgAlloc is ReadMsg with the buffer from get(the message's
	// length) (transport.Conn.ReadMsgAlloc).
	ReadMsgAlloc(get func(n int) []byte) ([]byte, error)
	WriteMsg(msg []byte) error
	Close() error
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
}

// recordConn reads and writes RFC 5531 record-marked messages (§11) on a
// stream connection.
type recordConn struct {
	net.Conn
	max int
	rmu sync.Mutex
}

// ReadMsg reads the next record; the session's workers call it at once,
// and take turns.
func (c *recordConn) ReadMsg(buf []byte) ([]byte, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	return xdr.ReadRecord(c.Conn, buf, c.max)
}

// ReadMsgAlloc reads the next record into a buffer of its own: a record's
// length is known only once its last fragment is read, and over TCP only
// MOUNT (and NFS when Config.NFSOverTCP says so) comes this way.
func (c *recordConn) ReadMsgAlloc(func(n int) []byte) ([]byte, error) { return c.ReadMsg(nil) }

// WriteMsg writes msg as one record, whole: records written at once do not
// interleave. On a TCP connection a message of writevMin bytes or more (a
// READ's reply) goes out with its record mark in one writev, uncopied: the
// descriptor's write lock holds for the whole writev, as for a Write.
// Anything else is copied behind its mark and written in one Write.
func (c *recordConn) WriteMsg(msg []byte) error {
	if tc, ok := c.Conn.(*net.TCPConn); ok && len(msg) >= writevMin && len(msg) <= xdr.MaxFragmentLen {
		bufs := net.Buffers{xdr.AppendFragmentHeader(make([]byte, 0, 4), len(msg), true), msg}
		_, err := bufs.WriteTo(tc)
		return err
	}
	_, err := c.Conn.Write(xdr.AppendRecord(nil, msg, 0))
	return err
}

// writevMin is the smallest message recordConn writes without copying it.
const writevMin = 4 << 10

// session is the dispatch layer of one client connection: it reads the
// connection's calls, answers some itself (programs go-nfs does not serve,
// LINK, COMMIT, retransmissions from the duplicate request cache) and
// forwards the others to go-nfs through an in-memory pipe, whose replies it
// passes back, made honest where needed (WRITE stability).
type session struct {
	s       *Server
	network string // "rdma" or "tcp"
	c       msgConn
	client  string // the client's host, for the duplicate request cache
	pipe    net.Conn
	done    chan struct{}

	closeOnce sync.Once

	// concurrent bounds the workers (readCalls); workers counts them and
	// executing those executing a call.
	wkmu                           sync.Mutex
	concurrent, workers, executing int

	// fmu serializes forwarding: a call's place in pending is its place
	// in the pipe, and go-nfs answers the calls of a connection in order.
	fmu     sync.Mutex
	pmu     sync.Mutex
	pending []pendingCall
}

// pendingCall is a call forwarded to go-nfs and not yet answered.
type pendingCall struct {
	xid   uint32
	entry *drcEntry  // the call's duplicate request cache entry, or nil
	write *writeCall // set for an NFSv3 WRITE
	// fsinfo is set for an NFSv3 FSINFO, whose dtpref is rewritten.
	fsinfo bool
	// attrs is set for a call whose reply lacks attributes (attrFix).
	attrs *attrFix
}

// serve runs the session until the client or go-nfs closes its side.
func (ss *session) serve() {
	ss.s.wg.Add(1)
	go func() {
		defer ss.s.wg.Done()
		ss.readReplies()
	}()
	ss.readCalls()
}

// close ends the session: both connections are closed, and the duplicate
// request cache forgets the calls that will not be answered.
func (ss *session) close() {
	ss.closeOnce.Do(func() {
		close(ss.done)
		_ = ss.c.Close()
		_ = ss.pipe.Close()
		ss.pmu.Lock()
		pending := ss.pending
		ss.pending = nil
		ss.pmu.Unlock()
		for _, p := range pending {
			if p.entry != nil {
				ss.s.drc.abandon(p.entry)
			}
		}
		ss.s.removeSession(ss)
	})
}

// readCalls is one of the session's workers: each reads a call, executes
// it and reads the next, all of them reading the connection at once (its
// ReadMsg gives each message to one), so that a call that waits (a
// COMMIT's fsync, a READ that misses the page cache) holds up only itself.
// The session starts with one worker and adds one whenever a worker takes
// a call while none is left reading, up to ss.concurrent; a worker stays
// until the connection ends. One call in flight thus costs what it did
// with one goroutine (one wake-up), and no goroutine is started per call.
// At the limit the client's further calls wait (over RDMA within its
// credits, over TCP in its stream); replies go out as they are ready,
// each to its own call (by XID).
func (ss *session) readCalls() {
	var buf []byte   // the worker's call buffer, kept if small (keepCallBuf)
	var rb *replyBuf // the pooled buffer a large call was read into
	get := func(n int) []byte {
		if n <= max(cap(buf), keepCallBuf) {
			return buf // appending allocates a small one, to keep
		}
		var b []byte
		b, rb = getReplyBuf(n)
		return b
	}
	for {
		rb = nil
		msg, err := ss.c.ReadMsgAlloc(get)
		if err != nil {
			ss.s.log.Debug("nfs: connection closed", "network", ss.network, "remote", ss.c.RemoteAddr(), "err", err)
			ss.close()
			return
		}
		ss.wkmu.Lock()
		ss.executing++
		grow := ss.executing == ss.workers && ss.workers < ss.concurrent
		if grow {
			ss.workers++
		}
		ss.wkmu.Unlock()
		if grow {
			ss.s.wg.Add(1) // this worker's count keeps the group above zero
			go func() {
				defer ss.s.wg.Done()
				ss.readCalls()
			}()
		}
		err = ss.dispatch(msg)
		buf = nil
		if callKeepsNothing(msg) {
			if cap(msg) <= keepCallBuf {
				buf = msg[:0]
			} else if rb != nil {
				// A large WRITE's buffer goes back to the pool it came
				// from (putReplyBuf leaves any other to the collector).
				putReplyBuf(rb, msg)
			} else {
				// The transport pulled the call into a buffer of that
				// pool and handed it over (callBuffers).
				putPooledBuf(msg)
			}
		}
		ss.wkmu.Lock()
		ss.executing--
		ss.wkmu.Unlock()
		if err != nil {
			ss.s.log.Debug("nfs: closing connection", "network", ss.network, "remote", ss.c.RemoteAddr(), "err", err)
			ss.close()
			return
		}
	}
}

// keepCallBuf bounds the call buffer a worker keeps between calls: the
// small calls, where an allocation is a noticeable part of the work, fit
// (metadata, WRITEs of a few KiB); a large WRITE's buffer would stay
// pinned in every idle worker of every connection (at most 16 × 16 KiB
// per connection at the default ConcurrentCalls).
const keepCallBuf = 16 << 10

// callKeepsNothing reports whether msg, a call dispatch has returned from,
// may be overwritten by the worker's next call: an NFSv3 NULL, GETATTR,
// READ or WRITE, whose handlers keep no part of their call once dispatch
// returns (a WRITE that go-nfs executes keeps copies of what it needs
// after: the record in the pipe, decodeWriteCall's and newAttrFix's
// handles; a retransmission waiting for its original copies its call, see
// replay). The buffer of any other call is left to the garbage collector.
// A worker keeps a reusable buffer of up to keepCallBuf bytes for its next
// call and gives a larger one, which a large WRITE took from the pool of
// READ replies, back to that pool: a stream of large WRITEs then
// allocates, zeroes and collects no buffer per call.
func callKeepsNothing(msg []byte) bool {
	if len(msg) < 24 {
		return false
	}
	// RFC 5531 §9: xid, mtype, rpcvers, prog, vers, proc.
	prog, vers, proc := binary.BigEndian.Uint32(msg[12:]), binary.BigEndian.Uint32(msg[16:]), binary.BigEndian.Uint32(msg[20:])
	if prog != ProgNFS || vers != 3 {
		return false
	}
	switch proc {
	case ProcNull, ProcGetattr, ProcRead, ProcWrite:
		return true
	}
	return false
}

// dispatch answers or forwards one call. An error ends the session.
func (ss *session) dispatch(msg []byte) error {
	var h xdr.CallHeader
	args, err := h.Unmarshal(msg)
	switch {
	case errors.Is(err, xdr.ErrRPCVersion):
		// RFC 5531 §9: MSG_DENIED, RPC_MISMATCH with the versions we speak.
		rh := xdr.ReplyHeader{XID: h.XID, Stat: xdr.MsgDenied, RejectStat: xdr.RejectRPCMismatch,
			Mismatch: xdr.Mismatch{Low: xdr.RPCVersion, High: xdr.RPCVersion}}
		return ss.send(rh.Append(nil))
	case errors.Is(err, xdr.ErrTooLong):
		rh := xdr.ReplyHeader{XID: binary.BigEndian.Uint32(msg), Stat: xdr.MsgDenied, RejectStat: xdr.RejectAuthError,
			AuthStat: xdr.AuthBadCred}
		return ss.send(rh.Append(nil))
	case err != nil:
		// Not a call (a reply, or a record too short): there is no one
		// to answer; over TCP the stream is out of step.
		return err
	}
	if ss.s.cfg.OnCall != nil {
		ss.s.cfg.OnCall(ss.network, &h)
	}
	switch {
	case h.Prog == ProgNFS && (ss.network == "rdma" || ss.s.cfg.NFSOverTCP):
		if h.Vers != 3 {
			return ss.send(acceptedReply(h.XID, xdr.AcceptProgMismatch, xdr.Mismatch{Low: 3, High: 3}))
		}
		if h.Proc > ProcCommit {
			return ss.send(acceptedReply(h.XID, xdr.AcceptProcUnavail, xdr.Mismatch{}))
		}
	case h.Prog == ProgMount:
		if h.Vers != 3 {
			return ss.send(acceptedReply(h.XID, xdr.AcceptProgMismatch, xdr.Mismatch{Low: 3, High: 3}))
		}
		if h.Proc > MountProcExport {
			return ss.send(acceptedReply(h.XID, xdr.AcceptProcUnavail, xdr.Mismatch{}))
		}
		if ss.s.dh != nil {
			r := xdr.NewReader(msg[args:])
			reply, ok := ss.s.mount(h.Proc, ss.client, &r, successReply(h.XID, nil))
			if !ok {
				reply = acceptedReply(h.XID, xdr.AcceptGarbageArgs, xdr.Mismatch{})
			}
			return ss.send(reply)
		}
		if h.Proc == MountProcNull {
			return ss.send(successReply(h.XID, nil))
		}
		if h.Proc == MountProcExport {
			// go-nfs v0.0.4 has no EXPORT: it sends a reply without
			// results.
			return ss.send(successReply(h.XID, appendExports(nil, ss.s.cfg.Exports)))
		}
		if !goNFSArgsOK(h.Prog, h.Proc, msg[args:]) { // go-nfs allocates what lengths claim
			return ss.send(acceptedReply(h.XID, xdr.AcceptGarbageArgs, xdr.Mismatch{}))
		}
		return ss.forward(pendingCall{xid: h.XID}, msg)
	default:
		// NFSACL, NLM and anything else go-nfs does not serve (RFC 5531
		// §9: PROG_UNAVAIL). The Linux client probes NFSACL at every
		// mount and takes this answer as "no ACLs".
		ss.s.log.Debug("nfs: program unavailable", "network", ss.network, "call", ProcName(h.Prog, h.Vers, h.Proc))
		return ss.send(acceptedReply(h.XID, xdr.AcceptProgUnavail, xdr.Mismatch{}))
	}
	return ss.dispatchNFS(&h, msg, args)
}

// appendExports appends MOUNT EXPORT's results (RFC 1813 §5.2.5): the
// exports list of dirs (nil: "/"), each with an empty groups list (open
// to every client).
//
//	exports: exportnode *; exportnode: dirpath ex_dir; groups ex_groups;
//	exports ex_next;  groups: groupnode *
func appendExports(b []byte, dirs []string) []byte {
	if dirs == nil {
		dirs = []string{"/"}
	}
	for _, d := range dirs {
		b = xdr.AppendBool(b, true)
		b = xdr.AppendString(b, d)
		b = xdr.AppendBool(b, false)
	}
	return xdr.AppendBool(b, false)
}

// dispatchNFS handles an NFSv3 call: through the duplicate request cache if
// it is not idempotent, then locally (NULL, LINK, COMMIT, READDIR,
// READDIRPLUS, and the everyday calls of server.go's list) or by go-nfs.
func (ss *session) dispatchNFS(h *xdr.CallHeader, msg []byte, args int) error {
	var entry *drcEntry
	if nonIdempotent(h.Proc) {
		k := newDRCKey(ss.client, h.XID, h.Prog, h.Vers, h.Proc, msg[args:])
		e, dup := ss.s.drc.lookup(k)
		if dup {
			ss.replay(e, h, msg, args)
			return nil
		}
		entry = e
	}
	if ss.s.dh != nil {
		if f := nativeProc(h.Proc); f != nil {
			return ss.execute(f, entry, h, msg[args:])
		}
		if _, checked := checkedAccess[h.Proc]; checked {
			c, refusal := ss.caller(h)
			if refusal == nil {
				refusal = ss.permit(&c, h.Proc, msg[args:])
			}
			if refusal != nil {
				return ss.answer(entry, refusal)
			}
		}
	}
	if ss.s.dh == nil && !goNFSArgsOK(h.Prog, h.Proc, msg[args:]) { // go-nfs allocates what lengths claim
		return ss.answer(entry, acceptedReply(h.XID, xdr.AcceptGarbageArgs, xdr.Mismatch{}))
	}
	if h.Proc == ProcSetattr {
		ss.s.forgetOpen(msg[args:])
	}
	switch h.Proc {
	case ProcNull:
		// RFC 1813 §3.3.0: no work, a void result; not worth go-nfs's
		// pipe and goroutines.
		return ss.answer(entry, successReply(h.XID, nil))
	case ProcLink:
		reply := successReply(h.XID, ss.s.linkBilly(msg[args:]))
		return ss.answer(entry, reply)
	case ProcCommit:
		results, ok := ss.s.commit(msg[args:])
		if !ok {
			return ss.answer(entry, acceptedReply(h.XID, xdr.AcceptGarbageArgs, xdr.Mismatch{}))
		}
		return ss.answer(entry, successReply(h.XID, results))
	case ProcReaddir, ProcReaddirplus:
		results, ok := ss.s.readdir(msg[args:], h.Proc == ProcReaddirplus)
		if !ok {
			return ss.answer(entry, acceptedReply(h.XID, xdr.AcceptGarbageArgs, xdr.Mismatch{}))
		}
		return ss.answer(entry, successReply(h.XID, results))
	case ProcRead:
		reply, rb, ok := ss.s.read(h.XID, msg[args:])
		if !ok {
			reply = acceptedReply(h.XID, xdr.AcceptGarbageArgs, xdr.Mismatch{})
		}
		return ss.sendPooled(reply, rb)
	case ProcGetattr:
		reply, ok := ss.s.getattr(h.XID, msg[args:])
		if !ok {
			reply = acceptedReply(h.XID, xdr.AcceptGarbageArgs, xdr.Mismatch{})
		}
		return ss.send(reply)
	case ProcLookup:
		reply, ok := ss.s.lookup(h.XID, msg[args:])
		if !ok {
			reply = acceptedReply(h.XID, xdr.AcceptGarbageArgs, xdr.Mismatch{})
		}
		return ss.send(reply)
	case ProcFsinfo:
		return ss.forward(pendingCall{xid: h.XID, entry: entry, fsinfo: true}, msg)
	case ProcWrite:
		if reply, ok := ss.s.writeLocal(h.XID, msg[args:]); ok {
			return ss.answer(entry, reply)
		}
		if ss.s.dh != nil {
			// Nothing of a DirHandler's export goes to go-nfs: what
			// writeLocal could not take does not decode, or names no
			// file.
			return ss.answer(entry, ss.s.writeRefused(h.XID, msg[args:]))
		}
		w, ok := decodeWriteCall(msg[args:])
		if ok {
			return ss.forward(pendingCall{xid: h.XID, entry: entry, write: &w, attrs: &attrFix{proc: ProcWrite, dir: w.fh}}, msg)
		}
	}
	return ss.forward(pendingCall{xid: h.XID, entry: entry, attrs: ss.s.newAttrFix(h.Proc, msg[args:])}, msg)
}

// forgetOpen closes the cached descriptor of the file whose handle args
// begin with (SETATTR's), so that the next call opens the file again with
// the access its new mode and owner give the server.
func (s *Server) forgetOpen(args []byte) {
	dh, isDir := s.handler.(*DirHandler)
	if !isDir {
		return
	}
	r := xdr.NewReader(args)
	if fh, err := r.Opaque(nfs3FHSize); err == nil {
		dh.files.forget(fh, nil)
	}
}

// replay answers a retransmission with the reply of the original call,
// once that reply exists (the original may still be executing, on this
// connection or on the one the client lost). An original that was
// abandoned without a reply is executed again.
func (ss *session) replay(e *drcEntry, h *xdr.CallHeader, msg []byte, args int) {
	send := func() {
		ss.s.log.Debug("nfs: retransmission answered from the duplicate request cache",
			"call", ProcName(h.Prog, h.Vers, h.Proc), "xid", h.XID, "client", ss.client)
		if err := ss.send(e.reply); err != nil {
			ss.close()
		}
	}
	if isClosed(e.done) && e.reply != nil {
		send()
		return
	}
	// The goroutine outlives the worker's use of msg, whose buffer the
	// worker's next call may overwrite (callKeepsNothing): it gets a copy,
	// and a header that points into the copy.
	msg = slices.Clone(msg)
	var hc xdr.CallHeader
	if _, err := hc.Unmarshal(msg); err != nil {
		return // cannot be: h was decoded from the same bytes
	}
	ss.s.wg.Add(1)
	go func() {
		defer ss.s.wg.Done()
		select {
		case <-e.done:
		case <-ss.done:
			return
		}
		if e.reply != nil {
			send()
		} else if err := ss.dispatchNFS(&hc, msg, args); err != nil {
			ss.close()
		}
	}()
}

// answer sends a reply made here, recording it in entry if not nil.
func (ss *session) answer(entry *drcEntry, reply []byte) error {
	if entry != nil {
		ss.s.drc.complete(entry, reply)
	}
	return ss.send(reply)
}

// forward hands a call to go-nfs.
func (ss *session) forward(p pendingCall, msg []byte) error {
	ss.fmu.Lock()
	defer ss.fmu.Unlock()
	ss.pmu.Lock()
	ss.pending = append(ss.pending, p)
	ss.pmu.Unlock()
	_, err := ss.pipe.Write(xdr.AppendRecord(nil, msg, 0))
	return err
}

// readReplies passes go-nfs's replies back to the client.
func (ss *session) readReplies() {
	defer ss.close()
	for {
		reply, err := xdr.ReadRecord(ss.pipe, nil, ss.s.maxMsg)
		if err != nil {
			return
		}
		ss.pmu.Lock()
		if len(ss.pending) == 0 {
			ss.pmu.Unlock()
			ss.s.log.Error("nfs: go-nfs replied to no call", "network", ss.network)
			return
		}
		p := ss.pending[0]
		ss.pending = ss.pending[1:]
		ss.pmu.Unlock()
		if len(reply) < 4 || binary.BigEndian.Uint32(reply) != p.xid {
			ss.s.log.Error("nfs: go-nfs replied out of order", "network", ss.network, "want_xid", p.xid)
			return
		}
		if p.write != nil {
			reply = ss.s.finishWrite(reply, p.write)
		}
		if p.fsinfo {
			reply = ss.s.finishFsinfo(reply)
		}
		if p.attrs != nil {
			reply = ss.s.finishAttrs(reply, p.attrs)
		}
		if err := ss.answer(p.entry, reply); err != nil {
			return
		}
	}
}

// send writes one reply to the client. The workers send at once: a
// msgConn's WriteMsg is safe for concurrent use, and over RDMA the
// replies' work requests are then posted together.
func (ss *session) send(reply []byte) error {
	return ss.c.WriteMsg(reply)
}

// directWriter is a msgConn that may send a reply's DDP-eligible result
// from the reply's own buffer (transport.Conn.WriteMsgDirect).
type directWriter interface {
	WriteMsgDirect(msg []byte, done func()) error
}

// sendPooled writes reply, built in rb's pooled buffer (nil: not pooled),
// and gives the buffer back once the connection is done with it: over RDMA
// after the READ data went to the client's Write chunk straight from it.
func (ss *session) sendPooled(reply []byte, rb *replyBuf) error {
	if dw, ok := ss.c.(directWriter); ok && rb != nil {
		rb.b = reply
		return dw.WriteMsgDirect(reply, rb.put)
	}
	err := ss.send(reply) // WriteMsg copies the reply: its buffer is free after
	putReplyBuf(rb, reply)
	return err
}

// successResults returns a reader of the results of reply, an RPC reply
// go-nfs made, and their offset in reply; ok is false unless the reply is
// MSG_ACCEPTED with SUCCESS (RFC 5531 §9), which is all the dispatch
// layer ever rewrites.
func successResults(reply []byte) (r xdr.Reader, off int, ok bool) {
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(reply)
	if err != nil || rh.Stat != xdr.MsgAccepted || rh.AcceptStat != xdr.AcceptSuccess {
		return xdr.Reader{}, 0, false
	}
	return xdr.NewReader(reply[off:]), off, true
}

// acceptedReply is an MSG_ACCEPTED reply other than SUCCESS (RFC 5531 §9);
// mm is sent with PROG_MISMATCH only.
func acceptedReply(xid uint32, stat xdr.AcceptStat, mm xdr.Mismatch) []byte {
	rh := xdr.ReplyHeader{XID: xid, Stat: xdr.MsgAccepted, AcceptStat: stat, Mismatch: mm}
	return rh.Append(nil)
}

// successReply is an MSG_ACCEPTED SUCCESS reply carrying results.
func successReply(xid uint32, results []byte) []byte {
	return append(appendSuccessHeader(make([]byte, 0, max(24+len(results), smallReply)), xid), results...)
}

// appendSuccessHeader appends the header of an MSG_ACCEPTED SUCCESS reply
// to xid (RFC 5531 §9), which its results follow.
func appendSuccessHeader(b []byte, xid uint32) []byte {
	rh := xdr.ReplyHeader{XID: xid, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}
	return rh.Append(b)
}

// smallReply is the capacity a reply starts with: room for the results
// the dispatch layer appends to a reply header of its own (a GETATTR's
// fattr3, a WRITE's wcc_data, a LOOKUP's handle and two attributes), so
// that they are appended without growing the buffer.
const smallReply = 320

// pipeListener is the net.Listener go-nfs serves: its connections are the
// go-nfs ends of the sessions' pipes.
type pipeListener struct {
	ch        chan net.Conn
	done      chan struct{}
	closeOnce sync.Once
}

func newPipeListener() *pipeListener {
	return &pipeListener{ch: make(chan net.Conn), done: make(chan struct{})}
}

// Accept implements net.Listener.
func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.done:
		return nil, &net.OpError{Op: "accept", Net: "pipe", Addr: l.Addr(), Err: net.ErrClosed}
	}
}

// deliver hands c to go-nfs; false if the listener is closed.
func (l *pipeListener) deliver(c net.Conn) bool {
	select {
	case l.ch <- c:
		return true
	case <-l.done:
		return false
	}
}

// Close implements net.Listener.
func (l *pipeListener) Close() error {
	l.closeOnce.Do(func() { close(l.done) })
	return nil
}

// Addr implements net.Listener.
func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "go-nfs" }

// pipeConn is go-nfs's end of a session's pipe; it reports the client
// connection's addresses (go-nfs hands the conn to Handler.Mount).
type pipeConn struct {
	net.Conn
	local, remote net.Addr
}

func (c *pipeConn) LocalAddr() net.Addr  { return c.local }
func (c *pipeConn) RemoteAddr() net.Addr { return c.remote }

// SetDeadline and friends are no-ops: the session bounds nothing go-nfs
// reads, and net.Pipe's deadlines would make go-nfs drop the connection.
func (c *pipeConn) SetDeadline(time.Time) error      { return nil }
func (c *pipeConn) SetReadDeadline(time.Time) error  { return nil }
func (c *pipeConn) SetWriteDeadline(time.Time) error { return nil }

// clientHost is the host part of a connection's remote address.
func clientHost(a net.Addr) string {
	if a == nil {
		return ""
	}
	s := a.String()
	if h, _, err := net.SplitHostPort(s); err == nil {
		return h
	}
	return s
}
