package transport

// The raw peer of the hostile-peer suite (issue 5): a requester or a
// responder that speaks the verbs provider directly, so that it can send
// any bytes, name any rkey and post any RDMA operation, and the harness
// that runs one case against our engine: a goroutine-leak check, an
// allocation meter (Go heap and registered memory) and guards against
// hangs. The cases themselves are in hostile_test.go.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

const (
	// hpGuard bounds every wait of the suite. It is a guard against hangs,
	// never a timing assertion: each wait ends on a condition (a
	// completion, a message, a closed channel) long before.
	hpGuard = 10 * time.Second

	// The raw peer's memory: Receive buffers larger than anything our side
	// may legitimately send (so that an overlong message of ours would be
	// seen, not refused), Send slots larger than our Receive buffers (so
	// that the peer can overflow them), and a 1 MiB region for the windows
	// it exposes and the targets of its RDMA Reads.
	hpRecvSize     = 16 << 10
	hpNRecv        = 32
	hpSendSlotSize = 16 << 10
	hpSendSlots    = 64
	hpMemSize      = 1 << 20
	hpScratchOff   = hpMemSize / 2 // RDMA Read targets live above this

	// hpRecvID is the first work request ID of the peer's Receives.
	hpRecvID = 1 << 40
)

// Allocation bounds of one hostile exchange (connection setup excluded).
// Measured costs (go test -race -v prints them) are 5-120 KB of Go heap
// (soft provider frames, the raw peer's copies) and 0-128 KB of registered
// memory (our chunk memory: a 64 KiB region per slot that pulls a Read
// chunk or stages a reply). A bug that allocates what a hostile header
// claims (2^32 segments of 16 bytes, a 4 GiB chunk, a 2 MiB Read chunk past
// MaxRPCSize) exceeds them by orders of magnitude.
const (
	hpHeapBound       = 1 << 20
	hpRegisteredBound = 1 << 20
)

// Private data the raw peers send by default: what Linux sends (see
// /work/shared/notes/linux-interop.md).
var (
	// hpLinuxClientPD is the Linux client's offer: R=1, 4096/4096.
	hpLinuxClientPD = []byte{0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x03, 0x03}
	// hpLinuxServerPD is knfsd's accept: R=0, 4096/4096.
	hpLinuxServerPD = []byte{0xf6, 0xab, 0x0e, 0x18, 0x01, 0x00, 0x03, 0x03}
)

// hpPeer is one raw RPC-over-RDMA peer on a soft verbs connection. It is
// driven synchronously by the test goroutine: every method polls the
// completion queue itself, queueing received messages in inbox and
// remembering send completions by ID.
type hpPeer struct {
	t       testing.TB
	vc      verbs.Conn
	recv    verbs.Region
	send    verbs.Region
	mem     verbs.Region
	memUsed int
	nextID  uint64
	slot    int
	inbox   [][]byte
	failed  []verbs.Completion // completions with an error status
	done    map[uint64]verbs.Completion
	invs    []uint32 // rkeys our side invalidated with Send With Invalidate
}

// setup is the peer's verbs.ConnOptions.Setup: it registers its memory and
// posts its Receives before the connection is established.
func (p *hpPeer) setup(vc verbs.Conn) error {
	p.vc = vc
	p.done = make(map[uint64]verbs.Completion)
	var err error
	if p.recv, err = vc.AllocRegion(hpNRecv * hpRecvSize); err != nil {
		return err
	}
	if p.send, err = vc.AllocRegion(hpSendSlots * hpSendSlotSize); err != nil {
		return err
	}
	if p.mem, err = vc.AllocRegion(hpMemSize); err != nil {
		return err
	}
	rrs := make([]verbs.RecvRequest, hpNRecv)
	for i := range rrs {
		rrs[i] = p.recvRequest(i)
	}
	return vc.PostRecv(rrs)
}

func (p *hpPeer) recvRequest(i int) verbs.RecvRequest {
	return verbs.RecvRequest{ID: hpRecvID + uint64(i),
		SGL: []verbs.SGE{{Region: p.recv, Offset: i * hpRecvSize, Length: hpRecvSize}}}
}

// poll drains the completion queue.
func (p *hpPeer) poll() {
	var cs [32]verbs.Completion
	for {
		n, err := p.vc.Poll(cs[:])
		if err != nil || n == 0 {
			return
		}
		for _, c := range cs[:n] {
			if c.Status != verbs.StatusSuccess {
				p.failed = append(p.failed, c)
			}
			if c.ID < hpRecvID {
				p.done[c.ID] = c
				continue
			}
			if c.Status != verbs.StatusSuccess {
				continue
			}
			i := int(c.ID - hpRecvID)
			p.inbox = append(p.inbox, bytes.Clone(p.recv.Bytes()[i*hpRecvSize:][:c.ByteLen]))
			if c.Invalidated {
				p.invs = append(p.invs, c.InvalidatedRKey)
			}
			_ = p.vc.PostRecv([]verbs.RecvRequest{p.recvRequest(i)})
		}
	}
}

// waitUntil polls until cond holds. It returns false if the connection
// went down with cond still false, or the guard expired.
func (p *hpPeer) waitUntil(cond func() bool) bool {
	ctx, cancel := context.WithTimeout(context.Background(), hpGuard)
	defer cancel()
	for {
		p.poll()
		if cond() {
			return true
		}
		if err := p.vc.Wait(ctx); err != nil {
			p.poll()
			return cond()
		}
	}
}

// post posts one send work request and returns its ID.
func (p *hpPeer) post(wr verbs.WorkRequest) uint64 {
	p.t.Helper()
	p.nextID++
	wr.ID = p.nextID
	if err := p.vc.PostSend([]verbs.WorkRequest{wr}); err != nil {
		p.t.Fatalf("raw peer: posting %v: %v", wr.Op, err)
	}
	return wr.ID
}

// wait returns the completion of work request id.
func (p *hpPeer) wait(id uint64) verbs.Completion {
	p.t.Helper()
	if !p.waitUntil(func() bool { _, ok := p.done[id]; return ok }) {
		p.t.Fatalf("raw peer: no completion for work request %d (connection: %v)", id, p.vc.Err())
	}
	c := p.done[id]
	delete(p.done, id)
	return c
}

// sendAsync posts msg as a Send (op OpSend) or a Send With Invalidate of
// invRKey, from the next Send slot, without waiting.
func (p *hpPeer) sendAsync(msg []byte, op verbs.Opcode, invRKey uint32) uint64 {
	p.t.Helper()
	if len(msg) > hpSendSlotSize {
		p.t.Fatalf("raw peer: message of %d bytes exceeds a Send slot", len(msg))
	}
	off := p.slot % hpSendSlots * hpSendSlotSize
	p.slot++
	copy(p.send.Bytes()[off:], msg)
	return p.post(verbs.WorkRequest{Op: op, InvalidateRKey: invRKey,
		SGL: []verbs.SGE{{Region: p.send, Offset: off, Length: len(msg)}}})
}

// sendMsg sends msg and requires the Send to succeed.
func (p *hpPeer) sendMsg(msg []byte) {
	p.t.Helper()
	if c := p.wait(p.sendAsync(msg, verbs.OpSend, 0)); c.Status != verbs.StatusSuccess {
		p.t.Fatalf("raw peer: Send: %v", c.Status)
	}
}

// sendInv sends msg with Send With Invalidate of rkey. The sender's
// completion is success even when the receiver refuses the rkey (rxe).
func (p *hpPeer) sendInv(msg []byte, rkey uint32) {
	p.t.Helper()
	if c := p.wait(p.sendAsync(msg, verbs.OpSendWithInvalidate, rkey)); c.Status != verbs.StatusSuccess {
		p.t.Fatalf("raw peer: Send With Invalidate: %v", c.Status)
	}
}

// expose copies data into fresh memory and binds a window of size bytes
// (≥ len(data)) over it; it returns the rkey and the address of the data.
func (p *hpPeer) expose(data []byte, size int) (uint32, uint64) {
	p.t.Helper()
	size = max(size, len(data), 1)
	off := p.memUsed
	p.memUsed += (size + 63) &^ 63
	if p.memUsed > hpScratchOff {
		p.t.Fatalf("raw peer: out of memory to expose")
	}
	copy(p.mem.Bytes()[off:], data)
	w, err := p.vc.AllocWindow()
	if err != nil {
		p.t.Fatalf("raw peer: AllocWindow: %v", err)
	}
	id := p.post(verbs.WorkRequest{Op: verbs.OpBindWindow, Window: w,
		Bind:   verbs.SGE{Region: p.mem, Offset: off, Length: size},
		Access: verbs.AccessRemoteRead | verbs.AccessRemoteWrite})
	rkey := w.RKey()
	if c := p.wait(id); c.Status != verbs.StatusSuccess {
		p.t.Fatalf("raw peer: bind: %v", c.Status)
	}
	return rkey, p.mem.Addr(off)
}

// memAt returns n bytes of the peer's memory at the address addr that
// expose returned.
func (p *hpPeer) memAt(addr uint64, n int) []byte {
	off := int(addr - p.mem.Addr(0))
	return p.mem.Bytes()[off : off+n]
}

// rdmaWrite writes data to the peer's (our engine's) memory and returns
// the completion.
func (p *hpPeer) rdmaWrite(rkey uint32, addr uint64, data []byte) verbs.Completion {
	p.t.Helper()
	copy(p.mem.Bytes()[hpScratchOff:], data)
	return p.wait(p.post(verbs.WorkRequest{Op: verbs.OpRDMAWrite, RKey: rkey, RemoteAddr: addr,
		SGL: []verbs.SGE{{Region: p.mem, Offset: hpScratchOff, Length: len(data)}}}))
}

// rdmaRead reads n bytes of our engine's memory.
func (p *hpPeer) rdmaRead(rkey uint32, addr uint64, n int) (verbs.Completion, []byte) {
	p.t.Helper()
	c := p.wait(p.post(verbs.WorkRequest{Op: verbs.OpRDMARead, RKey: rkey, RemoteAddr: addr,
		SGL: []verbs.SGE{{Region: p.mem, Offset: hpScratchOff, Length: n}}}))
	return c, bytes.Clone(p.mem.Bytes()[hpScratchOff : hpScratchOff+n])
}

// next returns the next message our side sent.
func (p *hpPeer) next() []byte {
	p.t.Helper()
	if !p.waitUntil(func() bool { return len(p.inbox) > 0 }) {
		p.t.Fatalf("raw peer: no message arrived (connection: %v)", p.vc.Err())
	}
	m := p.inbox[0]
	p.inbox = p.inbox[1:]
	return m
}

// waitDown waits until the connection is down (our side disconnected or
// broke it) and returns why.
func (p *hpPeer) waitDown() error {
	p.t.Helper()
	select {
	case <-p.vc.Done():
	case <-time.After(hpGuard):
		p.t.Fatalf("raw peer: the connection stayed up")
	}
	return p.vc.Err()
}

// hpAccepted is what the raw responder's accept goroutine hands over.
type hpAccepted struct {
	peer *hpPeer
	pd   []byte // the connect request's private data, as delivered
	err  error
}

// hpAccept accepts one connection request on vl as a raw responder,
// sending pd with the accept.
func hpAccept(t testing.TB, vl verbs.Listener, pd []byte) <-chan hpAccepted {
	ch := make(chan hpAccepted, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), hpGuard)
		defer cancel()
		req, err := vl.Accept(ctx)
		if err != nil {
			ch <- hpAccepted{err: err}
			return
		}
		p := &hpPeer{t: t}
		vc, err := req.Accept(ctx, &verbs.ConnOptions{PrivateData: pd, Setup: p.setup})
		if err != nil {
			ch <- hpAccepted{err: err}
			return
		}
		p.vc = vc
		ch <- hpAccepted{peer: p, pd: req.PrivateData()}
	}()
	return ch
}

// hpDial connects a raw requester to addr with private data pd.
func hpDial(t testing.TB, addr string, pd []byte) *hpPeer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), hpGuard)
	defer cancel()
	p := &hpPeer{t: t}
	vc, err := protoNet.provider(true).Dial(ctx, addr, &verbs.ConnOptions{PrivateData: pd, Setup: p.setup})
	if err != nil {
		t.Fatalf("raw requester: dial: %v", err)
	}
	p.vc = vc
	return p
}

// hpCountingProvider wraps our side's provider and counts the bytes our
// engine registers (AllocRegion), the allocation the Go heap statistics
// cannot see: regions are mapped outside the heap.
type hpCountingProvider struct {
	verbs.Provider
	registered atomic.Int64
}

type hpCountingConn struct {
	verbs.Conn
	p *hpCountingProvider
}

func (c hpCountingConn) AllocRegion(size int) (verbs.Region, error) {
	r, err := c.Conn.AllocRegion(size)
	if err == nil {
		c.p.registered.Add(int64(size))
	}
	return r, err
}

func (p *hpCountingProvider) opts(o *verbs.ConnOptions) *verbs.ConnOptions {
	if o == nil {
		return nil
	}
	w := *o
	if setup := o.Setup; setup != nil {
		w.Setup = func(vc verbs.Conn) error { return setup(hpCountingConn{vc, p}) }
	}
	return &w
}

func (p *hpCountingProvider) Dial(ctx context.Context, addr string, o *verbs.ConnOptions) (verbs.Conn, error) {
	vc, err := p.Provider.Dial(ctx, addr, p.opts(o))
	if err != nil {
		return nil, err
	}
	return hpCountingConn{vc, p}, nil
}

func (p *hpCountingProvider) Listen(addr string) (verbs.Listener, error) {
	vl, err := p.Provider.Listen(addr)
	if err != nil {
		return nil, err
	}
	return hpCountingListener{vl, p}, nil
}

type hpCountingListener struct {
	verbs.Listener
	p *hpCountingProvider
}

func (l hpCountingListener) Accept(ctx context.Context) (verbs.ConnRequest, error) {
	r, err := l.Listener.Accept(ctx)
	if err != nil {
		return nil, err
	}
	return hpCountingRequest{r, l.p}, nil
}

type hpCountingRequest struct {
	verbs.ConnRequest
	p *hpCountingProvider
}

func (r hpCountingRequest) Accept(ctx context.Context, o *verbs.ConnOptions) (verbs.Conn, error) {
	vc, err := r.ConnRequest.Accept(ctx, r.p.opts(o))
	if err != nil {
		return nil, err
	}
	return hpCountingConn{vc, r.p}, nil
}

// hpMeter measures the Go heap allocated (TotalAlloc, process-wide) and the
// memory our engine registered between start and stop.
type hpMeter struct {
	prov  *hpCountingProvider
	heap0 uint64
	reg0  int64
}

func hpStartMeter(prov *hpCountingProvider) hpMeter {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return hpMeter{prov: prov, heap0: ms.TotalAlloc, reg0: prov.registered.Load()}
}

func (m hpMeter) stop() (heap uint64, registered int64) {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc - m.heap0, m.prov.registered.Load() - m.reg0
}

// hpGoroutines returns the stacks of the live goroutines by ID.
func hpGoroutines() map[uint64]string {
	buf := make([]byte, 1<<16)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	gs := make(map[uint64]string)
	for _, g := range strings.Split(string(buf), "\n\n") {
		rest, ok := strings.CutPrefix(g, "goroutine ")
		if !ok {
			continue
		}
		id, _, _ := strings.Cut(rest, " ")
		if n, err := strconv.ParseUint(id, 10, 64); err == nil {
			gs[n] = g
		}
	}
	return gs
}

// hpCheckLeaks fails t if goroutines started since before are still alive.
// Goroutines exit asynchronously after Close returns (the poll loop's
// shutdown, the soft provider's reader and writer), and the runtime has no
// event to wait on, so this is the one place that polls, until a guard.
func hpCheckLeaks(t testing.TB, before map[uint64]string) {
	t.Helper()
	checkLeaks(t, before, hpGuard)
}

// checkLeaks fails t if goroutines not in before are still alive after
// guard.
func checkLeaks(t testing.TB, before map[uint64]string, guard time.Duration) {
	t.Helper()
	deadline := time.Now().Add(guard)
	for {
		var extra []string
		for id, g := range hpGoroutines() {
			if _, ok := before[id]; !ok {
				extra = append(extra, g)
			}
		}
		if len(extra) == 0 {
			return
		}
		if time.Now().After(deadline) {
			sort.Strings(extra)
			t.Errorf("%d goroutines leaked:\n%s", len(extra), strings.Join(extra, "\n\n"))
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// hpRun runs one case's body: the goroutine baseline is taken first and
// checked after every cleanup, and the body's allocations are bounded.
func hpRun(t *testing.T, heapBound uint64, regBound int64, setup func() *hpCountingProvider, body func()) {
	before := hpGoroutines()
	t.Cleanup(func() { hpCheckLeaks(t, before) }) // runs last
	prov := setup()
	m := hpStartMeter(prov)
	body()
	heap, reg := m.stop()
	if heapBound == 0 {
		heapBound = hpHeapBound
	}
	switch {
	case regBound == 0:
		regBound = hpRegisteredBound
	case regBound < 0: // the case must register nothing at all
		regBound = 0
	}
	if heap > heapBound {
		t.Errorf("the exchange allocated %d bytes of Go heap, bound %d", heap, heapBound)
	}
	if reg > regBound {
		t.Errorf("the exchange registered %d bytes, bound %d", reg, regBound)
	}
	if testing.Verbose() {
		t.Logf("allocated: heap %d B, registered %d B", heap, reg)
	}
}

// hpWords encodes XDR words.
func hpWords(ws ...uint32) []byte {
	b := make([]byte, 0, 4*len(ws))
	for _, w := range ws {
		b = xdr.AppendUint32(b, w)
	}
	return b
}

// hpSeg returns the words of a segment: handle, length, 64-bit offset.
func hpSeg(handle, length uint32, off uint64) []uint32 {
	return []uint32{handle, length, uint32(off >> 32), uint32(off)}
}

// Procedures of the test program hpProg.
const (
	hpProg     = 0x20000098
	hpProcNull = 0
	// hpProcEcho's argument is an opaque; its result the same opaque.
	hpProcEcho = 1
	// hpProcRead's argument is a count n; its result n bytes, a
	// DDP-eligible opaque (like NFSv3 READ).
	hpProcRead = 2
	// hpProcBig may have a reply of up to 64 KiB: the requester offers a
	// Reply chunk.
	hpProcBig = 3
)

// hpBinding is our requester's binding for hpProg.
type hpBinding struct{}

func (hpBinding) Call(h *xdr.CallHeader, msg []byte, args int) CallInfo {
	r := xdr.NewReader(msg[args:])
	switch h.Proc {
	case hpProcNull:
		return CallInfo{MaxReply: 24}
	case hpProcEcho:
		n, _ := r.Uint32()
		return CallInfo{MaxReply: 28 + xdr.RoundUp(int(n))}
	case hpProcRead:
		n, _ := r.Uint32()
		return CallInfo{MaxReply: 28 + xdr.RoundUp(int(n)), ReplyData: int(n)}
	case hpProcBig:
		return CallInfo{MaxReply: 64 << 10}
	}
	return CallInfo{}
}

func (hpBinding) ReplyData(h *xdr.CallHeader, reply []byte, results int) DataItem {
	if h.Proc != hpProcRead || len(reply) < results+4 {
		return DataItem{}
	}
	r := xdr.NewReader(reply[results:])
	n, _ := r.Uint32()
	return DataItem{Off: results + 4, N: int(n), Present: true}
}

// hpRPCCall returns an RPC call of hpProg.
func hpRPCCall(xid, proc uint32, args []byte) []byte {
	h := xdr.CallHeader{XID: xid, Prog: hpProg, Vers: 1, Proc: proc}
	return append(h.Append(nil), args...)
}

// hpRPCReply returns an accepted RPC reply with the given status and
// results.
func hpRPCReply(xid uint32, stat xdr.AcceptStat, results []byte) []byte {
	h := xdr.ReplyHeader{XID: xid, Stat: xdr.MsgAccepted, AcceptStat: stat}
	return append(h.Append(nil), results...)
}

// hpMsg returns an RDMA_MSG transport header with empty chunk lists,
// followed by rpc.
func hpMsg(xid, credits uint32, rpc []byte) []byte {
	return hpHeader(xid).credits(credits).rpc(rpc).bytes()
}

// hpParse parses a transport header our side sent, into a fresh Header.
func hpParse(t testing.TB, b []byte) (*chunks.Header, []byte) {
	t.Helper()
	h := new(chunks.Header)
	n, err := h.Unmarshal(b, nil)
	if err != nil {
		t.Fatalf("our side sent an unparsable transport header %x: %v", b[:min(len(b), 64)], err)
	}
	return h, b[n:]
}

// hpGarbage returns n bytes of deterministic garbage that contains no
// RFC 8797 format identifier.
func hpGarbage(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*31) ^ seed | 0x01
	}
	return b
}

// errorIsAny reports whether err matches one of targets.
func errorIsAny(err error, targets ...error) bool {
	for _, t := range targets {
		if errors.Is(err, t) {
			return true
		}
	}
	return false
}

// hpPattern returns n bytes of a pattern that depends on seed.
func hpPattern(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7) + seed
	}
	return p
}

// hpDescribe formats a case's expected outcome for failure messages.
func hpDescribe(name, want string) string { return fmt.Sprintf("%s (expected: %s)", name, want) }
