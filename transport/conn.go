package transport

import (
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Conn is one RPC-over-RDMA version 1 connection, as a net.Conn carrying an
// RFC 5531 record-marked byte stream (see the package documentation). A Conn
// from Dial is a requester; a Conn from a Listener is a responder.
//
// Read, Write, WriteMsg, ReadMsg, Close, the deadline setters and Stats may
// be called from any goroutine. Writes are serialised (the record stream is
// one stream); one Read at a time makes sense, for the same reason. A
// responder's WriteMsg calls are not serialised: replies to different
// calls go out at once.
type Conn struct {
	// Ownership and lock order. Each field says what owns it. Most of the
	// state, the role's (reqState, svcState) and the current endpoint's
	// included, is guarded by mu. The goroutines that take mu are the
	// callers' (Read, ReadMsg, Write, WriteMsg, Call, Close, Stats), each
	// endpoint's poll loop (pollLoop: the only one that handles its
	// completions) and endpoint loop (endpointLoop: bulk posts and the trim
	// timers), a requester's reconnection and call watchdog goroutines, and
	// the responder's retries when a Listener's budget has room
	// (retryPulls).
	//
	// Lock wmu BEFORE mu. Lock mu BEFORE the Listener's budgets
	// (sharedBudget.mu), the deadlines (deadline.mu) and an endpoint's post
	// queue (postQueue.mu); those never take another lock. Never post send
	// work requests (postQueue's posting, verbs.Conn.PostSend) or shut an
	// endpoint down with mu held: work requests are queued under mu and
	// posted by unlock once mu is released. Listener.mu is never held with
	// mu. Callbacks run without mu (WriteMsgDirect's done; the budgets'
	// retries, on goroutines of their own), except ReadMsgAlloc's get,
	// which must not call the Conn.
	//
	// Debug builds (-tags rpcrdmadebug, lockcheck_debug.go) check this:
	// lock and lockW record the holder and panic on a lock taken out of
	// order or twice, assertLocked panics in a ...Locked function called
	// without mu, flush and shutdown panic when called with mu held, and an
	// endpoint's completions and trims panic off the goroutine that owns
	// them (endpoint.pollG, endpoint.loopG). Normal builds compile the
	// checks to nothing.

	// Set before the Conn is returned by Dial or Accept; read-only after.
	cfg   Config
	role  connRole // &reqState or &svcState, chosen by newConn
	laddr net.Addr
	raddr net.Addr
	dial  func() (*endpoint, error) // requester: makes a new connection
	// bg counts the goroutines Close waits for (a requester's
	// reconnection and call watchdog, the responder's Listener
	// accounting); added to under mu while closed is false.
	bg sync.WaitGroup

	wmu      sync.Mutex   // serialises writers of the record stream
	wmuCheck lockCheck    // debug builds: wmu's holder
	deframer xdr.Deframer // owned by wmu's holder

	mu       sync.Mutex
	muCheck  lockCheck        // debug builds: mu's holder
	flushEP  *endpoint        // has batches queued under mu: unlock posts them
	holdPost bool             // the poll loop holds the posts: unlock leaves flushEP's batches to it (serveInline, gatherCalls)
	dones    *[]func()        // WriteMsgDirect dones due: unlock runs them
	ep       *endpoint        // the current connection; nil while reconnecting
	epGen    uint64           // connections started (endpoint.gen)
	last     *cmpriv.Settings // the settings of the last connection, for Stats once it is gone
	closed   bool             // Close was called
	err      error            // terminal error: reads and writes fail with it
	eof      bool             // the peer went away: reads drain, then io.EOF
	readQ    ring             // slots whose message waits for Read
	cur      int              // slot being read, -1 for none
	curHdr   [4]byte          // its record mark
	curOff   int              // bytes of record mark + message already read
	reqState requester        // the requester's state, guarded by mu
	svcState responder        // the responder's state, guarded by mu

	// Made by newConn. The wake channels are sent to (wake) by any
	// goroutine, under mu or not; done is closed by Close under mu.
	readWake  chan struct{} // a message or an error arrived
	writeWake chan struct{} // a slot, a credit or an error arrived
	done      chan struct{} // closed by Close
	closedCh  chan struct{} // closed once Close is done (Closed)
	rd, wd    deadline      // own lock (deadline.mu)

	stats counters // atomic
}

func newConn(cfg Config, role cmpriv.Role) *Conn {
	c := &Conn{
		cfg:       cfg,
		cur:       -1,
		readWake:  make(chan struct{}, 1),
		writeWake: make(chan struct{}, 1),
		done:      make(chan struct{}),
		closedCh:  make(chan struct{}),
		rd:        makeDeadline(),
		wd:        makeDeadline(),
	}
	c.reqState.c, c.svcState.c = c, c
	if role == cmpriv.Requester {
		c.role = &c.reqState
	} else {
		c.role = &c.svcState
	}
	c.deframer.MaxRecord = cfg.MaxRPCSize
	c.deframer.SkipOversized = true
	return c
}

func wake(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// wakeAllLocked wakes readers and writers, after state changed under c.mu.
func (c *Conn) wakeAllLocked() {
	c.assertLocked("wakeAllLocked")
	wake(c.readWake)
	wake(c.writeWake)
}

// failLocked records a terminal error: the Conn is unusable from now on.
func (c *Conn) failLocked(err error) {
	c.assertLocked("failLocked")
	if c.err == nil {
		c.err = err
	}
	c.wakeAllLocked()
}

// Read reads the record-marked stream of received RPC messages: each message
// comes as one record whose record mark has the last-fragment bit set. It
// blocks until a message is available, the read deadline passes, the Conn is
// closed (net.ErrClosed) or the peer disconnected and every message received
// before was read (io.EOF).
func (c *Conn) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	for {
		c.lock()
		if c.closed {
			c.unlock()
			return 0, c.opError("read", net.ErrClosed)
		}
		if isClosed(c.rd.wait()) {
			// A passed deadline fails the read even when a message is
			// waiting, as net.TCPConn and net.Pipe do.
			c.unlock()
			return 0, c.opError("read", errDeadline)
		}
		if c.cur < 0 {
			if idx, ok := c.readQ.pop(); ok {
				c.cur, c.curOff = idx, 0
				v := c.role.slotViewLocked(idx)
				binary.BigEndian.PutUint32(c.curHdr[:], xdr.LastFragment|uint32(v.len()))
			}
		}
		if c.cur >= 0 {
			v := c.role.slotViewLocked(c.cur)
			n := 0
			if c.curOff < 4 {
				n = copy(p, c.curHdr[c.curOff:])
			}
			if n < len(p) {
				n += v.copyAt(p[n:], max(c.curOff+n-4, 0))
			}
			c.curOff += n
			if c.curOff == 4+v.len() {
				c.role.releaseSlotLocked(c.cur)
				c.cur = -1
			}
			c.unlock()
			return n, nil
		}
		if err := c.readErrLocked(); err != nil {
			c.unlock()
			return 0, err
		}
		c.unlock()
		if err := c.waitRead(); err != nil {
			return 0, err
		}
	}
}

// ReadMsg returns the next received RPC message, appended to buf[:0], without
// record marking. It blocks like Read. Several goroutines may call it at
// once (a server executing calls concurrently): each message goes to one
// of them.
//
// A requester's call that failed without a reply from the RPC server is
// returned as a synthesized reply (MSG_ACCEPTED, SYSTEM_ERR, as Read returns
// it) together with an error saying why: a *RemoteError for an RDMA_ERROR
// the responder sent (the call was not executed), an error wrapping
// ErrBadReply for a reply that failed validation (the call may have been
// executed), or an error wrapping ErrCallLost when the connection was lost
// with the call in flight and it was not retransmitted (the call may or
// may not have been executed).
func (c *Conn) ReadMsg(buf []byte) ([]byte, error) { return c.readMsg(buf, nil) }

// ReadMsgAlloc is ReadMsg with the buffer chosen once the message's length
// is known: the message is appended to get(n)[:0], where n is its length,
// so that a server can take a buffer of the right size from a pool of its
// own rather than have a large message allocate a new one. get runs with
// the connection's lock held: it must not call c's methods. Its result
// may be shorter than n (then the message allocates, as ReadMsg's would).
// On an error the returned slice is empty and not from get.
//
// A responder's call that was pulled into a buffer of Config.CallBuffers
// is returned in that buffer, get not called: the caller owns it (to give
// back to its pool once done with the call).
func (c *Conn) ReadMsgAlloc(get func(n int) []byte) ([]byte, error) { return c.readMsg(nil, get) }

// readMsg is ReadMsg, with get (if not nil) choosing the buffer.
func (c *Conn) readMsg(buf []byte, get func(n int) []byte) ([]byte, error) {
	for {
		c.lock()
		if c.closed {
			c.unlock()
			return buf[:0], c.opError("read", net.ErrClosed)
		}
		if isClosed(c.rd.wait()) {
			c.unlock()
			return buf[:0], c.opError("read", errDeadline)
		}
		if c.cur >= 0 {
			c.unlock()
			return buf[:0], c.opError("read", errors.New("rpcrdma: ReadMsg during a partial Read"))
		}
		if idx, ok := c.readQ.pop(); ok {
			if m, owned := c.role.takeOwnedLocked(idx, get != nil); owned {
				buf = m // assembled in a buffer of Config.CallBuffers: handed over
			} else {
				v := c.role.slotViewLocked(idx)
				if get != nil {
					buf = get(v.len())
				}
				buf = v.appendTo(buf[:0])
			}
			err := c.role.slotErrLocked(idx)
			c.role.releaseSlotLocked(idx)
			if c.readQ.size > 0 {
				// One wake-up may stand for several messages: pass it
				// on to another reader waiting.
				wake(c.readWake)
			}
			c.unlock()
			return buf, err
		}
		if err := c.readErrLocked(); err != nil {
			wake(c.readWake) // the other readers waiting see it too
			c.unlock()
			return buf[:0], err
		}
		c.unlock()
		if err := c.waitRead(); err != nil {
			return buf[:0], err
		}
	}
}

// readErrLocked is the error a read returns when no message is queued.
func (c *Conn) readErrLocked() error {
	c.assertLocked("readErrLocked")
	switch {
	case c.err != nil && c.eof:
		return io.EOF
	case c.err != nil:
		return c.opError("read", c.err)
	}
	return nil
}

func (c *Conn) waitRead() error {
	select {
	case <-c.readWake:
		return nil
	case <-c.done:
		return nil // the loop sees closed
	case <-c.rd.wait():
		return c.opError("read", errDeadline)
	}
}

// Write writes to the record-marked stream of outgoing RPC messages. Records
// may be split over Writes in any way; each complete record is sent as one
// RPC message (a call for a requester, a reply for a responder) before Write
// returns. A requester's Write blocks while no credit is available. If a
// record cannot be sent (deadline, Close, a bad message), Write returns the
// error with n counting the bytes it consumed; that record and the complete
// records after it in p are not sent.
func (c *Conn) Write(p []byte) (int, error) {
	c.lockW()
	defer c.unlockW()
	if err := c.writeCheck(); err != nil {
		return 0, err
	}
	n := 0
	for n < len(p) {
		// Feed the deframer one record at a time, so that a record is
		// sent before the next one overwrites its buffer.
		m, err := c.deframer.Write(p[n:])
		n += m
		if err != nil {
			return n, c.opError("write", err)
		}
		for rec, ok := c.deframer.Next(); ok; rec, ok = c.deframer.Next() {
			if err := c.role.send(rec); err != nil {
				// The complete records after it are dropped too: a
				// later Write must not send them behind the back of a
				// caller told that this one failed.
				for _, more := c.deframer.Next(); more; _, more = c.deframer.Next() {
				}
				for _, more := c.deframer.NextSkipped(); more; _, more = c.deframer.NextSkipped() {
				}
				return n, err
			}
		}
		for sk, ok := c.deframer.NextSkipped(); ok; sk, ok = c.deframer.NextSkipped() {
			if err := c.role.sendSkipped(sk); err != nil {
				for _, more := c.deframer.NextSkipped(); more; _, more = c.deframer.NextSkipped() {
				}
				return n, err
			}
		}
	}
	return n, nil
}

// WriteMsg sends one RPC message without record marking. A responder's
// WriteMsg calls run concurrently: each reply goes to its own call (by
// XID), and the work requests of replies written at once are posted
// together by whichever writer posts first (see postQueue), while the
// others return. A requester's are serialised, as its Writes. WriteMsg
// keeps no reference to msg: what it sends is copied into registered
// memory before it returns, so the caller may reuse msg at once; only
// Call and CallInto, which own their message until the reply, and
// WriteMsgDirect, which owns it until its done, may expose it in place.
func (c *Conn) WriteMsg(msg []byte) error { return c.role.writeMsg(msg) }

// WriteMsgDirect is WriteMsg for a responder's reply whose DDP-eligible
// result (RFC 8166 §3.5.4: an NFS READ's data) may go to the requester's
// Write chunk by RDMA Write straight from msg, where it is, instead of
// through a copy in registered memory: msg is registered in place through
// the connection's registration cache (Config.DirectPlacementCache), as
// svcrdma sends page-cache pages without copying them. Worth it for
// results of at least Config.DirectPlacementMin bytes in buffers the caller
// reuses (a registration costs more than a copy; a cached one nothing);
// smaller results, results without a Write chunk, and providers that
// cannot register the caller's memory are copied as by WriteMsg.
//
// The Conn may read msg until it calls done; the caller must not change
// msg before then. done is called exactly once, from a goroutine of the
// Conn's or the caller's, and never with the Conn's lock held: before
// WriteMsgDirect returns when msg was copied (or the write failed before
// taking msg), otherwise when the reply's Send completed, or, if the
// connection is lost first, once its queue pair is destroyed, so that no
// late RDMA Write reads msg after done. done must not block.
//
// A requester's WriteMsgDirect is WriteMsg followed by done.
func (c *Conn) WriteMsgDirect(msg []byte, done func()) error {
	return c.role.writeMsgDirect(msg, done)
}

// writeErrLocked is the error a write fails with once the Conn is closed
// or failed, or nil.
func (c *Conn) writeErrLocked() error {
	c.assertLocked("writeErrLocked")
	if c.closed {
		return c.opError("write", net.ErrClosed)
	}
	if c.err != nil {
		return c.opError("write", c.err)
	}
	return nil
}

func (c *Conn) writeCheck() error {
	c.lock()
	defer c.unlock()
	if err := c.writeErrLocked(); err != nil {
		return err
	}
	if isClosed(c.wd.wait()) {
		return c.opError("write", errDeadline)
	}
	return nil
}

// waitWrite blocks a writer until state changes, the deadline passes or the
// Conn is closed.
func (c *Conn) waitWrite() error { return c.waitWriteOr(nil) }

// waitWriteOr is waitWrite that also ends when cancel is closed (a Call's
// context), with errCancelled.
func (c *Conn) waitWriteOr(cancel <-chan struct{}) error {
	select {
	case <-c.writeWake:
		return nil
	case <-c.done:
		return c.opError("write", net.ErrClosed)
	case <-c.wd.wait():
		return c.opError("write", errDeadline)
	case <-cancel:
		return errCancelled
	}
}

// Close closes the connection: it fails blocked and later reads and writes
// with net.ErrClosed, disconnects and frees every resource. A responder
// first waits, up to a second, for the Sends of the replies already
// written to complete, so that a reply written just before Close reaches
// the requester (as TCP delivers what was written before a close). It is
// idempotent and safe from any goroutine.
func (c *Conn) Close() error {
	c.lock()
	if c.closed {
		c.unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	c.failLocked(net.ErrClosed)
	c.role.lingerLocked()
	ep := c.ep
	c.ep = nil
	if ep != nil {
		c.keepSettingsLocked(ep)
	}
	c.role.closeLocked(ep)
	c.unlock()
	if ep != nil {
		c.shutdown(ep)
		c.role.closed(ep)
	}
	// A reconnection in progress sees c.done (its dial is cancelled too)
	// and ends; wait for it so that nothing of the Conn outlives Close.
	c.bg.Wait()
	close(c.closedCh)
	return nil
}

// Closed returns a channel that is closed once Close has freed the
// connection's resources: its Stats are final from then on, and a table
// of connections can keep what it needs of it (its Stats, its addresses)
// and let the Conn go.
func (c *Conn) Closed() <-chan struct{} { return c.closedCh }

// closeLinger bounds how long a responder's Close waits for the Sends of
// the replies written before it.
const closeLinger = time.Second

// lingerLocked waits, releasing c.mu meanwhile, until every Send posted on
// ep has completed (the replies written before Close have reached the
// peer, as TCP delivers what was written before a close), ep is lost, or
// closeLinger has passed. Reads and writes already fail with
// net.ErrClosed.
func (c *Conn) lingerLocked(ep *endpoint) {
	c.assertLocked("lingerLocked")
	deadline := time.Now().Add(closeLinger)
	for c.ep == ep && len(ep.sendFree) < ep.nSend && time.Now().Before(deadline) {
		c.unlock()
		t := time.NewTimer(time.Millisecond) // writeWake has other takers
		select {
		case <-c.writeWake:
		case <-t.C:
		}
		t.Stop()
		c.lock()
	}
}

// keepSettingsLocked remembers ep's negotiated settings for Stats, once ep
// is no longer the current connection.
func (c *Conn) keepSettingsLocked(ep *endpoint) {
	c.assertLocked("keepSettingsLocked")
	settings := ep.settings
	c.last = &settings
}

// LocalAddr returns the local address.
func (c *Conn) LocalAddr() net.Addr { return c.laddr }

// RemoteAddr returns the peer's address.
func (c *Conn) RemoteAddr() net.Addr { return c.raddr }

// SetDeadline sets the read and write deadlines.
func (c *Conn) SetDeadline(t time.Time) error {
	c.rd.set(t)
	c.wd.set(t)
	return nil
}

// SetReadDeadline sets the deadline for Read and ReadMsg.
func (c *Conn) SetReadDeadline(t time.Time) error { c.rd.set(t); return nil }

// SetWriteDeadline sets the deadline for Write and WriteMsg.
func (c *Conn) SetWriteDeadline(t time.Time) error { c.wd.set(t); return nil }

// Stats returns the connection's counters and its negotiated settings.
func (c *Conn) Stats() Stats {
	s := c.stats.snapshot()
	c.lock()
	if ep := c.ep; ep != nil {
		s.Negotiated = negotiated(ep.settings)
		s.Negotiated.Reverse = ep.reverse
		s.Registered = int64(ep.regs.total())
	} else if c.last != nil {
		s.Negotiated = negotiated(*c.last)
	}
	s.Negotiated.Credits = c.role.creditsLocked()
	s.Negotiated.Version = c.role.versionLocked()
	c.unlock()
	return s
}

// ring is a fixed-capacity FIFO of slot indices.
type ring struct {
	buf        []int
	head, size int
}

func newRing(n int) ring { return ring{buf: make([]int, n)} }

func (r *ring) push(v int) {
	r.buf[(r.head+r.size)%len(r.buf)] = v
	r.size++
}

func (r *ring) pop() (int, bool) {
	if r.size == 0 {
		return 0, false
	}
	v := r.buf[r.head]
	r.head = (r.head + 1) % len(r.buf)
	r.size--
	return v, true
}

func (r *ring) reset() { r.head, r.size = 0, 0 }

// peek returns the oldest value without removing it.
func (r *ring) peek() (int, bool) {
	if r.size == 0 {
		return 0, false
	}
	return r.buf[r.head], true
}

// lock takes c.mu.
func (c *Conn) lock() {
	c.muCheck.mustNotHold("Conn.mu taken")
	c.mu.Lock()
	c.muCheck.acquired()
}

// assertLocked panics in debug builds unless the caller holds c.mu; what
// names the function that needs it.
func (c *Conn) assertLocked(what string) { c.muCheck.mustHold(what) }

// lockW takes c.wmu, which is locked before c.mu, never after.
func (c *Conn) lockW() {
	c.muCheck.mustNotHold("Conn.wmu taken (lock wmu BEFORE mu)")
	c.wmuCheck.mustNotHold("Conn.wmu taken")
	c.wmu.Lock()
	c.wmuCheck.acquired()
}

// unlockW releases c.wmu.
func (c *Conn) unlockW() {
	c.wmuCheck.releasing()
	c.wmu.Unlock()
}

// unlock releases c.mu and then posts the work requests queued under it
// (see postQueue): every release of c.mu goes through it, so that nothing
// queued is left unposted. While holdPost is set it posts nothing: the
// poll loop's next release posts what was queued meanwhile.
//
// It then runs the WriteMsgDirect dones that became due under c.mu
// (deferDoneLocked): outside the lock, as their callers' code.
func (c *Conn) unlock() {
	var ep *endpoint
	if !c.holdPost {
		ep = c.flushEP
		c.flushEP = nil
	}
	dones := c.dones
	c.dones = nil
	c.muCheck.releasing()
	c.mu.Unlock()
	if ep != nil {
		c.flush(ep, false)
	}
	if dones != nil {
		runDones(dones)
	}
}
