package transport

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// Work request kinds, in the top byte of a work request ID. The rest holds
// the slot (call) index and the buffer index: kind<<56 | slot<<28 | buf.
const (
	wrRecv uint64 = iota + 1
	wrSend
	wrBind
	wrLocalInv
	wrRead
	wrWrite
)

func wrID(kind uint64, slot, buf int) uint64 {
	return kind<<56 | uint64(slot)<<28 | uint64(buf)
}

func wrSplit(id uint64) (kind uint64, slot, buf int) {
	return id >> 56, int(id >> 28 & (1<<28 - 1)), int(id & (1<<28 - 1))
}

// endpoint is one RDMA connection of a Conn with the resources registered
// on it: the Receive buffers, the Send buffers and the per-slot chunk
// memory. A requester that reconnects gets a new endpoint.
//
// An endpoint knows nothing of its Conn: the Conn builds its work requests
// and reads its completions under Conn.mu, and the endpoint's methods
// report what the Conn must do instead of doing it (post reports a batch
// to flush once Conn.mu is released, flush and poll report the failure
// that ends the connection, the trim timers wake the Conn's endpoint
// loop). Its fields are guarded by Conn.mu unless they say otherwise.
type endpoint struct {
	vc       verbs.Conn
	settings cmpriv.Settings

	// Set when the endpoint is made (Conn.newEndpoint), then read-only.
	log          *slog.Logger // Config.Logger
	postAsyncMin int          // Config.PostAsyncMin
	maxRPC       int          // Config.MaxRPCSize

	recvRegion verbs.Region
	recvSize   int
	nRecv      int
	recvFree   []int // responder: Receive buffers not posted

	sendRegion verbs.Region
	sendSize   int
	nSend      int
	sendFree   []int

	sqOut, sqCap int // send work requests outstanding, and the limit

	// requester: chunk memory, one registered buffer and its windows per
	// slot, allocated on first use and grown as needed.
	chunkMem []chunkBuf
	// responder: registered buffers for data in motion.
	pool chunkPool
	// registrations of callers' buffers: CallInto's (requester),
	// WriteMsgDirect's (responder).
	regs regCache
	// closedDones are WriteMsgDirect dones due once vc is closed
	// (doneAfterCloseLocked), and vcClosed says it is.
	closedDones []func()
	vcClosed    bool

	// requester: the RPC-over-RDMA version of the connection (1, or 2
	// after negotiateV2), set before its loops start; grant is the credit
	// grant of the responder's RDMA2_CONNPROP, 0 if none; h2 parses its
	// version 2 replies (under Conn.mu).
	vers  uint32
	grant uint32
	h2    rpcrdma2.Header
	// reverse: reverse-direction calls flow on the connection, both sides
	// having said so (reverse_call.go); set by the negotiation (requester)
	// or the requester's RDMA2_CONNPROP (responder). requester: serving
	// counts the reverse calls received and not answered, answers those
	// that wait for a Send buffer (reverse_serve.go).
	reverse bool
	serving int
	answers []reverseAnswer

	// scratch, reused under Conn.mu
	writeSeg  [1]chunks.Segment
	writeList [1]chunks.WriteChunk
	replySeg  [1]chunks.Segment
	recvSGE   [1]verbs.SGE
	recvRR    [1]verbs.RecvRequest
	wrs       []verbs.WorkRequest // the batch being built; post queues it
	sges      []verbs.SGE
	rrs       []verbs.RecvRequest // the Receives batched (batchRecvs)
	rrSGEs    []verbs.SGE         // the lists of rrs's held Receives
	// batchRecvs: repost queues the Receive in rrs instead of posting it,
	// until flushRecvs posts them all in one PostRecv; set while the poll
	// loop handles a batch of completions under Conn.mu (Conn.pollLoop)
	// and while it serves a run of inline calls, whose replies are held
	// as well (Conn.holdPost): flushRecvs comes before either's posts.
	batchRecvs bool
	hdr        chunks.Header
	keys       *rand.ChaCha8 // key bytes of the rkeys we bind

	// posts takes the batches built under Conn.mu to the goroutine that
	// posts them once Conn.mu is released (Conn.unlock), or to the
	// endpoint loop (Conn.endpointLoop); it has locks of its own.
	posts    postQueue
	postWake chan struct{} // wakes the endpoint loop: a bulk batch is queued
	postDone chan struct{} // closed when the endpoint loop ends

	// trimWake and regTrimWake wake the endpoint loop to trim the chunk
	// pool and the registration cache; trimTimer and regTimer send to
	// them (armTrim, armRegTrim).
	trimWake, regTrimWake chan struct{}
	trimTimer, regTimer   *time.Timer

	// Set by startEndpoint (gen) and begin, before the endpoint's
	// goroutines start; read-only after.
	gen      uint64 // which of the Conn's connections it is (Conn.epGen), for the call watchdog
	ctx      context.Context
	cancel   context.CancelFunc
	loopDone chan struct{} // closed when the poll loop ends
	once     sync.Once     // Conn.shutdown runs once

	// Debug builds: the goroutines of the poll loop, the only one that
	// handles ep's completions, and of the endpoint loop, the only one
	// that trims its caches.
	pollG, loopG goroutineLock
}

// setupEndpoint allocates and registers the endpoint's memory and posts its
// Receives; it runs in verbs.ConnOptions.Setup, before the connection is
// established. nSend Send buffers of sendSize and nRecv Receive buffers of
// recvSize; post is the number of Receives to post now.
func (ep *endpoint) setup(vc verbs.Conn, nSlots, nSend, sendSize, nRecv, recvSize, post int) error {
	ep.vc = vc
	var seed [32]byte
	_, _ = crand.Read(seed[:]) // never fails (crypto/rand)
	ep.keys = rand.NewChaCha8(seed)
	ep.pool = chunkPool{vc: vc, maxIdle: 2 * ep.maxRPC, maxBufs: nSlots, armTrim: ep.armTrim}
	ep.regs.armTrim = ep.armRegTrim
	var err error
	if ep.recvRegion, err = vc.AllocRegion(nRecv * recvSize); err != nil {
		return fmt.Errorf("rpcrdma: receive buffers: %w", err)
	}
	if ep.sendRegion, err = vc.AllocRegion(nSend * sendSize); err != nil {
		return fmt.Errorf("rpcrdma: send buffers: %w", err)
	}
	ep.recvSize, ep.nRecv, ep.sendSize = recvSize, nRecv, sendSize
	ep.nSend = nSend
	ep.sendFree = make([]int, nSend)
	for i := range ep.sendFree {
		ep.sendFree[i] = nSend - 1 - i
	}
	ep.chunkMem = make([]chunkBuf, nSlots)
	b := newSendBatch()
	ep.wrs, ep.sges = b.wrs, b.sges
	ep.postWake = make(chan struct{}, 1)
	ep.trimWake = make(chan struct{}, 1)
	ep.regTrimWake = make(chan struct{}, 1)
	ep.rrs = make([]verbs.RecvRequest, 0, nRecv)
	ep.rrSGEs = make([]verbs.SGE, 0, nRecv)
	ep.recvFree = make([]int, 0, nRecv)
	for i := post; i < nRecv; i++ {
		ep.recvFree = append(ep.recvFree, i)
	}
	// The first Receives in one PostRecv, as a poll's reposts.
	ep.batchRecvs = true
	for i := range post {
		_ = ep.repost(i) // queued: cannot fail
	}
	if err := ep.flushRecvs(); err != nil {
		return fmt.Errorf("rpcrdma: posting receives: %w", err)
	}
	return nil
}

// recvBuf returns Receive buffer i.
func (ep *endpoint) recvBuf(i int) []byte {
	return ep.recvRegion.Bytes()[i*ep.recvSize : (i+1)*ep.recvSize]
}

// sendBuf returns Send buffer i, empty, with its capacity.
func (ep *endpoint) sendBuf(i int) []byte {
	b := ep.sendRegion.Bytes()[i*ep.sendSize : (i+1)*ep.sendSize]
	return b[:0]
}

// repost posts Receive buffer i again, or, while batchRecvs is set, queues
// it for flushRecvs. Called with Conn.mu held.
func (ep *endpoint) repost(i int) error {
	sge := verbs.SGE{Region: ep.recvRegion, Offset: i * ep.recvSize, Length: ep.recvSize}
	rr := verbs.RecvRequest{ID: wrID(wrRecv, 0, i)}
	if ep.batchRecvs && len(ep.rrs) < cap(ep.rrs) {
		n := len(ep.rrSGEs)
		ep.rrSGEs = append(ep.rrSGEs, sge)
		rr.SGL = ep.rrSGEs[n : n+1 : n+1]
		ep.rrs = append(ep.rrs, rr)
		return nil
	}
	ep.recvSGE[0] = sge
	rr.SGL = ep.recvSGE[:]
	ep.recvRR[0] = rr
	return ep.vc.PostRecv(ep.recvRR[:])
}

// flushRecvs ends batchRecvs and posts the Receives it held, in one
// PostRecv (no system call on rxe, but a cgo call each, and a doorbell
// each on a NIC). The Receives count as posted from the time they were
// queued (credits.Post): the replies that grant their credits are held
// until after this. Called with Conn.mu held.
func (ep *endpoint) flushRecvs() error {
	ep.batchRecvs = false
	if len(ep.rrs) == 0 {
		return nil
	}
	err := ep.vc.PostRecv(ep.rrs)
	clear(ep.rrs)
	clear(ep.rrSGEs)
	ep.rrs, ep.rrSGEs = ep.rrs[:0], ep.rrSGEs[:0]
	return err
}

// post queues the batch built so far, to be posted when Conn.mu is
// released (postQueue), and counts it as posted. It reports whether it
// queued anything: the Conn must then flush the endpoint once it releases
// its lock (Conn.postLocked, Conn.unlock).
func (ep *endpoint) post() bool {
	if len(ep.wrs) == 0 {
		return false
	}
	ep.sqOut += len(ep.wrs)
	b := sendBatch{wrs: ep.wrs, sges: ep.sges}
	b.bulk = ep.postAsyncMin > 0 && batchBytes(b) >= ep.postAsyncMin
	next := ep.posts.push(b)
	ep.wrs, ep.sges = next.wrs, next.sges
	return true
}

// flush posts the queued batches, up to the first bulk one unless mayBulk
// (the endpoint loop), and wakes the endpoint loop for that (see
// postQueue). A post that fails returns its error: the connection is
// lost. Called without Conn.mu.
func (ep *endpoint) flush(mayBulk bool) error {
	bulk, err := ep.posts.flush(ep.vc, mayBulk)
	if err != nil {
		return err
	}
	if bulk {
		wake(ep.postWake)
	}
	return nil
}

// sgl appends one SGE to the scratch list and returns a slice of it.
func (ep *endpoint) sgl(r verbs.Region, off, n int) []verbs.SGE {
	i := len(ep.sges)
	ep.sges = append(ep.sges, verbs.SGE{Region: r, Offset: off, Length: n})
	return ep.sges[i : i+1 : i+1]
}

// poll polls completions until the connection dies or the endpoint is
// shut down, and hands each batch to handle (the Conn's, which takes its
// lock). It returns nil once shut down, otherwise why the connection is
// lost: a failed poll or wait, the connection's end, or handle's error.
func (ep *endpoint) poll(handle func([]verbs.Completion) error) error {
	cs := make([]verbs.Completion, 64)
	for {
		n, err := ep.vc.Poll(cs)
		if err != nil && !errors.Is(err, verbs.ErrDisconnected) {
			return err
		}
		if n > 0 {
			if herr := handle(cs[:n]); herr != nil {
				return herr
			}
			// Let the goroutines the batch woke (a Call's, a reader's)
			// run now, on this processor, rather than after the next
			// Poll and Wait: each hand-off otherwise waits for a
			// loop of cgo calls.
			runtime.Gosched()
			continue
		}
		if err != nil {
			return err
		}
		select {
		case <-ep.vc.Done():
			// Drain what is left (flushes), then report.
			if n, _ := ep.vc.Poll(cs); n > 0 {
				continue
			}
			if err := ep.vc.Err(); err != nil {
				return err
			}
			return verbs.ErrDisconnected
		default:
		}
		if err := ep.vc.Wait(ep.ctx); err != nil {
			if ep.ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// armTrim has the endpoint loop trim the chunk pool poolTrimAfter from now
// (chunkPool.armTrim). Called with Conn.mu held.
func (ep *endpoint) armTrim() {
	if ep.trimTimer == nil {
		ep.trimTimer = time.AfterFunc(poolTrimAfter, func() { wake(ep.trimWake) })
		return
	}
	ep.trimTimer.Reset(poolTrimAfter)
}

// armRegTrim has the endpoint loop trim the registration cache
// regTrimAfter from now (regCache.armTrim). Called with Conn.mu held.
func (ep *endpoint) armRegTrim() {
	if ep.regTimer == nil {
		ep.regTimer = time.AfterFunc(regTrimAfter, func() { wake(ep.regTrimWake) })
		return
	}
	ep.regTimer.Reset(regTrimAfter)
}

// stopTimers stops the trim timers. Called with Conn.mu held.
func (ep *endpoint) stopTimers() {
	if ep.trimTimer != nil {
		ep.trimTimer.Stop()
	}
	if ep.regTimer != nil {
		ep.regTimer.Stop()
	}
}

// begin readies ep's loops' state; the Conn starts them (Conn.startEndpoint).
func (ep *endpoint) begin() {
	ep.ctx, ep.cancel = context.WithCancel(context.Background())
	ep.loopDone = make(chan struct{})
	ep.postDone = make(chan struct{})
}

// disconnect stops ep's loops and closes its connection, which destroys
// the queue pair: what the endpoint loop left queued (a reply written just
// before Close) is posted first, as it would have been had its writer
// posted it. Called without Conn.mu, once the loops were started.
func (ep *endpoint) disconnect() {
	ep.cancel()
	<-ep.postDone
	_, _ = ep.posts.flush(ep.vc, true)
	_ = ep.vc.Close()
	<-ep.loopDone
}

// closed records that ep's connection is closed: the callers' buffers it
// had registered are deregistered with it. It returns the WriteMsgDirect
// dones that were waiting for that (doneAfterCloseLocked). Called with
// Conn.mu held.
func (ep *endpoint) closed() []func() {
	ep.vcClosed = true
	ep.regs.forget() // deregistered with the connection
	dones := ep.closedDones
	ep.closedDones = nil
	return dones
}
