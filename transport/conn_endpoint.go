package transport

import (
	"fmt"
	"runtime"

	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// The Conn's side of its endpoints: it makes them, runs their goroutines,
// acts on what they report (a batch to post, a lost connection, a trim
// due) and shuts them down. The endpoint itself holds no reference to the
// Conn.

// newEndpoint returns an endpoint for c with the negotiated settings, to
// be set up (endpoint.setup) and then started (startEndpoint).
func (c *Conn) newEndpoint(settings cmpriv.Settings) *endpoint {
	ep := &endpoint{settings: settings, log: c.cfg.Logger,
		postAsyncMin: c.cfg.PostAsyncMin, maxRPC: c.cfg.MaxRPCSize}
	ep.regs.limit = max(c.cfg.DirectPlacementCache, 0)
	ep.posts.posted = &c.stats.sendPosts
	c.role.setupEndpoint(ep)
	return ep
}

// startEndpoint starts ep's poll loop and endpoint loop. Called with c.mu
// held, ep just made c.ep.
func (c *Conn) startEndpoint(ep *endpoint) {
	c.epGen++
	ep.gen = c.epGen
	ep.begin()
	go c.pollLoop(ep)
	go c.endpointLoop(ep)
}

// postLocked queues ep's batch (endpoint.post); the next unlock posts it.
func (c *Conn) postLocked(ep *endpoint) {
	c.assertLocked("postLocked")
	// Count before queuing: once posted, a Send may be answered, and the
	// peer's caller may read both sides' Stats, before PostSend returns.
	c.countPosted(ep.wrs)
	if ep.post() {
		c.flushEP = ep
	}
}

// countPosted counts a batch's work requests in Stats.
func (c *Conn) countPosted(wrs []verbs.WorkRequest) {
	for i := range wrs {
		switch wrs[i].Op {
		case verbs.OpSend, verbs.OpSendWithInvalidate:
			c.stats.sends.Add(1)
		case verbs.OpRDMARead:
			c.stats.rdmaReads.Add(1)
		case verbs.OpRDMAWrite:
			c.stats.rdmaWrites.Add(1)
		}
	}
}

// flush posts ep's queued batches (endpoint.flush); a post that fails
// ends the connection. Called without c.mu.
func (c *Conn) flush(ep *endpoint, mayBulk bool) {
	c.muCheck.mustNotHold("posting work requests")
	if err := ep.flush(mayBulk); err != nil {
		c.endpointDied(ep, err)
	}
}

// pollLoop is ep's poll loop: it hands ep's completions to the role under
// c.mu until ep is shut down or its connection is lost. The Receives a
// batch of completions frees are reposted together at its end, in one
// PostRecv (endpoint.batchRecvs), before c.mu is released and so before
// anything queued meanwhile is posted. The callers a batch's replies woke
// post their next calls together (gatherCalls).
func (c *Conn) pollLoop(ep *endpoint) {
	defer close(ep.loopDone)
	ep.pollG.set()
	err := ep.poll(func(cs []verbs.Completion) error {
		c.lock()
		c.svcState.arrivals.reset()
		c.svcState.inlineNow.reset() // for the serveInline below
		c.role.wokenLocked()         // counts the callers this batch wakes
		ep.batchRecvs = true
		for i := range cs {
			if c.ep != ep {
				break
			}
			if err := c.handleCompletionLocked(ep, &cs[i]); err != nil {
				_ = ep.flushRecvs() // the connection ends anyway
				c.unlock()
				return err
			}
		}
		if err := ep.flushRecvs(); err != nil && c.ep == ep {
			c.unlock()
			return err
		}
		inline := c.svcState.inlineQ.size > 0
		gather := c.role.wokenLocked() >= 2
		c.unlock()
		if inline {
			c.serveInline(ep)
		}
		if gather {
			c.gatherCalls()
		}
		return nil
	})
	if err != nil {
		c.endpointDied(ep, err)
	}
}

// gatherCalls lets the callers that one batch of replies woke make their
// next calls before any of them is posted, so that their Sends share one
// post (one ibv_post_send, a system call on Soft-RoCE), as the replies of
// a poll's inline calls do (serveInline). Each woken caller would
// otherwise post its own: they run one after another, and a post is
// shared only when it finds another in progress (postQueue).
//
// The poll loop holds the Conn's posts (holdPost) and yields its
// processor once: the goroutines the replies readied on it run first, and
// what they queue meanwhile, on any processor, waits for the poll loop's
// release of c.mu that ends the hold. The hold lasts that one yield: the
// time the readied goroutines take to run until they block (a Call until
// its reply), or, while one runs without blocking, until another
// processor takes the yielded poll loop up (with GOMAXPROCS 1, until the
// runtime preempts the one running). Called by the poll loop without c.mu.
func (c *Conn) gatherCalls() {
	c.lock()
	c.holdPost = true
	c.unlock()
	runtime.Gosched()
	c.lock()
	c.holdPost = false
	c.unlock() // posts what the callers queued, together
}

// endpointLoop is ep's endpoint loop: it posts the queue when a bulk batch
// is in it (see postQueue) and trims ep's chunk pool and registration
// cache when their timers fire, until ep is shut down.
func (c *Conn) endpointLoop(ep *endpoint) {
	defer close(ep.postDone)
	ep.loopG.set()
	for {
		select {
		case <-ep.postWake:
			c.flush(ep, true)
		case <-ep.trimWake:
			c.trimPool(ep)
		case <-ep.regTrimWake:
			c.trimRegs(ep)
		case <-ep.ctx.Done():
			return
		}
	}
}

// trimPool runs when ep's chunk pool's trim timer fires: it frees what a
// burst left in the cache, and in the responder's cache of call buffers,
// once the pool is idle: down to poolKeepIdle after one idle period, all
// of it after the next.
func (c *Conn) trimPool(ep *endpoint) {
	ep.loopG.check("trimPool")
	c.lock()
	defer c.unlock()
	if c.ep != ep {
		return // the connection's close frees the regions
	}
	idle := !ep.pool.used
	again := ep.pool.trimIdle()
	if again {
		ep.armTrim()
	}
	c.role.trimLocked(idle, again)
}

// trimRegs runs when ep's registration cache's trim timer fires: it
// deregisters the callers' buffers not used for a whole period.
func (c *Conn) trimRegs(ep *endpoint) {
	ep.loopG.check("trimRegs")
	c.lock()
	defer c.unlock()
	if c.ep != ep {
		return // the connection's close deregisters them
	}
	if ep.regs.trimIdle() {
		ep.armRegTrim()
	}
}

// shutdown disconnects and frees ep; safe to call more than once and from
// ep's own loops' failure paths. Called without c.mu.
func (c *Conn) shutdown(ep *endpoint) {
	c.muCheck.mustNotHold("shutting an endpoint down")
	ep.once.Do(func() {
		c.lock()
		ep.stopTimers()
		c.unlock()
		ep.disconnect()
		// The replies written from their callers' memory can no longer
		// be read by the queue pair: their buffers go back.
		c.lock()
		for _, done := range ep.closed() {
			c.deferDoneLocked(done)
		}
		c.unlock()
	})
}

// handleCompletionLocked dispatches one completion to the role's handler.
func (c *Conn) handleCompletionLocked(ep *endpoint, wc *verbs.Completion) error {
	ep.pollG.check("handleCompletionLocked")
	c.assertLocked("handleCompletionLocked")
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
	return c.role.completionLocked(ep, kind, slot, buf, wc)
}

// endpointDied handles the loss of ep's connection.
func (c *Conn) endpointDied(ep *endpoint, err error) {
	if err == nil {
		err = verbs.ErrDisconnected
	}
	c.lock()
	if c.ep != ep {
		c.unlock()
		go c.shutdown(ep)
		return
	}
	c.ep = nil
	c.keepSettingsLocked(ep)
	c.cfg.Logger.Debug("rpcrdma: connection lost", "role", c.role.kind().String(), "err", err)
	c.role.connLostLocked(ep, err)
	c.unlock()
	go c.shutdown(ep)
}
