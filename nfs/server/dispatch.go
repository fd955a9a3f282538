package server

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/internal/monotime"
	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
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

// session serves one client connection: its workers (readCalls) read its
// calls, execute them and send their replies.
type session struct {
	s       *Server
	network string // "rdma" or "tcp"
	c       msgConn
	client  string // the client's host, for the duplicate request cache
	done    chan struct{}
	pending pendingCalls // calls dispatched, for the metrics
	// inline is the call the polling goroutine executes (inlineCalls),
	// for the metrics, kept here instead of in pending: written and read
	// by that goroutine only. inlineXID is its XID with inlineSet (0:
	// none), which observe compares a reply's XID with: the transport
	// delivers no second call with an XID while the first is unanswered,
	// so no other goroutine's reply matches it.
	inline    pendingCall
	inlineXID atomic.Uint64
	// ran holds the polling goroutine's calls answered in the poll
	// loop's current run, counted but not yet timed: their durations
	// end at the run's one reading of the clock (InlineRunDone). At most
	// a run's calls (the connection's credits); that goroutine's only.
	ran     []ranCall
	started time.Time
	addr    netip.AddrPort // the client's, for the exports' rules
	// portLogged: a call of the session was refused for its port
	// (refusePort) and logged.
	portLogged atomic.Bool

	closeOnce sync.Once

	// concurrent bounds the workers (readCalls); workers counts them and
	// executing those executing a call.
	wkmu                           sync.Mutex
	concurrent, workers, executing int
}

// close ends the session and closes its connection. Calls still executing
// finish: each records its reply in the duplicate request cache before it
// sends it (answer), so that a retransmission on another connection gets
// it even though this one is gone.
func (ss *session) close(why error) {
	ss.closeOnce.Do(func() {
		close(ss.done)
		_ = ss.c.Close()
		ss.s.removeSession(ss)
		ss.logEnd(why)
	})
}

// logEnd logs, once, the end of the session: its peer, how long it
// lasted, what it carried (over RDMA: the transport's counters), and why
// it ended.
func (ss *session) logEnd(why error) {
	args := []any{"network", ss.network, "remote", ss.c.RemoteAddr().String(),
		"duration", time.Since(ss.started).Round(time.Millisecond), "why", reasonOf(why)}
	if st, ok := ss.c.(interface{ Stats() transport.Stats }); ok {
		s := st.Stats()
		args = append(args, "rpcrdma_version", s.Negotiated.Version, "calls", s.Recvs, "replies", s.Sends, "rdma_read_bytes", s.RDMAReadBytes,
			"rdma_write_bytes", s.RDMAWriteBytes, "slow_replies", s.SlowReplies, "unanswered", s.Unanswered)
	}
	ss.s.log.Info("nfs: connection closed", args...)
}

// reasonOf says in a few words why a session ended.
func reasonOf(err error) string {
	switch {
	case err == nil:
		return "server closing"
	case errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed):
		return "closed by the peer"
	}
	return err.Error()
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
	w := &worker{out: make([]byte, 0, workerReply)}
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
			ss.close(err)
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
		err = ss.dispatch(w, msg)
		w.h = xdr.CallHeader{} // its credential aliases msg, which may go back to a pool
		buf = nil
		if callKeepsNothing(msg) {
			if cap(msg) <= keepCallBuf {
				buf = msg[:0]
			} else if rb != nil {
				// A large call's buffer goes back to the pool it came
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
			ss.close(err)
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
// may be overwritten by the worker's next call: an NFSv3 or MOUNT v3 call.
// Every such call is executed, and answered, before dispatch returns, and
// keeps nothing of its message after: what a procedure keeps (a name in
// the handle index, a key of the open-file cache, a mount list entry, the
// duplicate request cache's key and reply) is a copy, and a
// retransmission waiting for its original keeps no part of its call
// (replay). A worker keeps a reusable buffer of up to keepCallBuf bytes
// for its next call and gives a larger one, which a large WRITE took from
// the pool of READ replies, back to that pool: a stream of large WRITEs
// then allocates, zeroes and collects no buffer per call. The buffer of
// any other message is left to the garbage collector.
func callKeepsNothing(msg []byte) bool {
	if len(msg) < 24 {
		return false
	}
	// RFC 5531 §9: xid, mtype, rpcvers, prog, vers, proc.
	prog, vers := binary.BigEndian.Uint32(msg[12:]), binary.BigEndian.Uint32(msg[16:])
	return (prog == nfs.ProgNFS || prog == nfs.ProgMount) && vers == 3
}

// worker is what a session's worker (readCalls) keeps from one call to
// the next, so that a call allocates none of it: the call's header, and
// the buffer its reply is built in (call.successReply). A reply is
// written (msgConn.WriteMsg copies it, or writes it, before it returns)
// or copied into the duplicate request cache (drc.complete) before the
// worker takes its next call, so the buffer is free again by then. A
// reply that outgrows it (a READDIR's) is built in a buffer of its own.
type worker struct {
	h   xdr.CallHeader // the call's, while it executes; zero between calls
	out []byte
	// inline: the worker is a connection's polling goroutine
	// (inlineCalls): its calls must not wait on the disk (call.nowait).
	// again: the call was begun inline and found it would (its OnCall
	// already called).
	inline, again bool
	// arrived: when the transport received the inline worker's call
	// (zero: not known).
	arrived time.Time
}

// workerReply is the capacity of a worker's reply buffer: room for every
// reply but READDIR's, READLINK's and READ's (which has pooled buffers of
// its own, replyBuf).
const workerReply = 1 << 10

// dispatch executes one call and sends its reply. An error ends the
// session.
func (ss *session) dispatch(w *worker, msg []byte) error {
	h := &w.h
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
	if ss.s.cfg.OnCall != nil && !w.again {
		ss.s.cfg.OnCall(ss.network, h)
	}
	ss.begin(h, w)
	switch {
	case h.Prog == nfs.ProgNFS && (ss.network == NetRDMA || ss.s.cfg.NFSOverTCP):
		if h.Vers != 3 {
			return ss.send(acceptedReply(h.XID, xdr.AcceptProgMismatch, xdr.Mismatch{Low: 3, High: 3}))
		}
		if h.Proc > nfs.ProcCommit {
			return ss.send(acceptedReply(h.XID, xdr.AcceptProcUnavail, xdr.Mismatch{}))
		}
		return ss.dispatchNFS(w, msg, args)
	case h.Prog == nfs.ProgMount:
		if h.Vers != 3 {
			return ss.send(acceptedReply(h.XID, xdr.AcceptProgMismatch, xdr.Mismatch{Low: 3, High: 3}))
		}
		if h.Proc > nfs.MountProcExport {
			return ss.send(acceptedReply(h.XID, xdr.AcceptProcUnavail, xdr.Mismatch{}))
		}
		if _, refusal := ss.caller(h, nil); refusal != nil {
			return ss.send(refusal) // knfsd's mountd authenticates every call too
		}
		r := xdr.NewReader(msg[args:])
		reply, ok := ss.s.mount(h.Proc, ss, &r, successReply(h.XID, nil))
		if !ok {
			reply = acceptedReply(h.XID, xdr.AcceptGarbageArgs, xdr.Mismatch{})
		}
		return ss.send(reply)
	default:
		// NFSACL, NLM and any other program (RFC 5531 §9:
		// PROG_UNAVAIL). The Linux client probes NFSACL at every mount
		// and takes this answer as "no ACLs".
		ss.s.log.Debug("nfs: program unavailable", "network", ss.network, "call", nfs.ProcName(h.Prog, h.Vers, h.Proc))
		return ss.send(acceptedReply(h.XID, xdr.AcceptProgUnavail, xdr.Mismatch{}))
	}
}

// dispatchNFS executes an NFSv3 call, through the duplicate request cache
// if it is not idempotent: the procedures of nativeProcs as the caller,
// the others (the calls of a client's everyday reading and writing) as the
// server once the caller's access is checked (checkedAccess).
func (ss *session) dispatchNFS(w *worker, msg []byte, args int) error {
	h := &w.h
	var entry *drcEntry
	if nonIdempotent(h.Proc) {
		k := newDRCKey(ss.client, h.XID, h.Prog, h.Vers, h.Proc, msg[args:])
		e, dup := ss.s.drc.lookup(k)
		if dup {
			ss.replay(e, h)
			return nil
		}
		entry = e
	}
	if f := nativeProc(h.Proc); f != nil {
		return ss.execute(w, f, entry, msg[args:])
	}
	// Every call is authenticated, NULL's too (RFC 5531 §9; knfsd's
	// svc_authenticate): a credential the server refuses gets
	// MSG_DENIED, AUTH_ERROR.
	c, refusal := ss.caller(h, msg[args:])
	c.out, c.nowait = w.out, w.inline
	if refusal == nil && c.denied && h.Proc != nfs.ProcNull {
		refusal = staleReply(h.Proc, h.XID)
	}
	if refusal == nil {
		refusal = ss.refusePort(&c, h)
	}
	if _, checked := checkedAccess[h.Proc]; checked && refusal == nil {
		refusal = ss.permit(&c, h.Proc, msg[args:])
		if c.wouldBlock {
			ss.s.drc.abandon(entry)
			return errWouldBlock // the check needs an identity thread; nothing sent
		}
	}
	if refusal != nil {
		return ss.answer(entry, refusal)
	}
	s := ss.s
	switch h.Proc {
	case nfs.ProcNull:
		// RFC 1813 §3.3.0: no work, a void result.
		return ss.send(c.successReply())
	case nfs.ProcGetattr:
		reply, ok := s.getattr(&c, msg[args:])
		return ss.send(garbageIfNot(ok, h.XID, reply))
	case nfs.ProcLookup:
		reply, ok := s.lookup(&c, msg[args:])
		if c.wouldBlock {
			return errWouldBlock
		}
		return ss.send(garbageIfNot(ok, h.XID, reply))
	case nfs.ProcRead:
		reply, rb, ok := s.read(&c, msg[args:])
		if c.wouldBlock {
			return errWouldBlock // nothing sent: the call is executed again off the poll loop
		}
		if !ok {
			return ss.send(acceptedReply(h.XID, xdr.AcceptGarbageArgs, xdr.Mismatch{}))
		}
		return ss.sendPooled(reply, rb)
	case nfs.ProcWrite:
		reply, ok := s.write(&c, msg[args:])
		if c.wouldBlock {
			ss.s.drc.abandon(entry)
			return errWouldBlock
		}
		return ss.answer(entry, garbageIfNot(ok, h.XID, reply))
	case nfs.ProcReaddir, nfs.ProcReaddirplus:
		reply, ok := s.readdir(&c, msg[args:], h.Proc == nfs.ProcReaddirplus)
		return ss.send(garbageIfNot(ok, h.XID, reply))
	case nfs.ProcCommit:
		reply, ok := s.commit(&c, msg[args:])
		return ss.send(garbageIfNot(ok, h.XID, reply))
	}
	// Not reached: every procedure up to COMMIT is one of the above or
	// native.
	return ss.answer(entry, acceptedReply(h.XID, xdr.AcceptProcUnavail, xdr.Mismatch{}))
}

// garbageIfNot returns reply if ok, else GARBAGE_ARGS (RFC 5531 §9): the
// arguments did not decode.
func garbageIfNot(ok bool, xid uint32, reply []byte) []byte {
	if ok {
		return reply
	}
	return acceptedReply(xid, xdr.AcceptGarbageArgs, xdr.Mismatch{})
}

// replay answers a retransmission with the reply of the original call,
// once that reply exists: the original may still be executing, on this
// connection or on the one the client lost, and records its reply before
// it sends it (answer), whether or not its connection is still there.
func (ss *session) replay(e *drcEntry, h *xdr.CallHeader) {
	xid, call := h.XID, nfs.ProcName(h.Prog, h.Vers, h.Proc)
	send := func() {
		if e.reply == nil {
			return // abandoned: the original is executed again, and answers
		}
		ss.s.log.Debug("nfs: retransmission answered from the duplicate request cache",
			"call", call, "xid", xid, "client", ss.client)
		if err := ss.send(e.reply); err != nil {
			ss.close(err)
		}
	}
	done := ss.s.drc.wait(e)
	if done == nil {
		send()
		return
	}
	// The worker goes on to the next call; a goroutine waits for the
	// original's reply.
	ss.s.wg.Add(1)
	go func() {
		defer ss.s.wg.Done()
		select {
		case <-done:
			send()
		case <-ss.done:
		}
	}()
}

// answer sends a reply made here, recording it first in entry if not nil.
func (ss *session) answer(entry *drcEntry, reply []byte) error {
	if entry == nil {
		return ss.send(reply)
	}
	// One reading of the clock for the cache's timestamp and the call's
	// duration; none for the polling goroutine's call, whose entry is
	// stamped with its arrival (the cache keeps replies for minutes) and
	// whose duration the run's reading ends.
	var now time.Time
	if ss.isInline(reply) {
		now = ss.inline.start
	} else {
		now = monotime.Now()
	}
	ss.s.drc.complete(entry, reply, now)
	return ss.sendAt(reply, now)
}

// send writes one reply to the client (sendAt, reading the clock itself).
func (ss *session) send(reply []byte) error { return ss.sendAt(reply, time.Time{}) }

// sendAt writes one reply to the client, counted in the metrics as sent
// at now (observe; zero: read the clock). The workers send at once: a
// msgConn's WriteMsg is safe for concurrent use, and over RDMA the
// replies' work requests are then posted together.
func (ss *session) sendAt(reply []byte, now time.Time) error {
	ss.observe(reply, now)
	return ss.c.WriteMsg(reply)
}

// inlineSet marks session.inlineXID as holding a call's XID.
const inlineSet = 1 << 32

// begin notes, for the metrics, that w dispatches the call h: the polling
// goroutine's call in ss.inline, timed from its arrival (the transport's
// reading of the clock for the poll that received it); another's in
// ss.pending, timed from now.
func (ss *session) begin(h *xdr.CallHeader, w *worker) {
	if !w.inline {
		ss.pending.begin(h)
		return
	}
	start := w.arrived
	if start.IsZero() {
		start = monotime.Now()
	}
	ss.inline = pendingCall{prog: h.Prog, proc: h.Proc, start: start}
	ss.inlineXID.Store(inlineSet | uint64(h.XID))
}

// observe counts reply in the metrics, with the call it answers, before
// it is sent: a client that has the reply sees it counted. now is the
// time of the reply, if the caller read the clock (zero: read it when a
// call is found). The polling goroutine's call is timed at the end of the
// poll loop's run of calls (endRun), still before its reply is posted:
// the run's replies are posted together after it, and one reading of the
// clock (a system call where the clock is the HPET) times them all.
func (ss *session) observe(reply []byte, now time.Time) {
	if len(reply) < 4 {
		return
	}
	if ss.isInline(reply) {
		ss.inlineXID.Store(0)
		pm := ss.s.metrics.count(ss.inline, reply)
		ss.ran = append(ss.ran, ranCall{pm: pm, start: ss.inline.start})
		ss.s.inlineAnswered.Add(1)
		return
	}
	if c, ok := ss.pending.end(binary.BigEndian.Uint32(reply)); ok {
		ss.s.metrics.observe(c, reply, now)
	}
}

// isInline reports whether reply (at least 4 bytes) answers the polling
// goroutine's call: true only on that goroutine (inlineXID).
func (ss *session) isInline(reply []byte) bool {
	return len(reply) >= 4 && ss.inlineXID.Load() == inlineSet|uint64(binary.BigEndian.Uint32(reply))
}

// ranCall is a call of session.ran: its procedure's metrics and its start.
type ranCall struct {
	pm    *procMetrics
	start time.Time
}

// endRun observes the durations of the calls of ran, ended now, and
// empties it.
func (ss *session) endRun() {
	if len(ss.ran) == 0 {
		return
	}
	now := monotime.Now()
	for _, r := range ss.ran {
		r.pm.dur.Observe(now.Sub(r.start).Seconds())
	}
	ss.ran = ss.ran[:0]
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
		ss.observe(reply, time.Time{})
		rb.b = reply
		return dw.WriteMsgDirect(reply, rb.put)
	}
	err := ss.send(reply) // WriteMsg copies the reply: its buffer is free after
	putReplyBuf(rb, reply)
	return err
}

// acceptedReply is an MSG_ACCEPTED reply other than SUCCESS (RFC 5531 §9);
// mm is sent with PROG_MISMATCH only.
func acceptedReply(xid uint32, stat xdr.AcceptStat, mm xdr.Mismatch) []byte {
	rh := xdr.ReplyHeader{XID: xid, Stat: xdr.MsgAccepted, AcceptStat: stat, Mismatch: mm}
	return rh.Append(nil)
}

// successReply is an MSG_ACCEPTED SUCCESS reply carrying results, in a
// buffer of its own (a call's procedure uses call.successReply instead).
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
// most procedures append to a reply header (a GETATTR's fattr3, a WRITE's
// wcc_data, a LOOKUP's handle and two attributes), so that they are
// appended without growing the buffer.
const smallReply = 320

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
