package transport

// Issue 29, item 1: peers that stop answering our RDMA Reads (the data of
// their calls) or never acknowledge our RDMA Writes (the data of their
// replies) must neither hold the Listener's budgets forever nor take them
// from every other client meanwhile. Twelve raw requesters on a soft
// provider whose responders are stalled (soft.Faults.StallResponders)
// each send 8 calls with a 1 MiB Read chunk, or 8 calls whose 1 MiB
// results go to their Write chunks; a legitimate client's 1 MiB call
// through a Read chunk and 1 MiB reply through a Write chunk must
// complete while they are connected. With our provider's transport timer
// off, what lets them through is each connection's bounded share of the
// budgets; with its default timer, the stuck RDMA operations fail, those
// connections close and the budgets come back to zero without the stuck
// peers doing anything.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

const (
	stuckPeers    = 12
	stuckCalls    = 8
	stuckChunkLen = 1 << 20
	// stuckGuard bounds every wait: a guard against hangs, never a
	// timing assertion.
	stuckGuard = 60 * time.Second
)

// stuckServe answers hpProg calls until ReadMsg fails, then closes c and
// reports the error: hpProcRead with its count of pattern bytes (a
// DDP-eligible result), any other procedure with the length of its
// arguments.
func stuckServe(c *Conn, errs chan<- error) {
	defer c.Close()
	var buf, out []byte
	for {
		var err error
		if buf, err = c.ReadMsg(buf); err != nil {
			errs <- err
			return
		}
		var ch xdr.CallHeader
		args, err := ch.Unmarshal(buf)
		if err != nil {
			errs <- err
			return
		}
		var res []byte
		if ch.Proc == hpProcRead && len(buf) >= args+4 {
			n := int(binary.BigEndian.Uint32(buf[args:]))
			res = binary.BigEndian.AppendUint32(nil, uint32(n))
			res = append(res, hpPattern(xdr.RoundUp(n), 5)...)
		} else {
			res = binary.BigEndian.AppendUint32(nil, uint32(len(buf)-args))
		}
		out = append(out[:0], hpRPCReply(ch.XID, xdr.AcceptSuccess, res)...)
		if err := c.WriteMsg(out); err != nil {
			errs <- err
			return
		}
	}
}

// stuckDial connects a raw requester through prov.
func stuckDial(t *testing.T, addr string, prov *soft.Provider) *hpPeer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stuckGuard)
	defer cancel()
	p := &hpPeer{t: t}
	vc, err := prov.Dial(ctx, addr, &verbs.ConnOptions{PrivateData: hpPD(false, 3, 3), Setup: p.setup})
	if err != nil {
		t.Fatalf("stuck peer: dial: %v", err)
	}
	p.vc = vc
	return p
}

// stuckSend sends stuckCalls calls from p, each naming a window over the
// same stuckChunkLen bytes: as a Read chunk of a NULL call's arguments,
// or (writes) as the Write chunk of an hpProcRead of stuckChunkLen bytes.
// It returns how many of the calls were delivered.
//
// The first call must be delivered: until it arrives our side has nothing
// of this peer's to give up on. The others are posted together, without
// waiting for each other's completion. With our provider's timer on
// (cutShort), our side may fail the first call's RDMA operation, and close
// the connection, before the peer has delivered them all: how many get
// through before then depends on how busy the host is. Their Sends may
// then fail, but only with the connection down by our side's disconnect;
// testStuckPeers checks why our side closed it.
func stuckSend(p *hpPeer, xid0 uint32, writes, cutShort bool) int {
	t := p.t
	t.Helper()
	mem, err := p.vc.AllocRegion(stuckChunkLen)
	if err != nil {
		t.Fatalf("stuck peer: %v", err)
	}
	w, err := p.vc.AllocWindow()
	if err != nil {
		t.Fatalf("stuck peer: %v", err)
	}
	access := verbs.AccessRemoteRead
	if writes {
		access = verbs.AccessRemoteWrite
	}
	if c := p.wait(p.post(verbs.WorkRequest{Op: verbs.OpBindWindow, Window: w,
		Bind: verbs.SGE{Region: mem, Length: stuckChunkLen}, Access: access})); c.Status != verbs.StatusSuccess {
		t.Fatalf("stuck peer: bind: %v", c.Status)
	}
	seg := chunks.Segment{Handle: w.RKey(), Length: stuckChunkLen, Offset: mem.Addr(0)}
	msg := func(i int) []byte {
		xid := xid0 + uint32(i)
		var h chunks.Header
		h.XID, h.Vers, h.Credits, h.Proc = xid, chunks.Version1, 64, chunks.ProcMsg
		var rpc []byte
		if writes {
			rpc = hpRPCCall(xid, hpProcRead, binary.BigEndian.AppendUint32(nil, stuckChunkLen))
			h.WriteList = []chunks.WriteChunk{{seg}}
		} else {
			rpc = hpRPCCall(xid, hpProcNull, nil)
			h.ReadList = []chunks.ReadSegment{{Position: uint32(len(rpc)), Segment: seg}}
		}
		return append(h.Append(nil), rpc...)
	}
	p.sendMsg(msg(0))

	// The rest, posted as hpPeer.sendAsync does but tolerating a
	// connection that is already down.
	var ids []uint64
	var postErr error
	for i := 1; i < stuckCalls; i++ {
		m := msg(i)
		off := p.slot % hpSendSlots * hpSendSlotSize
		p.slot++
		copy(p.send.Bytes()[off:], m)
		p.nextID++
		if postErr = p.vc.PostSend([]verbs.WorkRequest{{ID: p.nextID, Op: verbs.OpSend,
			SGL: []verbs.SGE{{Region: p.send, Offset: off, Length: len(m)}}}}); postErr != nil {
			break
		}
		ids = append(ids, p.nextID)
	}
	delivered := 1
	var failed verbs.Status
	for _, id := range ids {
		if !p.waitUntil(func() bool { _, ok := p.done[id]; return ok }) {
			// No completion: only a connection that went down and
			// took the queue pair's work with it.
			failed = verbs.StatusFlushed
			break
		}
		c := p.done[id]
		delete(p.done, id)
		if c.Status != verbs.StatusSuccess {
			failed = c.Status
			break
		}
		delivered++
	}
	if postErr == nil && failed == verbs.StatusSuccess {
		return delivered
	}
	if !cutShort {
		t.Fatalf("stuck peer: Send of call %d of %d: posting: %v, completion: %v (connection: %v)",
			delivered+1, stuckCalls, postErr, failed, p.vc.Err())
	}
	select {
	case <-p.vc.Done():
	case <-time.After(stuckGuard):
		t.Fatalf("stuck peer: Send of call %d of %d failed (posting: %v, completion: %v) with the connection up",
			delivered+1, stuckCalls, postErr, failed)
	}
	// Soft's error for a disconnect the other side sent, as opposed to a
	// link lost or a protocol violation by our side.
	if err := p.vc.Err(); err == nil || err.Error() != "soft: peer disconnected: verbs: disconnected" {
		t.Fatalf("stuck peer: Send of call %d of %d failed (posting: %v, completion: %v): the connection ended otherwise than by our side's disconnect: %v",
			delivered+1, stuckCalls, postErr, failed, err)
	}
	return delivered
}

// stuckLegit runs the legitimate client's two calls, a 1 MiB argument
// through a Read chunk and a 1 MiB result through a Write chunk, and
// returns how long each took.
func stuckLegit(t *testing.T, cli *Conn, xid uint32) (write, read time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), stuckGuard)
	defer cancel()
	start := time.Now()
	reply, err := cli.Call(ctx, hpRPCCall(xid, hpProcNull, hpPattern(stuckChunkLen, 9)), nil)
	if err != nil {
		t.Fatalf("legitimate 1 MiB call through a Read chunk: %v", err)
	}
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(reply)
	if err != nil || rh.AcceptStat != xdr.AcceptSuccess || len(reply) < off+4 ||
		binary.BigEndian.Uint32(reply[off:]) != stuckChunkLen {
		t.Fatalf("legitimate 1 MiB call: bad reply %x (%v)", reply[:min(len(reply), 32)], err)
	}
	write = time.Since(start)
	start = time.Now()
	data := make([]byte, stuckChunkLen)
	_, item, err := cli.CallInto(ctx, hpRPCCall(xid+1, hpProcRead, binary.BigEndian.AppendUint32(nil, stuckChunkLen)), nil, data)
	if err != nil {
		t.Fatalf("legitimate 1 MiB reply through a Write chunk: %v", err)
	}
	if !item.Present || item.N != stuckChunkLen || !bytes.Equal(data, hpPattern(stuckChunkLen, 5)) {
		t.Fatalf("legitimate 1 MiB reply: result %+v, data intact %v", item, bytes.Equal(data, hpPattern(stuckChunkLen, 5)))
	}
	return write, time.Since(start)
}

// waitFor polls cond until it holds; false after stuckGuard.
func waitFor(cond func() bool) bool {
	deadline := time.Now().Add(stuckGuard)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

func TestStuckPeers(t *testing.T) {
	for _, writes := range []bool{false, true} {
		for _, timer := range []bool{false, true} {
			name := fmt.Sprintf("reads/timer=%v", timer)
			if writes {
				name = fmt.Sprintf("writes/timer=%v", timer)
			}
			t.Run(name, func(t *testing.T) { testStuckPeers(t, writes, timer) })
		}
	}
}

func testStuckPeers(t *testing.T, writes, timer bool) {
	srvProv := &soft.Provider{AckTimeout: -1} // no transport timer
	if timer {
		// Hardware's timer (local ACK timeout 14, 67 ms; the soft
		// default is longer for loaded hosts), the default retry count.
		srvProv = &soft.Provider{AckTimeout: 4096 * time.Nanosecond << 14}
	}
	l, err := Listen("127.0.0.1:0", &Config{Provider: srvProv, Binding: hpBinding{}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	held := func() int {
		if writes {
			return l.Stats().ReplyBytes
		}
		return l.Stats().CallBytes
	}
	errs := make(chan error, stuckPeers+1)
	var served sync.WaitGroup
	defer served.Wait()
	go func() {
		for {
			c, err := l.AcceptRDMA()
			if err != nil {
				return
			}
			served.Add(1)
			go func() { defer served.Done(); stuckServe(c, errs) }()
		}
	}()

	cli, err := Dial(context.Background(), l.Addr().String(), &Config{Provider: &soft.Provider{}, Binding: hpBinding{}})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	// What our side registered for the legitimate connection alone.
	reg0 := registered(t, srvProv)

	faults := &soft.Faults{}
	faults.StallResponders()
	stuckProv := &soft.Provider{Faults: faults}
	peers := make([]*hpPeer, stuckPeers)
	for i := range peers {
		peers[i] = stuckDial(t, l.Addr().String(), stuckProv)
		defer peers[i].vc.Close()
	}

	start := time.Now()
	delivered := 0
	for i, p := range peers {
		delivered += stuckSend(p, uint32(i+1)<<24, writes, timer)
	}
	sent := time.Since(start)
	if !timer {
		// Every stuck connection holds at least its first share.
		if !waitFor(func() bool { return held() >= stuckPeers*stuckChunkLen }) {
			t.Fatalf("the stuck peers hold %d bytes, want at least %d", held(), stuckPeers*stuckChunkLen)
		}
	}
	stuckHeld := held()
	wDur, rDur := stuckLegit(t, cli, 7)
	during := l.Stats()
	t.Logf("%d stuck peers × %d calls of %d bytes (%s) sent in %v (%d delivered before our side closed their connections); stuck held %d MiB of the listener's budget; legitimate 1 MiB call by Read chunk %v, 1 MiB reply by Write chunk %v; then: %d connections, calls %d MiB, replies %d MiB held",
		stuckPeers, stuckCalls, stuckChunkLen, map[bool]string{false: "Read chunks", true: "Write chunks"}[writes],
		sent.Round(time.Millisecond), delivered, stuckHeld>>20, wDur.Round(time.Millisecond), rDur.Round(time.Millisecond),
		during.Conns, during.CallBytes>>20, during.ReplyBytes>>20)

	if !timer {
		// The stuck peers were still connected, and still held their
		// shares, while the legitimate calls went through.
		if during.Conns != stuckPeers+1 || held() < stuckPeers*stuckChunkLen {
			t.Fatalf("after the legitimate calls: %d connections, %d bytes held; want %d, at least %d",
				during.Conns, held(), stuckPeers+1, stuckPeers*stuckChunkLen)
		}
		// They leave: everything they held comes back.
		for _, p := range peers {
			_ = p.vc.Close()
		}
	}
	start = time.Now()
	if !waitFor(func() bool { s := l.Stats(); return s.Conns == 1 && s.CallBytes == 0 && s.ReplyBytes == 0 }) {
		s := l.Stats()
		t.Fatalf("stuck connections not closed: %d connections, calls %d, replies %d bytes held", s.Conns, s.CallBytes, s.ReplyBytes)
	}
	closed := time.Since(start)
	retryExceeded := 0
	for range stuckPeers {
		select {
		case err := <-errs:
			if errors.Is(err, verbs.ErrRetryExceeded) {
				retryExceeded++
			} else if timer && !errors.Is(err, io.EOF) {
				t.Errorf("a stuck connection ended otherwise: %v", err)
			}
		case <-time.After(stuckGuard):
			t.Fatal("a stuck connection's server loop did not end")
		}
	}
	if timer {
		// Our queue pairs gave up, not the peers: each stuck connection
		// failed with the retry counter exceeded, and the disconnect
		// reached the peer.
		// The RPC server's ReadMsg reports the retry counter exceeded,
		// unless the disconnect our side sent raced the completion to
		// end the connection first (then: EOF).
		if retryExceeded == 0 {
			t.Errorf("none of %d stuck connections failed with the retry counter exceeded", stuckPeers)
		}
		for i, p := range peers {
			select {
			case <-p.vc.Done():
			case <-time.After(stuckGuard):
				t.Fatalf("stuck peer %d: still connected", i)
			}
		}
	}
	// Their registered memory went with them: what is left is the
	// legitimate connection's, and what its pool may keep idle.
	regMax := reg0 + int64(2*(DefaultMaxRPCSize+chunkBufAlign))
	if !waitFor(func() bool { return registered(t, srvProv) <= regMax }) {
		t.Errorf("registered memory %d bytes after the stuck connections closed, want at most %d (%d for the legitimate one alone)",
			registered(t, srvProv), regMax, reg0)
	}
	t.Logf("stuck connections closed and budgets back to 0 %v later (%d by retry exceeded); registered memory %d KiB (legitimate connection alone: %d KiB)",
		closed.Round(time.Millisecond), retryExceeded, registered(t, srvProv)>>10, reg0>>10)
	// The legitimate client still works.
	if _, _ = stuckLegit(t, cli, 9); l.Stats().Conns != 1 {
		t.Fatal("the legitimate connection was lost")
	}
}
