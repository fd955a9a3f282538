package transport

// Issue 9, defect 2: a responder's memory pinned by garbage. Before the
// fix, chunk memory was allocated per call slot before anything was read,
// only grew, and was freed only at close: 64 garbage calls naming 1 MiB Read
// chunks pinned 128 MiB on one idle connection. Here 16 raw requesters send
// 10,000 such calls, as fast as their credits let them, and the registered
// memory of our listener (a live counter over AllocRegion and Close) and the
// Go heap are sampled throughout: both stay under what MemoryLimits allows,
// and the registered memory falls back once the burst is over.

import (
	"encoding/binary"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// registered returns the bytes the provider has registered now, from its
// verbs.MemoryMeter.
func registered(t testing.TB, p verbs.Provider) int64 {
	m, ok := p.(verbs.MemoryMeter)
	if !ok {
		t.Fatalf("provider %T counts no registered memory", p)
	}
	return m.RegisteredBytes()
}

// garbageServe answers every call with GARBAGE_ARGS, as an RPC server does
// for arguments it cannot decode, until ReadMsg fails.
func garbageServe(c *Conn) {
	var buf, out []byte
	for {
		var err error
		if buf, err = c.ReadMsg(buf); err != nil {
			return
		}
		xid := binary.BigEndian.Uint32(buf)
		out = (&xdr.ReplyHeader{XID: xid, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptGarbageArgs}).Append(out[:0])
		if err := c.WriteMsg(out); err != nil {
			return
		}
	}
}

func TestHostileMemoryBound(t *testing.T) {
	const (
		conns    = 16
		chunkLen = 1 << 20
		inFlight = 16 // per raw requester: below the 64 credits granted
	)
	total := 10_000
	if testing.Short() {
		total = 1_600
	}
	limits := MemoryLimits{Calls: 4 << 20, Replies: 2 << 20, ListenerCalls: 24 << 20, ListenerReplies: 8 << 20}
	prov := &soft.Provider{} // ours only: the raw peers have their own
	cfg := &Config{Provider: prov, MaxRPCSize: 1<<20 + 4096, Memory: limits}
	l, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var served sync.WaitGroup
	defer served.Wait()
	srvs := make(chan *Conn, conns)
	go func() {
		for {
			c, err := l.AcceptRDMA()
			if err != nil {
				return
			}
			srvs <- c
			served.Add(1)
			go func() { defer served.Done(); garbageServe(c) }()
		}
	}()

	// Baseline: receive and send buffers of 16 connections, no chunk data.
	peers := make([]*hpPeer, conns)
	for i := range peers {
		// R=0: our responder must not invalidate the window every call
		// of the peer names.
		peers[i] = hpDial(t, l.Addr().String(), hpPD(false, 3, 3))
		defer peers[i].vc.Close()
	}
	ours := make([]*Conn, conns)
	for i := range ours {
		ours[i] = <-srvs
		defer ours[i].Close()
	}
	baseline := registered(t, prov)
	stop := make(chan struct{})

	// Sample the registered memory and the Go heap while the calls run.
	var regPeak atomic.Int64
	regPeak.Store(baseline)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
			if r := registered(t, prov); r > regPeak.Load() {
				regPeak.Store(r)
			}
		}
	}()
	var heapPeak atomic.Uint64
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap0 := ms.HeapAlloc
	var sampler sync.WaitGroup
	sampler.Add(1)
	go func() {
		defer sampler.Done()
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			runtime.ReadMemStats(&ms)
			if ms.HeapAlloc > heapPeak.Load() {
				heapPeak.Store(ms.HeapAlloc)
			}
		}
	}()

	start := time.Now()
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n := total / conns
			if i < total%conns {
				n++
			}
			hostileGarbageCalls(t, p, uint32(i+1)<<24, n, chunkLen, inFlight)
		}()
	}
	wg.Wait()
	close(stop)
	sampler.Wait()
	elapsed := time.Since(start)

	// The bound: receive and send buffers, the budgets, and what each
	// connection's pool may keep idle (2 × MaxRPCSize), rounded up to the
	// pool's 16 KiB granularity per buffer.
	idle := int64(conns * 2 * cfg.MaxRPCSize)
	bound := baseline + int64(limits.ListenerCalls+limits.ListenerReplies) + idle
	peak := regPeak.Load()
	t.Logf("%d garbage calls naming %d-byte Read chunks over %d connections in %v: registered memory baseline %d MiB, peak %d MiB (bound %d MiB; before issue 9 it grew by 1 MiB per call slot, %d MiB here); Go heap peak +%d MiB",
		total, chunkLen, conns, elapsed.Round(time.Millisecond), baseline>>20, peak>>20, bound>>20,
		int64(conns)*int64(2*credits64)*chunkLen>>20, (int64(heapPeak.Load())-int64(heap0))>>20)
	if peak > bound {
		t.Errorf("registered memory peaked at %d bytes, over the bound %d", peak, bound)
	}
	// The Go heap holds at most the calls waiting for the RPC server
	// (ListenerCalls) and each connection's cache of call buffers
	// (2 × MaxRPCSize), twice over between collections (GOGC=100), plus
	// the raw peers' and the soft provider's own garbage.
	heapBound := 2*int64(limits.ListenerCalls+conns*2*cfg.MaxRPCSize) + 16<<20
	if grew := int64(heapPeak.Load()) - int64(heap0); grew > heapBound {
		t.Errorf("Go heap grew by %d bytes during the burst, over %d", grew, heapBound)
	}
	if used := l.calls.inUse(); used != 0 {
		t.Errorf("listener's Calls budget holds %d bytes after every call was answered", used)
	}

	// After the burst the pools' caches are trimmed back.
	deadline := time.Now().Add(5 * time.Second)
	limit := baseline + conns*poolKeepIdle
	for registered(t, prov) > limit && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if live := registered(t, prov); live > limit {
		t.Errorf("registered memory %d bytes 5 s after the burst, want at most %d (baseline %d)", live, limit, baseline)
	}
	// And so are the caches of call buffers in the Go heap (what is left:
	// each RPC server loop's own buffer of its last call, and the kept
	// buffers of at most poolKeepIdle per connection).
	runtime.GC()
	runtime.ReadMemStats(&ms)
	if grew := int64(ms.HeapAlloc) - int64(heap0); grew > int64(conns*(poolKeepIdle+cfg.MaxRPCSize)+8<<20) {
		t.Errorf("Go heap %d bytes over the baseline after the burst", grew)
	}
	for _, c := range ours {
		_ = c.Close()
	}
	_ = l.Close()
	served.Wait()
	if live := registered(t, prov); live != 0 {
		t.Errorf("registered memory %d bytes after every connection closed", live)
	}
}

// credits64 is our responder's default grant: what the pre-issue-9 engine
// sized its call slots by (2 × grant slots of chunk memory each).
const credits64 = 64

// hostileGarbageCalls sends n calls from p, at most inFlight at a time: each
// an RPC call header inline and a Read chunk of chunkLen bytes of garbage
// arguments at its end, all naming the same exposed memory.
func hostileGarbageCalls(t *testing.T, p *hpPeer, xid0 uint32, n, chunkLen, inFlight int) {
	mem, err := p.vc.AllocRegion(chunkLen)
	if err != nil {
		t.Error(err)
		return
	}
	for i := range mem.Bytes() {
		mem.Bytes()[i] = byte(i*7 + 3)
	}
	w, err := p.vc.AllocWindow()
	if err != nil {
		t.Error(err)
		return
	}
	id := p.post(verbs.WorkRequest{Op: verbs.OpBindWindow, Window: w,
		Bind: verbs.SGE{Region: mem, Length: chunkLen}, Access: verbs.AccessRemoteRead})
	rkey := w.RKey()
	if c := p.wait(id); c.Status != verbs.StatusSuccess {
		t.Errorf("bind: %v", c.Status)
		return
	}
	sent, answered := 0, 0
	for answered < n {
		for sent < n && sent-answered < inFlight {
			xid := xid0 + uint32(sent)
			rpc := hpRPCCall(xid, hpProcNull, nil)
			var h chunks.Header
			h.XID, h.Vers, h.Credits, h.Proc = xid, chunks.Version1, 64, chunks.ProcMsg
			h.ReadList = []chunks.ReadSegment{{Position: uint32(len(rpc)),
				Segment: chunks.Segment{Handle: rkey, Length: uint32(chunkLen), Offset: mem.Addr(0)}}}
			p.sendAsync(append(h.Append(nil), rpc...), verbs.OpSend, 0)
			sent++
		}
		msg := p.next()
		var h chunks.Header
		if _, err := h.ParseReply(msg, &chunks.DefaultLimits); err != nil || h.Proc != chunks.ProcMsg {
			t.Errorf("reply %d: %v (proc %v)", answered, err, h.Proc)
			return
		}
		answered++
	}
}
