package soft

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// maxCaps are the limits of the software provider's queues (rxe's max_sge
// is 32 too).
var maxCaps = verbs.QueueCaps{SendQueue: 1 << 16, RecvQueue: 1 << 16, MaxSGE: 32, ReadDepth: 255}

const (
	// ioBufferSize sizes each connection's stream buffers; payloads move
	// through them in chunks of at most this size.
	ioBufferSize = 64 << 10
	// handshakeTimeout bounds a CM exchange whatever the context says,
	// like the IB CM's response timeouts.
	handshakeTimeout = 30 * time.Second
	// lingerTimeout bounds the orderly teardown once a connection is in
	// the error state: the last acknowledgements, the disconnect frame and
	// the wait for the peer's.
	lingerTimeout = 2 * time.Second
)

type connState uint8

const (
	stateSetup       connState = iota // queue pair exists, Setup runs
	stateEstablished                  // RTS
	stateError                        // error state: everything flushed
)

// sqEntry is a posted send work request.
type sqEntry struct {
	id      uint64
	op      verbs.Opcode
	sgl     []verbs.SGE // copy of the request's list, capacity MaxSGE
	length  int
	raddr   uint64
	rkey    uint32
	invRKey uint32
	window  *window // OpBindWindow
	bind    verbs.SGE
	access  verbs.Access
	newRKey uint32
	badSGL  bool // fails with StatusLocalProtection when executed

	seq    uint32 // assigned when transmitted
	done   bool
	status verbs.Status
}

// remote reports whether e goes to the peer.
func (e *sqEntry) remote() bool {
	switch e.op {
	case verbs.OpSend, verbs.OpSendWithInvalidate, verbs.OpRDMAWrite, verbs.OpRDMARead:
		return true
	}
	return false
}

// rqEntry is a posted Receive.
type rqEntry struct {
	id       uint64
	sgl      []verbs.SGE
	capacity int
	badSGL   bool
}

// readResponse is an RDMA Read the responder has checked and will answer.
type readResponse struct {
	seq    uint32
	access windowAccess
	length int
}

// connSerial numbers connections; it seeds per-connection addresses and
// starting sequence numbers.
var connSerial atomic.Uint64

// conn is one side of a software RC connection: a queue pair with its
// completion queue and protection domain, carried over a byte stream.
//
// Two goroutines serve it once established: the reader executes the
// peer's requests as a responder (placing data, checking rkeys) and
// handles the answers to ours; the writer transmits our work requests in
// order and the responder's answers. The user's goroutines only post,
// poll and wait.
type conn struct {
	p      *Provider
	nc     net.Conn
	br     *bufio.Reader // reader goroutine (and the handshake before it)
	bw     *bufio.Writer // writer goroutine
	caps   verbs.QueueCaps
	faults *Faults
	peerPD []byte

	// memMu orders data movement against unmapping: copies into and out
	// of regions hold it for reading, one chunk at a time; closing a
	// region holds it for writing. Taken before mu, never after.
	memMu sync.RWMutex

	mu      sync.Mutex
	state   connState
	started bool // reader and writer run
	closed  bool // Close was called
	err     error
	// linkDead: the byte stream is broken or untrusted; nothing more
	// is written and nothing more is read.
	linkDead bool
	// placing: the reader is copying a payload into a posted buffer (the
	// head Receive or an RDMA Read's list); a flush waits for it to end
	// so that no completion hands back a buffer still being written.
	placing bool

	// Send queue: counters run forever, slots are counter % len(sq).
	// sqHead ≤ sqAck ≤ sqTx ≤ sqTail while established.
	sq        []sqEntry
	sqHead    uint64 // oldest entry without a completion
	sqAck     uint64 // oldest transmitted entry not yet acknowledged
	sqTx      uint64 // next entry to execute
	sqTail    uint64 // next free slot
	sqPosted  int    // posted and not yet polled
	sendSeq   uint32 // sequence number of our next request
	readQ     []uint64
	readQHead uint64
	readQTail uint64
	readsOut  int
	readLimit int // min(our ReadDepth, the peer's)

	// Receive queue.
	rq       []rqEntry
	rqHead   uint64
	rqTail   uint64
	rqPosted int

	// Completion queue; cqReady holds when each entry may be polled
	// while a completion delay is injected.
	cq      []verbs.Completion
	cqReady []time.Time
	cqHead  uint64
	cqTail  uint64

	// Responder state.
	expSeq         uint32 // sequence number of the peer's next request
	dropping       bool   // after an RNR NAK: discard requests until the peer disconnects
	ackPending     bool
	ackSeq         uint32
	nakPending     bool
	nakSeq         uint32
	nakCode        nakCode
	rr             []readResponse // capacity: our ReadDepth (responder resources)
	rrHead         uint64
	rrTail         uint64
	disconnectSent bool

	// retry is the requester's transport timer (retry.go).
	retry retryState

	windows  map[uint32]*window // by index (the rkey's upper 24 bits)
	regions  map[*region]struct{}
	nextIOVA uint64

	kick       chan struct{} // wakes the writer
	notify     chan struct{} // a completion was queued
	done       chan struct{}
	writerDone chan struct{}
	wg         sync.WaitGroup
	closeOnce  sync.Once
	closeErr   error
}

// Errors of posting and of the connection's life. They are values so that
// the hot paths never allocate.
var (
	errConnClosed       = fmt.Errorf("soft: connection closed: %w", verbs.ErrClosed)
	errNotEstablished   = fmt.Errorf("soft: send queue not ready before the connection is established: %w", verbs.ErrNotSupported)
	errSendQueueFull    = fmt.Errorf("soft: send queue full: %w", verbs.ErrQueueFull)
	errRecvQueueFull    = fmt.Errorf("soft: receive queue full: %w", verbs.ErrQueueFull)
	errTooManySGE       = fmt.Errorf("soft: scatter/gather list longer than MaxSGE: %w", verbs.ErrNotSupported)
	errMessageTooLong   = fmt.Errorf("soft: message longer than MaxMessageSize: %w", verbs.ErrLength)
	errOpcode           = fmt.Errorf("soft: unknown work request opcode: %w", verbs.ErrNotSupported)
	errPeerDisconnected = fmt.Errorf("soft: peer disconnected: %w", verbs.ErrDisconnected)
)

// newConn creates the queue pair of a connection whose handshake is about
// to run over nc (br reads nc).
func newConn(p *Provider, nc net.Conn, br *bufio.Reader, caps verbs.QueueCaps) *conn {
	serial := connSerial.Add(1)
	c := &conn{
		p:          p,
		nc:         nc,
		br:         br,
		bw:         bufio.NewWriterSize(nc, ioBufferSize),
		caps:       caps,
		faults:     p.Faults,
		sq:         make([]sqEntry, caps.SendQueue),
		readQ:      make([]uint64, caps.SendQueue),
		rq:         make([]rqEntry, caps.RecvQueue),
		cq:         make([]verbs.Completion, caps.SendQueue+caps.RecvQueue),
		rr:         make([]readResponse, caps.ReadDepth),
		windows:    make(map[uint32]*window),
		regions:    make(map[*region]struct{}),
		kick:       make(chan struct{}, 1),
		notify:     make(chan struct{}, 1),
		done:       make(chan struct{}),
		writerDone: make(chan struct{}),
		// Addresses the peer sees look like user-space virtual addresses
		// and differ between connections.
		nextIOVA: 0x7f00_0000_0000 + (serial%256)<<32,
		// Sequence numbers start close to 2^32 so that every connection
		// wraps around early, as random IB starting PSNs would.
		sendSeq: 0xffff_ff00 + uint32(serial%256),
	}
	sge := make([]verbs.SGE, (caps.SendQueue+caps.RecvQueue)*caps.MaxSGE)
	for i := range c.sq {
		c.sq[i].sgl = sge[:0:caps.MaxSGE]
		sge = sge[caps.MaxSGE:]
	}
	for i := range c.rq {
		c.rq[i].sgl = sge[:0:caps.MaxSGE]
		sge = sge[caps.MaxSGE:]
	}
	if c.faults != nil {
		c.cqReady = make([]time.Time, len(c.cq))
	}
	c.retry.timeout, c.retry.limit = p.ackTimeout(), p.retryCount()
	return c
}

// start moves the connection to RTS and starts its reader and writer.
func (c *conn) start() {
	c.mu.Lock()
	c.state = stateEstablished
	c.started = true
	if c.faults != nil && c.faults.stalled.Load() {
		c.dropping = true
	}
	c.mu.Unlock()
	if c.faults != nil {
		c.faults.register(c)
	}
	c.wg.Add(2)
	go c.readLoop()
	go c.writeLoop()
	c.kickWriter()
}

func (c *conn) sqAt(i uint64) *sqEntry { return &c.sq[i%uint64(len(c.sq))] }
func (c *conn) rqAt(i uint64) *rqEntry { return &c.rq[i%uint64(len(c.rq))] }

// kickWriter wakes the writer goroutine.
func (c *conn) kickWriter() {
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// failLocked moves the queue pair to the error state: every outstanding
// work request and Receive is flushed (IBV_WC_WR_FLUSH_ERR), Done closes,
// and the writer tells the peer (rdma_disconnect) so that its queue pair
// fails too.
func (c *conn) failLocked(cause error) {
	if c.state == stateError {
		return
	}
	c.state = stateError
	c.err = cause
	c.stopRetryLocked()
	close(c.done)
	c.flushLocked()
	if c.started {
		_ = c.nc.SetDeadline(time.Now().Add(lingerTimeout))
	}
	c.kickWriter()
}

// flushLocked completes everything outstanding with StatusFlushed (entries
// that already have a status keep it), unless the reader is placing data
// into one of them: it flushes when it is done.
func (c *conn) flushLocked() {
	if c.placing {
		return
	}
	for i := c.sqHead; i != c.sqTail; i++ {
		if e := c.sqAt(i); !e.done {
			e.done, e.status = true, verbs.StatusFlushed
		}
	}
	c.advanceSQLocked()
	for ; c.rqHead != c.rqTail; c.rqHead++ {
		c.pushLocked(verbs.Completion{ID: c.rqAt(c.rqHead).id, Status: verbs.StatusFlushed, Op: verbs.OpRecv})
	}
}

// linkLostLocked handles a broken byte stream: the oldest request the
// peer has not answered fails as a real requester's would once its
// retries ran out (IBV_WC_RETRY_EXC_ERR), and the rest is flushed.
func (c *conn) linkLostLocked(err error) {
	if c.state != stateError {
		for i := c.sqHead; i != c.sqTx; i++ {
			if e := c.sqAt(i); !e.done && e.remote() {
				e.done, e.status = true, verbs.StatusRetryExceeded
				break
			}
		}
		c.failLocked(fmt.Errorf("soft: link lost: %w: %w", verbs.ErrDisconnected, err))
	}
	c.linkDead = true
	c.kickWriter()
}

// Done is closed when the queue pair enters the error state.
func (c *conn) Done() <-chan struct{} { return c.done }

// Err tells why the connection is down, or returns nil.
func (c *conn) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// PeerPrivateData returns the peer's private data as delivered.
func (c *conn) PeerPrivateData() []byte { return bytes.Clone(c.peerPD) }

// LocalAddr returns the local TCP address.
func (c *conn) LocalAddr() net.Addr { return c.nc.LocalAddr() }

// RemoteAddr returns the peer's TCP address.
func (c *conn) RemoteAddr() net.Addr { return c.nc.RemoteAddr() }

// Close disconnects, flushes, waits for the connection's goroutines and
// unmaps its regions.
func (c *conn) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.failLocked(errConnClosed)
		c.closed = true
		started := c.started
		c.mu.Unlock()
		if started {
			c.wg.Wait()
		} else {
			_ = c.nc.Close()
		}
		c.closeErr = c.freeMemory()
	})
	return c.closeErr
}
