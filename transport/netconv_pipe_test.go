package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// A byte-stream net.Conn built from RPC-over-RDMA Conns, so that
// golang.org/x/net/nettest.TestConn, which wants a pipe of bytes, exercises
// the deadlines, Close and concurrency of our Conn for real.
//
// The mapping. RPC-over-RDMA is asymmetric: a requester sends calls, a
// responder answers them, and a responder can never speak first. A byte pipe
// is symmetric, so each end of the pipe holds two Conns of two different
// RDMA connections:
//
//	end A: out = requester of connection 1    end B: in  = responder of connection 1
//	       in  = responder of connection 2           out = requester of connection 2
//
// A Write on one end is one RPC call on its out Conn, written as one
// record through Conn.Write (record marking included), its argument the
// bytes as an XDR opaque (pipeProcData). The other end's Read takes calls
// from its in Conn through Conn.Read (record marking included), hands their
// bytes out, and answers each call with an empty reply through WriteMsg as
// soon as it has it. A goroutine per end reads those replies with ReadMsg.
//
// So every pipe operation is one operation of one Conn, and nothing is
// emulated by the adapter:
//
//   - Write blocks exactly when the Conn's Write blocks: when the reader has
//     not taken the calls that hold every credit (flow control, RFC 8166
//     §3.3, is the pipe's back-pressure).
//   - SetWriteDeadline is the out Conn's, SetReadDeadline the in Conn's:
//     every timeout TestConn sees is a *net.OpError from our Conn.
//   - The peer's Close disconnects the in Conn, whose Read returns io.EOF
//     once the calls received before were read.
//   - Close closes both Conns; blocked Reads and Writes fail with the
//     Conns' net.ErrClosed.
//
// Two things the adapter adds, because a pipe of bytes promises them and RPC
// does not. RPC calls on one connection may be delivered out of order (a
// call whose argument is pulled with RDMA Read is queued when the Read
// completes, after an inline call that arrived later), so the XID is the
// stream sequence number and Read puts calls back in order. And Close first
// waits until the peer received every call written before it (its reply
// arrived, or the connection died): an RDMA disconnect flushes Sends still
// on the send queue, whereas closing a TCP socket delivers what was written.
type pipeEnd struct {
	out, in *Conn

	wmu sync.Mutex // serialises Writes: one call per Write, XIDs in order
	seq uint32     // XID of our next call
	rec []byte     // the record being written

	mu      sync.Mutex
	cond    *sync.Cond
	sent    uint64 // calls written
	acked   uint64 // replies received
	drained bool   // the out Conn failed: no more replies will come
	ackErr  error  // a reply that was not the empty success we send

	rmu     sync.Mutex        // serialises Reads
	next    uint32            // XID of the next call whose bytes Read returns
	early   map[uint32][]byte // calls that arrived before next
	pending []byte            // bytes of call next-1 not yet returned
	recBuf  []byte            // the record being read from in
	want    int               // bytes of recBuf wanted: 4 (the mark), then 4+length
	ack     []byte

	closeOnce sync.Once
	drainDone chan struct{}
}

const (
	pipeProg     = 0x20000098
	pipeProcData = 1
	// pipeMaxCall is the most bytes one call carries; a larger Write is
	// several calls.
	pipeMaxCall = 64 << 10
)

// pipeBinding is the upper-layer binding of the pipe program: the reply is
// an empty accepted reply (24 bytes), and with ddp the bytes of a call are
// DDP-eligible, so that a call larger than the inline threshold moves them
// in a Read chunk at their position instead of as a Long Call.
type pipeBinding struct{ ddp bool }

func (b pipeBinding) Call(h *xdr.CallHeader, msg []byte, args int) CallInfo {
	info := CallInfo{MaxReply: 24}
	if b.ddp && h.Proc == pipeProcData && len(msg) >= args+4 {
		info.Arg = DataItem{Off: args + 4, N: int(binary.BigEndian.Uint32(msg[args:])), Present: true}
	}
	return info
}

func (pipeBinding) ReplyData(*xdr.CallHeader, []byte, int) DataItem { return DataItem{} }

func newPipeEnd(out, in *Conn) *pipeEnd {
	e := &pipeEnd{out: out, in: in, seq: 1, next: 1, want: 4, recBuf: make([]byte, 0, 4096),
		early: map[uint32][]byte{}, drainDone: make(chan struct{})}
	e.cond = sync.NewCond(&e.mu)
	go e.drain()
	return e
}

// drain reads the replies to our calls.
func (e *pipeEnd) drain() {
	defer close(e.drainDone)
	var buf []byte
	for {
		var err error
		buf, err = e.out.ReadMsg(buf)
		e.mu.Lock()
		if err != nil {
			e.drained = true
			e.cond.Broadcast()
			e.mu.Unlock()
			return
		}
		var rh xdr.ReplyHeader
		if n, err := rh.Unmarshal(buf); (err != nil || rh.Stat != xdr.MsgAccepted || rh.AcceptStat != xdr.AcceptSuccess || n != len(buf)) && e.ackErr == nil {
			e.ackErr = fmt.Errorf("pipe: bad reply %x: %v", buf, err)
		}
		e.acked++
		e.cond.Broadcast()
		e.mu.Unlock()
	}
}

// Write sends p as calls of at most pipeMaxCall bytes.
func (e *pipeEnd) Write(p []byte) (int, error) {
	e.wmu.Lock()
	defer e.wmu.Unlock()
	if len(p) == 0 {
		return e.out.Write(nil) // reports a closed Conn or a passed deadline
	}
	n := 0
	for n < len(p) {
		k := min(len(p)-n, pipeMaxCall)
		e.rec = binary.BigEndian.AppendUint32(e.rec[:0], 0)
		e.rec = appendPipeCall(e.rec, e.seq, p[n:n+k])
		binary.BigEndian.PutUint32(e.rec, xdr.LastFragment|uint32(len(e.rec)-4))
		// One whole record per Conn.Write: if it fails, the call was not
		// sent (the Conn sends a record only once it is complete).
		if _, err := e.out.Write(e.rec); err != nil {
			return n, err
		}
		e.mu.Lock()
		e.sent++
		e.mu.Unlock()
		e.seq++
		n += k
	}
	return n, nil
}

func appendPipeCall(b []byte, xid uint32, data []byte) []byte {
	h := xdr.CallHeader{XID: xid, Prog: pipeProg, Vers: 1, Proc: pipeProcData}
	return xdr.AppendOpaque(h.Append(b), data)
}

// Read returns the bytes of the peer's calls, in XID order.
func (e *pipeEnd) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	e.rmu.Lock()
	defer e.rmu.Unlock()
	for len(e.pending) == 0 {
		if p, ok := e.early[e.next]; ok {
			delete(e.early, e.next)
			e.pending = p
			e.next++
			continue
		}
		if err := e.readCall(); err != nil {
			return 0, err
		}
	}
	n := copy(b, e.pending)
	e.pending = e.pending[n:]
	return n, nil
}

// readCall reads one record from the in Conn with Conn.Read, in as many
// pieces as Read gives (a Read that times out leaves the record half read
// and the next Read goes on with it), and acknowledges the call.
func (e *pipeEnd) readCall() error {
	for len(e.recBuf) < e.want {
		n, err := e.in.Read(e.recBuf[len(e.recBuf):e.want])
		e.recBuf = e.recBuf[:len(e.recBuf)+n]
		if err != nil {
			return err
		}
		if e.want == 4 && len(e.recBuf) == 4 {
			mark := binary.BigEndian.Uint32(e.recBuf)
			if mark&xdr.LastFragment == 0 {
				return errors.New("pipe: Conn.Read gave a record mark without the last-fragment bit")
			}
			e.want = 4 + int(mark&^xdr.LastFragment)
			if cap(e.recBuf) < e.want {
				e.recBuf = append(make([]byte, 0, e.want), e.recBuf...)
			}
		}
	}
	msg := e.recBuf[4:e.want]
	e.recBuf, e.want = e.recBuf[:0], 4
	var h xdr.CallHeader
	args, err := h.Unmarshal(msg)
	if err != nil {
		return err
	}
	r := xdr.NewReader(msg[args:])
	data, err := r.Opaque(pipeMaxCall)
	if err != nil {
		return err
	}
	if h.XID < e.next || e.early[h.XID] != nil {
		return fmt.Errorf("pipe: call %d delivered twice", h.XID)
	}
	// The bytes alias recBuf, which the next readCall overwrites: keep a
	// copy. (Read calls readCall only once pending is empty.)
	e.early[h.XID] = bytes.Clone(data)
	if e.early[h.XID] == nil {
		e.early[h.XID] = []byte{}
	}
	// Answer at once: the reply frees the writer's credit. An error
	// means the connection is going away, which the next Read reports.
	e.ack = appendReply(e.ack[:0], h.XID)
	_ = e.in.WriteMsg(e.ack)
	return nil
}

// Close waits until the peer received every call written so far, then
// closes both Conns. It is idempotent; concurrent calls wait for the first.
func (e *pipeEnd) Close() error {
	e.closeOnce.Do(func() {
		e.mu.Lock()
		target := e.sent
		for e.acked < target && !e.drained {
			e.cond.Wait()
		}
		e.mu.Unlock()
		e.shut()
	})
	return nil
}

// shut closes both Conns at once and waits for the reply reader.
func (e *pipeEnd) shut() {
	_ = e.out.Close()
	_ = e.in.Close()
	<-e.drainDone
}

func (e *pipeEnd) LocalAddr() net.Addr  { return e.out.LocalAddr() }
func (e *pipeEnd) RemoteAddr() net.Addr { return e.out.RemoteAddr() }

func (e *pipeEnd) SetDeadline(t time.Time) error {
	_ = e.out.SetWriteDeadline(t)
	return e.in.SetReadDeadline(t)
}
func (e *pipeEnd) SetReadDeadline(t time.Time) error  { return e.in.SetReadDeadline(t) }
func (e *pipeEnd) SetWriteDeadline(t time.Time) error { return e.out.SetWriteDeadline(t) }

var _ net.Conn = (*pipeEnd)(nil)

// pipeFactory makes pipes over one listener and records what went wrong
// inside them.
type pipeFactory struct {
	t          *testing.T
	l          *Listener
	clientCfg  *Config
	mu         sync.Mutex
	ends       []*pipeEnd
	statsCheck func(client, server Stats)
}

func newPipeFactory(t *testing.T, serverCfg, clientCfg *Config) *pipeFactory {
	t.Helper()
	l, err := Listen("127.0.0.1:0", softConfig(serverCfg))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return &pipeFactory{t: t, l: l, clientCfg: softConfig(clientCfg)}
}

// connect makes one RDMA connection: a requester and a responder Conn.
func (f *pipeFactory) connect() (req, resp *Conn, err error) {
	type result struct {
		c   *Conn
		err error
	}
	accepted := make(chan result, 1)
	go func() {
		c, err := f.l.AcceptRDMA()
		accepted <- result{c, err}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err = Dial(ctx, f.l.Addr().String(), f.clientCfg)
	r := <-accepted
	if err != nil || r.err != nil {
		if req != nil {
			_ = req.Close()
		}
		if r.c != nil {
			_ = r.c.Close()
		}
		return nil, nil, errors.Join(err, r.err)
	}
	return req, r.c, nil
}

// makePipe is a nettest.MakePipe.
func (f *pipeFactory) makePipe() (c1, c2 net.Conn, stop func(), err error) {
	req1, resp1, err := f.connect()
	if err != nil {
		return nil, nil, nil, err
	}
	req2, resp2, err := f.connect()
	if err != nil {
		_ = req1.Close()
		_ = resp1.Close()
		return nil, nil, nil, err
	}
	a := newPipeEnd(req1, resp2)
	b := newPipeEnd(req2, resp1)
	f.mu.Lock()
	f.ends = append(f.ends, a, b)
	f.mu.Unlock()
	stop = func() {
		a.shut()
		b.shut()
		if f.statsCheck != nil {
			f.statsCheck(req1.Stats(), resp1.Stats())
			f.statsCheck(req2.Stats(), resp2.Stats())
		}
	}
	return a, b, stop, nil
}

// check reports what went wrong inside the pipes made so far.
func (f *pipeFactory) check() {
	f.t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range f.ends {
		e.mu.Lock()
		if e.ackErr != nil {
			f.t.Error(e.ackErr)
		}
		e.mu.Unlock()
	}
}
