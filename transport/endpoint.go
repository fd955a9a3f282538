package transport

import (
	"context"
	crand "crypto/rand"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/cmpriv"
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
type endpoint struct {
	c        *Conn
	vc       verbs.Conn
	settings cmpriv.Settings

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
	// (doneAfterCloseLocked), and vcClosed says it is; guarded by c.mu.
	closedDones []func()
	vcClosed    bool

	// scratch, reused under c.mu
	writeSeg  [1]chunks.Segment
	writeList [1]chunks.WriteChunk
	replySeg  [1]chunks.Segment
	recvSGE   [1]verbs.SGE
	recvRR    [1]verbs.RecvRequest
	wrs       []verbs.WorkRequest // the batch being built; post queues it
	sges      []verbs.SGE
	rrs       []verbs.RecvRequest
	hdr       chunks.Header
	keys      *rand.ChaCha8 // key bytes of the rkeys we bind

	// posts takes the batches built under c.mu to the goroutine that
	// posts them once c.mu is released (Conn.unlock), or to postLoop.
	posts    postQueue
	postWake chan struct{} // wakes postLoop: a bulk batch is queued
	postDone chan struct{}

	started  time.Time // when polling started
	ctx      context.Context
	cancel   context.CancelFunc
	loopDone chan struct{}
	once     sync.Once
	// trimTimer runs trimPool (armTrim), regTimer trimRegs
	// (armRegTrim); guarded by c.mu.
	trimTimer, regTimer *time.Timer
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
	ep.pool = chunkPool{vc: vc, maxIdle: 2 * ep.c.cfg.MaxRPCSize, maxBufs: nSlots, armTrim: ep.armTrim}
	ep.regs.limit = max(ep.c.cfg.DirectPlacementCache, 0)
	ep.regs.armTrim = ep.armRegTrim
	if ep.c.role == cmpriv.Responder {
		ep.regs.max, ep.regs.shared = ep.c.cfg.Memory.Registered, ep.c.svcState.listenerRegs
	}
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
	ep.rrs = make([]verbs.RecvRequest, 0, nRecv)
	ep.recvFree = make([]int, 0, nRecv)
	for i := post; i < nRecv; i++ {
		ep.recvFree = append(ep.recvFree, i)
	}
	for i := range post {
		ep.rrs = append(ep.rrs, ep.recvRequest(i))
	}
	if err := vc.PostRecv(ep.rrs); err != nil {
		return fmt.Errorf("rpcrdma: posting receives: %w", err)
	}
	ep.rrs = ep.rrs[:0]
	return nil
}

func (ep *endpoint) recvRequest(i int) verbs.RecvRequest {
	return verbs.RecvRequest{ID: wrID(wrRecv, 0, i), SGL: []verbs.SGE{{Region: ep.recvRegion, Offset: i * ep.recvSize, Length: ep.recvSize}}}
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

// repost posts Receive buffer i again.
func (ep *endpoint) repost(i int) error {
	ep.recvSGE[0] = verbs.SGE{Region: ep.recvRegion, Offset: i * ep.recvSize, Length: ep.recvSize}
	ep.recvRR[0] = verbs.RecvRequest{ID: wrID(wrRecv, 0, i), SGL: ep.recvSGE[:]}
	return ep.vc.PostRecv(ep.recvRR[:])
}

// post queues the batch built so far, to be posted when c.mu is released
// (postQueue, Conn.unlock), and counts it as posted.
func (ep *endpoint) post() {
	if len(ep.wrs) == 0 {
		return
	}
	// Count before posting: once posted, a Send may be answered, and the
	// peer's caller may read both sides' Stats, before PostSend returns.
	ep.countPosted()
	ep.sqOut += len(ep.wrs)
	b := sendBatch{wrs: ep.wrs, sges: ep.sges}
	b.bulk = ep.c.cfg.PostAsyncMin > 0 && batchBytes(b) >= ep.c.cfg.PostAsyncMin
	next := ep.posts.push(b)
	ep.wrs, ep.sges = next.wrs, next.sges
	ep.c.flushEP = ep
}

// flush posts the queued batches, up to the first bulk one unless mayBulk
// (postLoop), and wakes postLoop for that (see postQueue); a post that
// fails ends the connection. Called without c.mu.
func (ep *endpoint) flush(mayBulk bool) {
	bulk, err := ep.posts.flush(ep.vc, mayBulk)
	if err != nil {
		ep.c.endpointDied(ep, err)
		return
	}
	if bulk {
		select {
		case ep.postWake <- struct{}{}:
		default: // already woken
		}
	}
}

// postLoop posts the queue when a bulk batch is in it, until the endpoint
// is shut down.
func (ep *endpoint) postLoop() {
	defer close(ep.postDone)
	for {
		select {
		case <-ep.postWake:
		case <-ep.ctx.Done():
			return
		}
		ep.flush(true)
	}
}

// countPosted counts the batch's work requests in Stats.
func (ep *endpoint) countPosted() {
	for i := range ep.wrs {
		switch ep.wrs[i].Op {
		case verbs.OpSend, verbs.OpSendWithInvalidate:
			ep.c.stats.sends.Add(1)
		case verbs.OpRDMARead:
			ep.c.stats.rdmaReads.Add(1)
		case verbs.OpRDMAWrite:
			ep.c.stats.rdmaWrites.Add(1)
		}
	}
}

// sgl appends one SGE to the scratch list and returns a slice of it.
func (ep *endpoint) sgl(r verbs.Region, off, n int) []verbs.SGE {
	i := len(ep.sges)
	ep.sges = append(ep.sges, verbs.SGE{Region: r, Offset: off, Length: n})
	return ep.sges[i : i+1 : i+1]
}

// run polls completions until the connection dies or is shut down, and
// hands each one to the Conn under its lock.
func (ep *endpoint) run() {
	defer close(ep.loopDone)
	cs := make([]verbs.Completion, 64)
	for {
		n, err := ep.vc.Poll(cs)
		if err != nil && !errors.Is(err, verbs.ErrDisconnected) {
			ep.c.endpointDied(ep, err)
			return
		}
		if n > 0 {
			c := ep.c
			c.mu.Lock()
			for i := range cs[:n] {
				if c.ep != ep {
					break
				}
				if herr := c.handleCompletionLocked(ep, &cs[i]); herr != nil {
					c.unlock()
					ep.c.endpointDied(ep, herr)
					return
				}
			}
			c.unlock()
			// Let the goroutines the batch woke (a Call's, a reader's)
			// run now, on this processor, rather than after the next
			// Poll and Wait: each hand-off otherwise waits for a
			// loop of cgo calls.
			runtime.Gosched()
			continue
		}
		if err != nil {
			ep.c.endpointDied(ep, err)
			return
		}
		select {
		case <-ep.vc.Done():
			// Drain what is left (flushes), then report.
			if n, _ := ep.vc.Poll(cs); n > 0 {
				continue
			}
			ep.c.endpointDied(ep, ep.vc.Err())
			return
		default:
		}
		if err := ep.vc.Wait(ep.ctx); err != nil {
			if ep.ctx.Err() != nil {
				return
			}
			ep.c.endpointDied(ep, err)
			return
		}
	}
}

// armTrim runs trimPool poolTrimAfter from now (chunkPool.armTrim). Called
// with c.mu held.
func (ep *endpoint) armTrim() {
	if ep.trimTimer == nil {
		ep.trimTimer = time.AfterFunc(poolTrimAfter, ep.trimPool)
		return
	}
	ep.trimTimer.Reset(poolTrimAfter)
}

// trimPool runs when the chunk pool's trim timer fires: it frees what a
// burst left in the cache, and in the responder's cache of call buffers,
// once the pool is idle: down to poolKeepIdle after one idle period, all
// of it after the next.
func (ep *endpoint) trimPool() {
	c := ep.c
	c.mu.Lock()
	defer c.unlock()
	if c.ep != ep {
		return // the connection's close frees the regions
	}
	idle := !ep.pool.used
	again := ep.pool.trimIdle()
	if again {
		ep.armTrim()
	}
	if c.role == cmpriv.Responder {
		switch {
		case idle && !again:
			c.svcState.msgs.trim(0)
		case idle || !again:
			c.svcState.msgs.trim(poolKeepIdle)
		}
	}
}

// armRegTrim runs trimRegs regTrimAfter from now (regCache.armTrim).
// Called with c.mu held.
func (ep *endpoint) armRegTrim() {
	if ep.regTimer == nil {
		ep.regTimer = time.AfterFunc(regTrimAfter, ep.trimRegs)
		return
	}
	ep.regTimer.Reset(regTrimAfter)
}

// trimRegs runs when the registration cache's trim timer fires: it
// deregisters the callers' buffers not used for a whole period.
func (ep *endpoint) trimRegs() {
	c := ep.c
	c.mu.Lock()
	defer c.unlock()
	if c.ep != ep {
		return // the connection's close deregisters them
	}
	if ep.regs.trimIdle() {
		ep.armRegTrim()
	}
}

// shutdown disconnects and frees the endpoint; safe to call more than once
// and from the loop's own failure path.
func (ep *endpoint) shutdown() {
	ep.once.Do(func() {
		ep.c.mu.Lock()
		if ep.trimTimer != nil {
			ep.trimTimer.Stop()
		}
		if ep.regTimer != nil {
			ep.regTimer.Stop()
		}
		ep.c.unlock()
		ep.cancel()
		// What the posting goroutine left (a reply written just before
		// Close) is posted before the disconnect, as it would have been
		// had its writer posted it.
		<-ep.postDone
		_, _ = ep.posts.flush(ep.vc, true)
		_ = ep.vc.Close()
		<-ep.loopDone
		// The replies written from their callers' memory can no longer
		// be read by the queue pair: their buffers go back.
		ep.c.mu.Lock()
		ep.vcClosed = true
		ep.regs.forget() // deregistered with the connection
		for _, done := range ep.closedDones {
			ep.c.deferDoneLocked(done)
		}
		ep.closedDones = nil
		ep.c.unlock()
	})
}

// handleCompletionLocked dispatches one completion to the role's handler.
func (c *Conn) handleCompletionLocked(ep *endpoint, wc *verbs.Completion) error {
	kind, slot, buf := wrSplit(wc.ID)
	if kind != wrRecv {
		ep.sqOut--
		defer wake(c.writeWake)
	}
	if wc.Status != verbs.StatusSuccess {
		if wc.Status == verbs.StatusFlushed {
			return verbs.ErrDisconnected
		}
		return fmt.Errorf("rpcrdma: %v work request failed: %w", wc.Op, wc.Err())
	}
	if c.role == cmpriv.Requester {
		return c.reqState.completionLocked(ep, kind, slot, buf, wc)
	}
	return c.svcState.completionLocked(ep, kind, slot, buf, wc)
}

// endpointDied handles the loss of ep's connection.
func (c *Conn) endpointDied(ep *endpoint, err error) {
	if err == nil {
		err = verbs.ErrDisconnected
	}
	c.mu.Lock()
	if c.ep != ep {
		c.unlock()
		go ep.shutdown()
		return
	}
	c.ep = nil
	c.keepSettingsLocked(ep)
	c.cfg.Logger.Debug("rpcrdma: connection lost", "role", c.role.String(), "err", err)
	if c.role == cmpriv.Requester {
		// Copy the replies' data out of ep's chunk memory, then close
		// ep's connection before its calls are failed or resent: that
		// deregisters the callers' buffers registered on it (CallInto),
		// so that no late RDMA Write of the peer reaches a buffer whose
		// call has returned. The queue pair may still be alive (a call
		// timeout): only closing it stops the peer. With c.ep nil, no
		// completion of ep is handled meanwhile.
		c.reqState.materializeLocked()
		c.unlock()
		_ = ep.vc.Close()
		c.mu.Lock()
		c.reqState.lostLocked(ep, err)
	} else {
		c.svcState.releaseAllMemLocked(ep)
		c.eof = errors.Is(err, verbs.ErrDisconnected)
		c.failLocked(err)
	}
	c.unlock()
	go ep.shutdown()
}

// start begins polling ep.
func (ep *endpoint) start() {
	ep.started = time.Now()
	ep.ctx, ep.cancel = context.WithCancel(context.Background())
	ep.loopDone = make(chan struct{})
	ep.postDone = make(chan struct{})
	go ep.run()
	go ep.postLoop()
}
