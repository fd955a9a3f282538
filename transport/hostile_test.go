package transport

// The hostile-peer suite of issue 5. A raw peer (hostile_peer_test.go)
// speaks the verbs provider directly and breaks RPC-over-RDMA version 1 on
// purpose; every case names the outcome our engine must produce and checks
// it, and every case also checks that nothing panicked, that every
// goroutine is gone after Close, and that the exchange allocated less than
// a bound (Go heap and registered memory) far below what the peer claimed.
//
// TestHostileRequester runs a raw requester against our responder (Listen
// and an RPC server loop); TestHostileResponder runs a raw responder
// against our requester (Dial).

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// ---------------------------------------------------------------------------
// A raw requester against our responder.

// hpServerCase is one hostile requester.
type hpServerCase struct {
	name string
	want string // the expected outcome, checked by run
	// pd is the private data the raw requester connects with; nil means
	// the Linux client's (R=1, 4096/4096), hpNoPD none at all.
	pd []byte
	// cfg configures our responder (its Provider is replaced).
	cfg Config
	// manual: no RPC server loop runs until the case starts one.
	manual bool
	// heap and reg override the allocation bounds.
	heap uint64
	reg  int64
	run  func(e *hpServerEnv)
}

// hpNoPD marks a peer that sends no private data.
var hpNoPD = []byte{}

// hpServerEnv is the world of one hostile-requester case.
type hpServerEnv struct {
	t      *testing.T
	srv    *Conn
	peer   *hpPeer
	served chan error // the RPC server loop's end, once started
	xid    uint32
}

func hpRunServer(t *testing.T, tc hpServerCase) {
	var e *hpServerEnv
	hpRun(t, tc.heap, tc.reg, func() *hpCountingProvider {
		prov := &hpCountingProvider{Provider: &soft.Provider{}}
		cfg := tc.cfg
		cfg.Provider = prov
		l, err := Listen("127.0.0.1:0", &cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = l.Close() })
		acc := make(chan *Conn, 1)
		go func() {
			c, _ := l.AcceptRDMA()
			acc <- c
		}()
		pd := tc.pd
		if pd == nil {
			pd = hpLinuxClientPD
		}
		peer := hpDial(t, l.Addr().String(), pd)
		t.Cleanup(func() { _ = peer.vc.Close() })
		var srv *Conn
		select {
		case srv = <-acc:
		case <-time.After(hpGuard):
		}
		if srv == nil {
			t.Fatal("our listener did not accept the raw requester")
		}
		e = &hpServerEnv{t: t, srv: srv, peer: peer, xid: 0x5000_0000}
		_ = srv.SetDeadline(time.Now().Add(hpGuard))
		t.Cleanup(func() {
			_ = srv.SetDeadline(time.Time{})
			_ = srv.Close()
			if e.served != nil {
				select {
				case <-e.served:
				case <-time.After(hpGuard):
					t.Error("the RPC server loop did not end after Close")
				}
			}
		})
		if !tc.manual {
			e.serve()
		}
		return prov
	}, func() { tc.run(e) })
}

// hpServe answers every call on c with its arguments echoed as results,
// until ReadMsg or WriteMsg fails.
func hpServe(c *Conn) error {
	var buf, out []byte
	for {
		var err error
		if buf, err = c.ReadMsg(buf); err != nil {
			return err
		}
		var h xdr.CallHeader
		args, err := h.Unmarshal(buf)
		if err != nil {
			return err
		}
		out = append((&xdr.ReplyHeader{XID: h.XID, Stat: xdr.MsgAccepted}).Append(out[:0]), buf[args:]...)
		if err := c.WriteMsg(out); err != nil {
			return err
		}
	}
}

// serve starts the RPC server loop.
func (e *hpServerEnv) serve() {
	e.served = make(chan error, 1)
	go func() { e.served <- hpServe(e.srv) }()
}

func (e *hpServerEnv) nextXID() uint32 { e.xid++; return e.xid }

// nullCall returns a valid inline NULL call.
func (e *hpServerEnv) nullCall(xid uint32) []byte {
	return hpMsg(xid, 32, hpRPCCall(xid, hpProcNull, nil))
}

// sendBad sends a hostile message after checking that our own parser
// rejects it for the reason the case is about (nil: the header parses,
// the engine must catch the problem).
func (e *hpServerEnv) sendBad(msg []byte, cause error) {
	e.t.Helper()
	_, err := new(chunks.Header).ParseCall(msg, nil)
	if cause == nil && err != nil || cause != nil && !errors.Is(err, cause) {
		e.t.Fatalf("ParseCall of the hostile message: %v, want %v", err, cause)
	}
	e.peer.sendMsg(msg)
}

// expectError requires the next message to be an RDMA_ERROR with code for
// xid, with a grant of at least 1 and, for ERR_VERS, versions 1..1.
func (e *hpServerEnv) expectError(xid uint32, code chunks.ErrorCode) *chunks.Header {
	e.t.Helper()
	h, rest := hpParse(e.t, e.peer.next())
	if h.Proc != chunks.ProcError || h.ErrCode != code || h.XID != xid || h.Vers != 1 || len(rest) != 0 {
		e.t.Fatalf("got %v %v xid %#x (vers %d, %d trailing bytes), want RDMA_ERROR %v for xid %#x",
			h.Proc, h.ErrCode, h.XID, h.Vers, len(rest), code, xid)
	}
	if code == chunks.CodeVers && (h.VersLow != 1 || h.VersHigh != 1) {
		e.t.Fatalf("ERR_VERS reports versions %d..%d, want 1..1", h.VersLow, h.VersHigh)
	}
	if h.Credits == 0 {
		e.t.Fatalf("RDMA_ERROR grants 0 credits")
	}
	return h
}

// expectReply requires the next message to be an RDMA_MSG reply for xid
// and returns its header and RPC reply.
func (e *hpServerEnv) expectReply(xid uint32) (*chunks.Header, []byte) {
	e.t.Helper()
	h, rpc := hpParse(e.t, e.peer.next())
	if h.Proc != chunks.ProcMsg || h.XID != xid {
		e.t.Fatalf("got %v %v for xid %#x, want an RDMA_MSG reply for xid %#x", h.Proc, h.ErrCode, h.XID, xid)
	}
	if rx, mt, err := xdr.PeekXID(rpc); err != nil || rx != xid || mt != xdr.MsgReply {
		e.t.Fatalf("reply's RPC message: xid %#x type %v err %v", rx, mt, err)
	}
	return h, rpc
}

// ping proves the connection is up and that nothing was sent since the
// last message checked: a NULL call's reply must be the next message.
func (e *hpServerEnv) ping() {
	e.t.Helper()
	if e.served == nil {
		e.serve()
	}
	xid := e.nextXID()
	e.peer.sendMsg(e.nullCall(xid))
	e.expectReply(xid)
}

// longPing is ping through a Long Call: its RDMA Read is posted after, and
// completes after, those of every earlier call, so its reply proves that
// they were all handled (an inline ping can overtake a call whose Read
// chunk is still being pulled).
func (e *hpServerEnv) longPing() {
	e.t.Helper()
	if e.served == nil {
		e.serve()
	}
	xid := e.nextXID()
	e.longCall(xid, hpRPCCall(xid, hpProcNull, nil), nil)
	e.expectReply(xid)
}

// serverErr waits for the RPC server loop to end and returns its error.
func (e *hpServerEnv) serverErr() error {
	e.t.Helper()
	select {
	case err := <-e.served:
		e.served = nil
		return err
	case <-time.After(hpGuard):
		e.t.Fatal("our responder stayed up")
	}
	return nil
}

// expectClosed requires the server loop to end with an error matching one
// of targets, and our responder to refuse further replies.
func (e *hpServerEnv) expectClosed(targets ...error) error {
	e.t.Helper()
	err := e.serverErr()
	if !errorIsAny(err, targets...) {
		e.t.Fatalf("server loop ended with %v, want one of %v", err, targets)
	}
	if werr := e.srv.WriteMsg(hpRPCReply(1, xdr.AcceptSuccess, nil)); werr == nil {
		e.t.Fatalf("WriteMsg succeeded on a dead connection")
	}
	return err
}

func (e *hpServerEnv) stats() Stats { return e.srv.Stats() }

// wantStat fails unless got == want.
func wantStat(t testing.TB, name string, got, want uint64) {
	t.Helper()
	if got != want {
		t.Errorf("Stats().%s = %d, want %d", name, got, want)
	}
}

// longCall sends rpc as a Long Call (RDMA_NOMSG, position-zero Read chunk
// in a window of the raw requester) with the given Reply chunk.
func (e *hpServerEnv) longCall(xid uint32, rpc []byte, reply []uint32) {
	e.t.Helper()
	rkey, addr := e.peer.expose(rpc, len(rpc))
	if reply == nil {
		reply = []uint32{0}
	}
	e.peer.sendMsg(hpWords(hpCat([]uint32{xid, 1, 32, uint32(chunks.ProcNoMsg), 1, 0},
		hpSeg(rkey, uint32(len(rpc)), addr), []uint32{0, 0}, reply)...))
}

// hpSegs returns the words of a counted chunk of n 64-byte segments of one
// window, starting at addr.
func hpSegs(n int, rkey uint32, addr uint64) []uint32 {
	ws := []uint32{uint32(n)}
	for i := range n {
		ws = append(ws, hpSeg(rkey, 64, addr+uint64(64*i))...)
	}
	return ws
}

// hpPD builds RFC 8797 private data: R bit, send and receive size codes.
func hpPD(r bool, send, recv byte) []byte {
	f := byte(0)
	if r {
		f = 1
	}
	return []byte{0xf6, 0xab, 0x0e, 0x18, 0x01, f, send, recv}
}

// expectFallback checks the RFC 8797 §5.1 fallback on our responder.
func (e *hpServerEnv) expectFallback(status string) {
	e.t.Helper()
	n := e.stats().Negotiated
	if n.PeerPrivateData != status || n.SendInline != 1024 || n.RecvInline != 1024 || n.PeerR || n.SendWithInvalidate {
		e.t.Fatalf("negotiated %+v, want peer private data %q, 1024/1024, R=0, no Send With Invalidate", n, status)
	}
}

var hpServerCases = []hpServerCase{
	{
		name: "control/well-behaved-long-call",
		want: "control: a Long Call with a Reply chunk is pulled by RDMA Read and answered through the Reply chunk " +
			"(RDMA_NOMSG); the call named two rkeys, so no Send With Invalidate",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			args := xdr.AppendOpaque(nil, hpPattern(5000, 3))
			rkey, addr := e.peer.expose(nil, 8192)
			rpc := hpRPCCall(xid, hpProcEcho, args)
			crkey, caddr := e.peer.expose(rpc, len(rpc))
			e.peer.sendMsg(hpWords(hpCat([]uint32{xid, 1, 32, uint32(chunks.ProcNoMsg), 1, 0},
				hpSeg(crkey, uint32(len(rpc)), caddr), []uint32{0, 0, 1, 1}, hpSeg(rkey, 8192, addr))...))
			h, _ := hpParse(e.t, e.peer.next())
			if h.Proc != chunks.ProcNoMsg || len(h.ReplyChunk) != 1 {
				e.t.Fatalf("reply %v with %d reply segments, want RDMA_NOMSG through the Reply chunk", h.Proc, len(h.ReplyChunk))
			}
			got := e.peer.memAt(addr, int(h.ReplyChunk[0].Length))
			if want := hpRPCReply(xid, xdr.AcceptSuccess, args); !bytes.Equal(got, want) {
				e.t.Fatalf("reply chunk holds %d bytes that differ from the reply", len(got))
			}
			if len(e.peer.invs) != 0 {
				e.t.Fatalf("invalidated %x; the call had two rkeys, so no Send With Invalidate", e.peer.invs)
			}
			e.ping()
		},
	},
	{
		name: "header/version-2",
		want: "RDMA_ERROR ERR_VERS (low = high = 1) for the call's XID; connection stays up; ErrVersSent = 1",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.sendBad(append(hpWords(xid, 2, 32, 0, 0, 0, 0), hpRPCCall(xid, 0, nil)...), chunks.ErrVersion)
			e.expectError(xid, chunks.CodeVers)
			e.ping()
			wantStat(e.t, "ErrVersSent", e.stats().ErrVersSent, 1)
		},
	},
	{
		name: "header/version-2-fixed-part-only",
		want: "a 16-byte header of version 2 still gets ERR_VERS (the version is checked before the body); connection up",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.sendBad(hpWords(xid, 2, 32, 0), chunks.ErrVersion)
			e.expectError(xid, chunks.CodeVers)
			e.ping()
		},
	},
	{
		name: "header/rdma-msgp",
		want: "RDMA_MSGP (retired by RFC 8166 §4.6.1): ERR_CHUNK; connection up; ErrChunkSent = 1",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.sendBad(hpWords(xid, 1, 32, uint32(chunks.ProcMsgp), 0, 0, 0, 0, 0), chunks.ErrMsgp)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
			wantStat(e.t, "ErrChunkSent", e.stats().ErrChunkSent, 1)
		},
	},
	{
		name: "header/rdma-done",
		want: "RDMA_DONE (retired): dropped silently; connection up; Dropped = 1",
		run: func(e *hpServerEnv) {
			e.sendBad(hpWords(e.nextXID(), 1, 32, uint32(chunks.ProcDone)), chunks.ErrDone)
			e.ping()
			wantStat(e.t, "Dropped", e.stats().Dropped, 1)
		},
	},
	{
		name: "header/rdma-error-from-requester",
		want: "an RDMA_ERROR sent to a responder: dropped silently; connection up; Dropped = 1",
		run: func(e *hpServerEnv) {
			e.sendBad(chunks.AppendErrChunk(nil, e.nextXID(), 5), chunks.ErrUnexpectedError)
			e.ping()
			wantStat(e.t, "Dropped", e.stats().Dropped, 1)
		},
	},
	{
		name: "header/unknown-proc",
		want: "rdma_proc 7: ERR_CHUNK; connection up",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.sendBad(hpWords(xid, 1, 32, 7, 0, 0, 0), chunks.ErrUnknownProc)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
		},
	},
	{
		name: "header/shorter-than-16-bytes",
		want: "a 12-byte header (no XID to answer): dropped silently; connection up; Dropped = 1",
		run: func(e *hpServerEnv) {
			e.sendBad(hpWords(e.nextXID(), 1, 32), chunks.ErrShortHeader)
			e.ping()
			wantStat(e.t, "Dropped", e.stats().Dropped, 1)
		},
	},
	{
		name: "header/empty-send",
		want: "a zero-length Send: dropped silently; connection up; Dropped = 1",
		run: func(e *hpServerEnv) {
			e.sendBad(nil, chunks.ErrShortHeader)
			e.ping()
			wantStat(e.t, "Dropped", e.stats().Dropped, 1)
		},
	},
	{
		name: "header/segment-count-beyond-received-bytes",
		want: "lies about lengths: a Read segment cut off by the end of the Send: ERR_CHUNK; connection up",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.sendBad(hpWords(xid, 1, 32, 0, 1, 0, 0x1234), chunks.ErrTruncated)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
		},
	},
	{
		name: "header/bad-discriminator",
		want: "a chunk-list discriminator of 7: ERR_CHUNK; connection up",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.sendBad(append(hpWords(xid, 1, 32, 0, 0, 7, 0), hpRPCCall(xid, 0, nil)...), chunks.ErrBadDiscriminator)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
		},
	},
	{
		name: "header/2^32-write-segments-claimed",
		want: "a Write chunk claiming 2^32-1 segments: ERR_CHUNK, nothing allocated for the claim; connection up",
		heap: 1 << 20,
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.sendBad(hpWords(xid, 1, 32, 0, 0, 1, 0xffffffff, 1, 2, 3, 4), chunks.ErrTooManySegments)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
		},
	},
	{
		name: "header/2^32-reply-segments-claimed",
		want: "a Reply chunk claiming 2^32-1 segments: ERR_CHUNK, nothing allocated for the claim; connection up",
		heap: 1 << 20,
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.sendBad(hpWords(xid, 1, 32, 0, 0, 0, 1, 0xffffffff, 1, 2, 3, 4), chunks.ErrTooManySegments)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
		},
	},
	{
		name: "read/position-not-multiple-of-4",
		want: "Read chunk at position 6: ERR_CHUNK, no RDMA Read issued; connection up",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			rkey, addr := e.peer.expose(hpPattern(8, 1), 8)
			e.sendBad(append(hpWords(hpCat([]uint32{xid, 1, 32, 0, 1, 6}, hpSeg(rkey, 8, addr), []uint32{0, 0, 0})...),
				hpRPCCall(xid, 0, nil)...), chunks.ErrPositionAlign)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
			wantStat(e.t, "RDMAReadBytes", e.stats().RDMAReadBytes, 0)
		},
	},
	{
		name: "read/position-beyond-message",
		want: "Read chunk at position 400 of a 40-byte message: ERR_CHUNK, no RDMA Read; connection up",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			rkey, addr := e.peer.expose(hpPattern(8, 1), 8)
			e.sendBad(append(hpWords(hpCat([]uint32{xid, 1, 32, 0, 1, 400}, hpSeg(rkey, 8, addr), []uint32{0, 0, 0})...),
				hpRPCCall(xid, 0, nil)...), chunks.ErrPositionBeyondMessage)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
			wantStat(e.t, "RDMAReadBytes", e.stats().RDMAReadBytes, 0)
		},
	},
	{
		name: "read/overlapping-chunks",
		want: "Read chunks at positions 40 (100 bytes) and 44: ERR_CHUNK, no RDMA Read; connection up",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			rkey, addr := e.peer.expose(hpPattern(100, 1), 100)
			e.sendBad(append(hpWords(hpCat([]uint32{xid, 1, 32, 0, 1, 40}, hpSeg(rkey, 100, addr),
				[]uint32{1, 44}, hpSeg(rkey, 8, addr), []uint32{0, 0, 0})...),
				hpRPCCall(xid, 0, nil)...), chunks.ErrReadChunkOverlap)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
			wantStat(e.t, "RDMAReadBytes", e.stats().RDMAReadBytes, 0)
		},
	},
	{
		name: "read/chunk-longer-than-limit",
		want: "a Read chunk of 4 GiB - 1 (over Limits.MaxChunkLength): ERR_CHUNK, no RDMA Read, nothing registered; connection up",
		reg:  -1,
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			rkey, addr := e.peer.expose(hpPattern(8, 1), 8)
			e.sendBad(append(hpWords(hpCat([]uint32{xid, 1, 32, 0, 1, 40}, hpSeg(rkey, 0xffffffff, addr), []uint32{0, 0, 0})...),
				hpRPCCall(xid, 0, nil)...), chunks.ErrChunkTooLong)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
			wantStat(e.t, "RDMAReadBytes", e.stats().RDMAReadBytes, 0)
		},
	},
	{
		name: "read/chunks-beyond-max-rpc-size",
		want: "Read chunks adding up to 2 MiB (within the chunk limit, over MaxRPCSize): ERR_CHUNK, no RDMA Read, nothing registered; connection up",
		reg:  -1,
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			rkey, addr := e.peer.expose(hpPattern(8, 1), 8)
			e.sendBad(append(hpWords(hpCat([]uint32{xid, 1, 32, 0}, []uint32{1, 40}, hpSeg(rkey, 2<<20, addr), []uint32{0, 0, 0})...),
				hpRPCCall(xid, 0, nil)...), nil)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
			wantStat(e.t, "RDMAReadBytes", e.stats().RDMAReadBytes, 0)
		},
	},
	{
		name: "read/nomsg-without-position-zero-chunk",
		want: "RDMA_NOMSG call with no position-zero Read chunk (no RPC message at all): ERR_CHUNK; connection up",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.sendBad(hpWords(xid, 1, 32, uint32(chunks.ProcNoMsg), 0, 0, 0), chunks.ErrNoMsgNoCallChunk)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
		},
	},
	{
		name: "read/position-zero-chunk-in-rdma-msg",
		want: "RDMA_MSG with a position-zero Read chunk: ERR_CHUNK; connection up",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			rkey, addr := e.peer.expose(hpPattern(40, 1), 40)
			e.sendBad(append(hpWords(hpCat([]uint32{xid, 1, 32, 0, 1, 0}, hpSeg(rkey, 40, addr), []uint32{0, 0, 0})...),
				hpRPCCall(xid, 0, nil)...), chunks.ErrPositionZeroInMsg)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
		},
	},
	{
		name: "read/fragmented-chunks-many-calls",
		want: "12 Long Calls sent back to back, each Read chunk in 150 segments of 4 bytes (1800 RDMA Reads, more than " +
			"our send queue holds): the Reads are posted in rounds as the queue drains; every call is answered, connection up",
		heap: 2 << 20,
		reg:  2 << 20,
		run: func(e *hpServerEnv) {
			var xids []uint32
			var msgs [][]byte
			for range 12 {
				xid := e.nextXID()
				xids = append(xids, xid)
				rpc := hpRPCCall(xid, hpProcEcho, xdr.AppendOpaque(nil, hpPattern(556, byte(xid))))
				rkey, addr := e.peer.expose(rpc, len(rpc))
				ws := []uint32{xid, 1, 32, uint32(chunks.ProcNoMsg)}
				for i := 0; i < len(rpc); i += 4 {
					ws = append(ws, 1, 0)
					ws = append(ws, hpSeg(rkey, 4, addr+uint64(i))...)
				}
				msgs = append(msgs, hpWords(append(ws, 0, 0, 0)...))
			}
			for _, m := range msgs {
				e.peer.sendAsync(m, verbs.OpSend, 0)
			}
			for _, xid := range xids {
				_, rpc := e.expectReply(xid)
				if want := hpRPCReply(xid, xdr.AcceptSuccess, xdr.AppendOpaque(nil, hpPattern(556, byte(xid)))); !bytes.Equal(rpc, want) {
					e.t.Fatalf("reply to %#x differs", xid)
				}
			}
			wantStat(e.t, "RDMAReadBytes", e.stats().RDMAReadBytes, 12*600)
			e.ping()
		},
	},
	{
		name: "read/empty-long-call",
		want: "RDMA_NOMSG whose position-zero Read chunk is 0 bytes long (no RPC message): dropped, never delivered; connection up; Dropped = 1",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			rkey, addr := e.peer.expose(nil, 64)
			e.sendBad(hpWords(hpCat([]uint32{xid, 1, 32, uint32(chunks.ProcNoMsg), 1, 0}, hpSeg(rkey, 0, addr), []uint32{0, 0, 0})...), nil)
			e.longPing()
			wantStat(e.t, "Dropped", e.stats().Dropped, 1)
		},
	},
	{
		name: "read/invalid-rkey",
		want: "a Read chunk naming an rkey the peer never bound: our RDMA Read fails (remote access), the connection " +
			"closes cleanly and the server's ReadMsg returns an error wrapping verbs.ErrRemoteAccess",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			rpc := hpRPCCall(xid, hpProcNull, nil)
			e.peer.sendMsg(hpWords(hpCat([]uint32{xid, 1, 32, uint32(chunks.ProcNoMsg), 1, 0},
				hpSeg(0xbad00, uint32(len(rpc)), 0x1000), []uint32{0, 0, 0})...))
			e.expectClosed(verbs.ErrRemoteAccess)
			e.peer.waitDown()
		},
	},
	{
		name: "read/outside-the-peers-window",
		want: "points a Read chunk past the end of its window: our RDMA Read fails (remote access), the connection " +
			"closes cleanly, ReadMsg returns an error wrapping verbs.ErrRemoteAccess",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			rpc := hpRPCCall(xid, hpProcNull, nil)
			rkey, addr := e.peer.expose(rpc, len(rpc))
			e.peer.sendMsg(hpWords(hpCat([]uint32{xid, 1, 32, uint32(chunks.ProcNoMsg), 1, 0},
				hpSeg(rkey, uint32(len(rpc)), addr+64), []uint32{0, 0, 0})...))
			e.expectClosed(verbs.ErrRemoteAccess)
		},
	},
	{
		name: "read/longer-than-the-peers-window",
		want: "lies about a Read chunk's length (longer than its window): our RDMA Read fails, the connection closes, " +
			"ReadMsg returns an error wrapping verbs.ErrRemoteAccess",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			rpc := hpRPCCall(xid, hpProcNull, nil)
			rkey, addr := e.peer.expose(rpc, len(rpc))
			e.peer.sendMsg(hpWords(hpCat([]uint32{xid, 1, 32, uint32(chunks.ProcNoMsg), 1, 0},
				hpSeg(rkey, 4096, addr), []uint32{0, 0, 0})...))
			e.expectClosed(verbs.ErrRemoteAccess)
		},
	},
	{
		name: "rpc/inline-xid-differs-from-rdma-xid",
		want: "RDMA_MSG whose RPC XID differs from rdma_xid: ERR_CHUNK; connection up",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.sendBad(hpMsg(xid, 32, hpRPCCall(xid+100, hpProcNull, nil)), chunks.ErrXIDMismatch)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
		},
	},
	{
		name: "rpc/long-call-xid-differs-from-rdma-xid",
		want: "a Long Call whose RPC XID (in the Read chunk) differs from rdma_xid: dropped, never delivered; connection up; Dropped = 1",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.longCall(xid, hpRPCCall(xid+100, hpProcNull, nil), nil)
			e.longPing()
			wantStat(e.t, "Dropped", e.stats().Dropped, 1)
		},
	},
	{
		name: "rpc/not-a-call",
		want: "an inline message that is an RPC reply, not a call: dropped, never delivered; connection up; Dropped = 1",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.sendBad(hpMsg(xid, 32, hpRPCReply(xid, xdr.AcceptSuccess, nil)), nil)
			e.ping()
			wantStat(e.t, "Dropped", e.stats().Dropped, 1)
		},
	},
	{
		name:   "rpc/duplicate-xid-in-flight",
		want:   "a second call with the XID of a call not yet answered: dropped; the server sees the first call, then the next one; exactly one reply per call goes out; Dropped = 1",
		manual: true,
		run: func(e *hpServerEnv) {
			x, y := e.nextXID(), e.nextXID()
			e.peer.sendMsg(e.nullCall(x))
			e.peer.sendMsg(e.nullCall(x))
			e.peer.sendMsg(e.nullCall(y))
			for _, want := range []uint32{x, y} {
				msg, err := e.srv.ReadMsg(nil)
				if err != nil {
					e.t.Fatal(err)
				}
				if got, _, _ := xdr.PeekXID(msg); got != want {
					e.t.Fatalf("the server read xid %#x, want %#x", got, want)
				}
			}
			for _, xid := range []uint32{x, y} {
				if err := e.srv.WriteMsg(hpRPCReply(xid, xdr.AcceptSuccess, nil)); err != nil {
					e.t.Fatal(err)
				}
				e.expectReply(xid)
			}
			e.ping() // the duplicate got no reply of its own
			wantStat(e.t, "Dropped", e.stats().Dropped, 1)
		},
	},
	{
		name: "reply/no-room-for-reply",
		want: "a call whose reply exceeds the peer's receive size (1024) and that offers no Reply chunk: ERR_CHUNK; connection up",
		pd:   hpPD(true, 3, 0),
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.peer.sendMsg(hpMsg(xid, 32, hpRPCCall(xid, hpProcEcho, hpPattern(2000, 1))))
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
			wantStat(e.t, "ErrChunkSent", e.stats().ErrChunkSent, 1)
		},
	},
	{
		name: "reply/reply-chunk-too-small",
		want: "a Reply chunk of 64 bytes for a 2 KiB reply: ERR_CHUNK, and not one byte written into the peer's memory; connection up",
		pd:   hpPD(true, 3, 0),
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			sentinel := bytes.Repeat([]byte{0xa5}, 64)
			rkey, addr := e.peer.expose(sentinel, 64)
			e.peer.sendMsg(append(hpWords(hpCat([]uint32{xid, 1, 32, 0, 0, 0, 1, 1}, hpSeg(rkey, 64, addr))...),
				hpRPCCall(xid, hpProcEcho, hpPattern(2000, 1))...))
			e.expectError(xid, chunks.CodeChunk)
			if !bytes.Equal(e.peer.memAt(addr, 64), sentinel) {
				e.t.Fatal("the peer's Reply chunk memory was written")
			}
			e.ping()
			wantStat(e.t, "RDMAWriteBytes", e.stats().RDMAWriteBytes, 0)
		},
	},
	{
		name: "reply/header-echo-exceeds-peer-inline",
		want: "a peer with a 1024-byte receive size offering a Write chunk and a Reply chunk of 100 segments each: the reply's " +
			"header alone (3.2 KB) would exceed 1024, so ERR_CHUNK, nothing written; connection up",
		pd: hpPD(true, 3, 0),
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			sentinel := bytes.Repeat([]byte{0x5a}, 64*200)
			rkey, addr := e.peer.expose(sentinel, len(sentinel))
			ws := hpCat([]uint32{xid, 1, 32, 0, 0, 1}, hpSegs(100, rkey, addr), []uint32{0, 1}, hpSegs(100, rkey, addr+6400))
			e.sendBad(append(hpWords(ws...), hpRPCCall(xid, hpProcNull, nil)...), nil)
			e.expectError(xid, chunks.CodeChunk)
			if !bytes.Equal(e.peer.memAt(addr, len(sentinel)), sentinel) {
				e.t.Fatal("the peer's chunk memory was written")
			}
			e.ping()
		},
	},
	{
		name: "reply/more-segments-than-one-reply-can-serve",
		want: "with 16 KiB inline thresholds, a call offering 260 Write and 260 Reply chunk segments (more RDMA Writes than " +
			"our send queue can hold for one reply): ERR_CHUNK at once, no reply left hanging; connection up",
		pd:  hpPD(true, 15, 15),
		cfg: Config{InlineSend: 16384, InlineRecv: 16384},
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			rkey, addr := e.peer.expose(nil, 64*520)
			ws := hpCat([]uint32{xid, 1, 32, 0, 0, 1}, hpSegs(260, rkey, addr), []uint32{0, 1}, hpSegs(260, rkey, addr+64*260))
			e.sendBad(append(hpWords(ws...), hpRPCCall(xid, hpProcNull, nil)...), nil)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
		},
	},
	{
		name: "reply/huge-chunks-offered",
		want: "lies about lengths: a Write chunk and a Reply chunk of 4 MiB each over a 64-byte window, for a NULL call: " +
			"the reply goes inline, nothing written, nothing registered for the offer; connection up",
		reg: -1,
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			rkey, addr := e.peer.expose(nil, 64)
			e.sendBad(append(hpWords(hpCat([]uint32{xid, 1, 32, 0, 0, 1, 1}, hpSeg(rkey, 4<<20, addr), []uint32{0, 1, 1},
				hpSeg(rkey, 4<<20, addr))...), hpRPCCall(xid, hpProcNull, nil)...), nil)
			if h, _ := e.expectReply(xid); len(h.WriteList) != 1 || h.WriteList[0].Length() != 0 || h.ReplyChunk.Length() != 0 {
				e.t.Fatalf("reply reports %d/%d bytes written", h.WriteList[0].Length(), h.ReplyChunk.Length())
			}
			e.ping()
			wantStat(e.t, "RDMAWriteBytes", e.stats().RDMAWriteBytes, 0)
		},
	},
	{
		name:   "credits/more-calls-than-granted",
		want:   "a requester sending 5 calls on a grant of 4 (no reply yet): the 5th Send finds no Receive and fails with RNR at the peer, the connection closes cleanly; the 4 granted calls are still delivered, then ReadMsg returns io.EOF",
		cfg:    Config{Credits: 4},
		manual: true,
		run: func(e *hpServerEnv) {
			var ids []uint64
			for range 5 {
				xid := e.nextXID()
				ids = append(ids, e.peer.sendAsync(e.nullCall(xid), verbs.OpSend, 0))
			}
			for i, id := range ids {
				want := verbs.StatusSuccess
				if i == 4 {
					want = verbs.StatusRNR
				}
				if c := e.peer.wait(id); c.Status != want {
					e.t.Fatalf("Send %d: %v, want %v", i+1, c.Status, want)
				}
			}
			for i := range 4 {
				msg, err := e.srv.ReadMsg(nil)
				if err != nil {
					e.t.Fatalf("call %d: %v", i+1, err)
				}
				if xid, _, _ := xdr.PeekXID(msg); xid != 0x5000_0001+uint32(i) {
					e.t.Fatalf("call %d has xid %#x", i+1, xid)
				}
			}
			if _, err := e.srv.ReadMsg(nil); !errors.Is(err, io.EOF) {
				e.t.Fatalf("ReadMsg after the granted calls: %v, want io.EOF", err)
			}
		},
	},
	{
		name: "credits/request-2^32-1",
		want: "a call asking for 2^32-1 credits is granted our maximum (8), no more; connection up",
		cfg:  Config{Credits: 8},
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.peer.sendMsg(hpMsg(xid, 0xffffffff, hpRPCCall(xid, hpProcNull, nil)))
			if h, _ := e.expectReply(xid); h.Credits != 8 {
				e.t.Fatalf("granted %d, want 8", h.Credits)
			}
			e.ping()
		},
	},
	{
		name: "credits/request-0",
		want: "a call asking for 0 credits still gets a grant ≥ 1 (our maximum, 8); connection up",
		cfg:  Config{Credits: 8},
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.peer.sendMsg(hpMsg(xid, 0, hpRPCCall(xid, hpProcNull, nil)))
			if h, _ := e.expectReply(xid); h.Credits != 8 {
				e.t.Fatalf("granted %d, want 8", h.Credits)
			}
			e.ping()
		},
	},
	{
		name: "invalidate/send-with-invalidate-unknown-rkey",
		want: "a requester's Send With Invalidate naming an rkey we never issued: our Receive fails (remote invalid " +
			"request), the connection closes; ReadMsg returns an error wrapping verbs.ErrRemoteInvalidRequest",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.peer.sendInv(e.nullCall(xid), 0x00bad0ff)
			e.expectClosed(verbs.ErrRemoteInvalidRequest)
		},
	},
	{
		name: "overflow/send-larger-than-receive",
		want: "a 5000-byte Send into our 4096-byte Receive: the peer's Send fails (remote invalid request), our " +
			"Receive fails (length), the connection closes; ReadMsg returns an error wrapping verbs.ErrLength",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			msg := hpMsg(xid, 32, hpRPCCall(xid, hpProcEcho, xdr.AppendOpaque(nil, hpPattern(4900, 1))))
			if c := e.peer.wait(e.peer.sendAsync(msg, verbs.OpSend, 0)); c.Status != verbs.StatusRemoteInvalidRequest {
				e.t.Fatalf("the peer's Send: %v, want %v", c.Status, verbs.StatusRemoteInvalidRequest)
			}
			e.expectClosed(verbs.ErrLength)
		},
	},
	{
		name: "connect/56-bytes-of-garbage-private-data",
		want: "accepted; RFC 8797 §5.1 fallback: peer private data \"not-found\", 1024/1024, R=0, no Send With Invalidate; calls answered",
		pd:   hpGarbage(56, 0x5a),
		run: func(e *hpServerEnv) {
			e.expectFallback("not-found")
			e.ping()
		},
	},
	{
		name: "connect/truncated-private-data",
		want: "format identifier in the last 4 of the 56 bytes: \"truncated\"; fallback to 1024/1024, R=0; calls answered",
		pd:   append(make([]byte, 52), 0xf6, 0xab, 0x0e, 0x18),
		run: func(e *hpServerEnv) {
			e.expectFallback("truncated")
			e.ping()
		},
	},
	{
		name: "connect/version-2-private-data",
		want: "RFC 8797 message of version 2: \"bad-version\"; fallback to 1024/1024, R=0; calls answered",
		pd:   []byte{0xf6, 0xab, 0x0e, 0x18, 0x02, 0x01, 0x03, 0x03},
		run: func(e *hpServerEnv) {
			e.expectFallback("bad-version")
			e.ping()
		},
	},
	{
		name: "connect/no-private-data",
		want: "no private data (56 zero bytes as the CM delivers it): \"empty\"; fallback to 1024/1024, R=0; calls answered",
		pd:   hpNoPD,
		run: func(e *hpServerEnv) {
			e.expectFallback("empty")
			e.ping()
		},
	},
	{
		name:   "disconnect/right-after-connect",
		want:   "the peer disconnects before sending anything: ReadMsg returns io.EOF; no goroutine left",
		manual: true,
		run: func(e *hpServerEnv) {
			_ = e.peer.vc.Close()
			if _, err := e.srv.ReadMsg(nil); !errors.Is(err, io.EOF) {
				e.t.Fatalf("ReadMsg: %v, want io.EOF", err)
			}
		},
	},
	{
		name:   "disconnect/after-call-delivered",
		want:   "the peer disconnects once its call was delivered: the call stays readable, then ReadMsg returns io.EOF and the reply's WriteMsg fails",
		manual: true,
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.peer.sendMsg(e.nullCall(xid))
			if _, err := e.srv.ReadMsg(nil); err != nil {
				e.t.Fatal(err)
			}
			_ = e.peer.vc.Close()
			if _, err := e.srv.ReadMsg(nil); !errors.Is(err, io.EOF) {
				e.t.Fatalf("ReadMsg after the disconnect: %v, want io.EOF", err)
			}
			if err := e.srv.WriteMsg(hpRPCReply(xid, xdr.AcceptSuccess, nil)); err == nil {
				e.t.Fatal("the reply's WriteMsg succeeded after the disconnect")
			}
		},
	},
	{
		name:   "disconnect/while-call-queued",
		want:   "the peer sends a call and disconnects before the server reads: the call is still delivered, then io.EOF; no goroutine left",
		manual: true,
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.peer.sendMsg(e.nullCall(xid))
			_ = e.peer.vc.Close()
			msg, err := e.srv.ReadMsg(nil)
			if err != nil {
				e.t.Fatalf("the queued call: %v", err)
			}
			if got, _, _ := xdr.PeekXID(msg); got != xid {
				e.t.Fatalf("queued call has xid %#x", got)
			}
			if _, err := e.srv.ReadMsg(nil); !errors.Is(err, io.EOF) {
				e.t.Fatalf("ReadMsg: %v, want io.EOF", err)
			}
		},
	},
}

func TestHostileRequester(t *testing.T) {
	for _, tc := range hpServerCases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Log(hpDescribe(tc.name, tc.want))
				}
			}()
			hpRunServer(t, tc)
		})
	}
}

// ---------------------------------------------------------------------------
// A raw responder against our requester.

// hpClientCase is one hostile responder.
type hpClientCase struct {
	name string
	want string
	// pd is the private data the raw responder accepts with; nil means
	// knfsd's (R=0, 4096/4096), hpNoPD none.
	pd []byte
	// cfg configures our requester (Provider replaced; Binding defaults
	// to hpBinding, Credits to 8).
	cfg  Config
	heap uint64
	reg  int64
	run  func(e *hpClientEnv)
}

// hpClientEnv is the world of one hostile-responder case.
type hpClientEnv struct {
	t     *testing.T
	cli   *Conn
	peer  *hpPeer
	ourPD []byte // the private data of our connect request, as delivered
	xid   uint32
}

func hpRunClient(t *testing.T, tc hpClientCase) {
	var e *hpClientEnv
	hpRun(t, tc.heap, tc.reg, func() *hpCountingProvider {
		vl, err := (&soft.Provider{}).Listen("127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = vl.Close() })
		pd := tc.pd
		if pd == nil {
			pd = hpLinuxServerPD
		}
		acc := hpAccept(t, vl, pd)
		prov := &hpCountingProvider{Provider: &soft.Provider{}}
		cfg := tc.cfg
		cfg.Provider = prov
		if cfg.Binding == nil {
			cfg.Binding = hpBinding{}
		}
		if cfg.Credits == 0 {
			cfg.Credits = 8
		}
		ctx, cancel := context.WithTimeout(context.Background(), hpGuard)
		defer cancel()
		cli, err := Dial(ctx, vl.Addr().String(), &cfg)
		if err != nil {
			t.Fatal(err)
		}
		_ = cli.SetDeadline(time.Now().Add(hpGuard))
		t.Cleanup(func() {
			_ = cli.SetDeadline(time.Time{})
			_ = cli.Close()
		})
		var a hpAccepted
		select {
		case a = <-acc:
		case <-time.After(hpGuard):
			t.Fatal("the raw responder did not accept")
		}
		if a.err != nil {
			t.Fatal(a.err)
		}
		t.Cleanup(func() { _ = a.peer.vc.Close() })
		e = &hpClientEnv{t: t, cli: cli, peer: a.peer, ourPD: a.pd, xid: 0x7000_0000}
		return prov
	}, func() { tc.run(e) })
}

// hpCall is a call of our requester as the raw responder received it.
type hpCall struct {
	xid uint32
	h   *chunks.Header
	rpc []byte // the inline RPC message (RDMA_MSG)
}

// call sends an RPC call through our requester and returns it as the raw
// responder received it.
func (e *hpClientEnv) call(proc uint32, args []byte) *hpCall {
	e.t.Helper()
	e.xid++
	if err := e.cli.WriteMsg(hpRPCCall(e.xid, proc, args)); err != nil {
		e.t.Fatalf("WriteMsg: %v", err)
	}
	return e.recvCall()
}

func (e *hpClientEnv) recvCall() *hpCall {
	e.t.Helper()
	m := e.peer.next()
	h := new(chunks.Header)
	n, err := h.ParseCall(m, nil)
	if err != nil {
		e.t.Fatalf("our requester sent an invalid call: %v", err)
	}
	return &hpCall{xid: h.XID, h: h, rpc: m[n:]}
}

// replyOK answers c inline with an empty successful result, granting
// credits.
func (e *hpClientEnv) replyOK(c *hpCall, credits uint32) {
	e.t.Helper()
	e.peer.sendMsg(hpMsg(c.xid, credits, hpRPCReply(c.xid, xdr.AcceptSuccess, nil)))
}

// read reads the next reply of our requester.
func (e *hpClientEnv) read() ([]byte, error) {
	e.t.Helper()
	return e.cli.ReadMsg(nil)
}

// expectReply requires the next reply to be for xid with stat and no
// error, and returns its results.
func (e *hpClientEnv) expectReply(xid uint32, stat xdr.AcceptStat) []byte {
	e.t.Helper()
	msg, err := e.read()
	if err != nil {
		e.t.Fatalf("ReadMsg: %v", err)
	}
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(msg)
	if err != nil || rh.XID != xid || rh.Stat != xdr.MsgAccepted || rh.AcceptStat != stat {
		e.t.Fatalf("reply %+v (%v), want xid %#x accept_stat %v", rh, err, xid, stat)
	}
	return msg[off:]
}

// expectFailed requires the call xid to fail with our synthesized
// SYSTEM_ERR reply and no *RemoteError.
func (e *hpClientEnv) expectFailed(xid uint32) {
	e.t.Helper()
	e.expectReply(xid, xdr.AcceptSystemErr)
}

// warmup completes one call whose reply grants credits, so that several
// calls can be in flight.
func (e *hpClientEnv) warmup(credits uint32) {
	e.t.Helper()
	c := e.call(hpProcNull, nil)
	e.replyOK(c, credits)
	e.expectReply(c.xid, xdr.AcceptSuccess)
}

// ping proves the connection still carries calls.
func (e *hpClientEnv) ping() {
	e.t.Helper()
	c := e.call(hpProcNull, nil)
	e.replyOK(c, 8)
	e.expectReply(c.xid, xdr.AcceptSuccess)
}

// expectDead requires ReadMsg to fail with an error matching one of
// targets, and WriteMsg to fail too.
func (e *hpClientEnv) expectDead(targets ...error) {
	e.t.Helper()
	_, err := e.read()
	if !errorIsAny(err, targets...) {
		e.t.Fatalf("ReadMsg: %v, want one of %v", err, targets)
	}
	if werr := e.cli.WriteMsg(hpRPCCall(0x7fff_0000, hpProcNull, nil)); werr == nil {
		e.t.Fatal("WriteMsg succeeded on a dead connection")
	}
}

func (e *hpClientEnv) stats() Stats { return e.cli.Stats() }

// writeSeg returns the single segment of c's Write chunk.
func (e *hpClientEnv) writeSeg(c *hpCall) chunks.Segment {
	e.t.Helper()
	if len(c.h.WriteList) != 1 || len(c.h.WriteList[0]) != 1 {
		e.t.Fatalf("call offers %d Write chunks, want one of one segment", len(c.h.WriteList))
	}
	return c.h.WriteList[0][0]
}

// replySeg returns the single segment of c's Reply chunk.
func (e *hpClientEnv) replySeg(c *hpCall) chunks.Segment {
	e.t.Helper()
	if len(c.h.ReplyChunk) != 1 {
		e.t.Fatalf("call offers a Reply chunk of %d segments, want 1", len(c.h.ReplyChunk))
	}
	return c.h.ReplyChunk[0]
}

// readReply answers an hpProcRead call c properly: the data by RDMA Write
// into its Write chunk, then RDMA_MSG with the written length and the
// reduced reply.
func (e *hpClientEnv) readReply(c *hpCall, data []byte, op verbs.Opcode, inv uint32) {
	e.t.Helper()
	s := e.writeSeg(c)
	if wc := e.peer.rdmaWrite(s.Handle, s.Offset, data); wc.Status != verbs.StatusSuccess {
		e.t.Fatalf("RDMA Write into the Write chunk: %v", wc.Status)
	}
	msg := append(hpWords(hpCat([]uint32{c.xid, 1, 8, 0, 0, 1, 1}, hpSeg(s.Handle, uint32(len(data)), s.Offset), []uint32{0, 0})...),
		hpRPCReply(c.xid, xdr.AcceptSuccess, hpWords(uint32(len(data))))...)
	if op == verbs.OpSendWithInvalidate {
		e.peer.sendInv(msg, inv)
	} else {
		e.peer.sendMsg(msg)
	}
}

// expectNegotiated checks our requester's view of the raw responder's
// private data and the fallback thresholds, and that our own offer went out
// at offset 0 of the connect request.
func (e *hpClientEnv) expectNegotiated(status string, inline int) {
	e.t.Helper()
	n := e.stats().Negotiated
	if n.PeerPrivateData != status || n.SendInline != inline || n.RecvInline != inline || n.PeerR {
		e.t.Fatalf("negotiated %+v, want peer private data %q, %d/%d, peer R=0", n, status, inline, inline)
	}
	if !bytes.Equal(e.ourPD[:8], hpLinuxClientPD) || len(e.ourPD) != 56 {
		e.t.Fatalf("our connect request carried %x, want the Linux client's offer at offset 0", e.ourPD)
	}
}

// expectLongCallAtFallback sends a 2000-byte call, which must go as a Long
// Call at the 1024-byte fallback threshold, reads it through its
// position-zero Read chunk and answers it.
func (e *hpClientEnv) expectLongCallAtFallback() {
	e.t.Helper()
	args := xdr.AppendOpaque(nil, hpPattern(2000, 9))
	c := e.call(hpProcEcho, args)
	if c.h.Proc != chunks.ProcNoMsg || len(c.h.ReadList) != 1 || c.h.ReadList[0].Position != 0 {
		e.t.Fatalf("a 2 KiB call at a 1 KiB threshold went as %v with %d Read segments, want a Long Call", c.h.Proc, len(c.h.ReadList))
	}
	rs := c.h.ReadList[0]
	wc, got := e.peer.rdmaRead(rs.Handle, rs.Offset, int(rs.Length))
	if want := hpRPCCall(c.xid, hpProcEcho, args); wc.Status != verbs.StatusSuccess || !bytes.Equal(got, want) {
		e.t.Fatalf("RDMA Read of the Long Call: %v, %d bytes that differ", wc.Status, len(got))
	}
	e.replyOK(c, 8)
	e.expectReply(c.xid, xdr.AcceptSuccess)
}

var hpClientCases = []hpClientCase{
	{
		name: "control/well-behaved-responder",
		want: "a READ answered through its Write chunk with Send With Invalidate of the call's rkey, and a reply through " +
			"the Reply chunk: both complete; RemoteInvalidations = 1, LocalInvalidations = 1",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(8192))
			data := hpPattern(8192, 4)
			e.readReply(c, data, verbs.OpSendWithInvalidate, e.writeSeg(c).Handle)
			if got := e.expectReply(c.xid, xdr.AcceptSuccess); !bytes.Equal(got, xdr.AppendOpaque(nil, data)) {
				e.t.Fatal("the READ result differs from the data written")
			}
			c = e.call(hpProcBig, nil)
			s := e.replySeg(c)
			reply := hpRPCReply(c.xid, xdr.AcceptSuccess, hpPattern(20000, 5))
			if wc := e.peer.rdmaWrite(s.Handle, s.Offset, reply); wc.Status != verbs.StatusSuccess {
				e.t.Fatalf("RDMA Write into the Reply chunk: %v", wc.Status)
			}
			e.peer.sendMsg(hpWords(hpCat([]uint32{c.xid, 1, 8, uint32(chunks.ProcNoMsg), 0, 0, 1, 1},
				hpSeg(s.Handle, uint32(len(reply)), s.Offset))...))
			if got := e.expectReply(c.xid, xdr.AcceptSuccess); !bytes.Equal(got, hpPattern(20000, 5)) {
				e.t.Fatal("the long reply differs")
			}
			st := e.stats()
			wantStat(e.t, "RemoteInvalidations", st.RemoteInvalidations, 1)
			wantStat(e.t, "LocalInvalidations", st.LocalInvalidations, 1)
		},
	},
	{
		name: "xid/unknown",
		want: "a reply with an XID matching no call: dropped, BadXIDs = 1; the call still completes with its real reply",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpMsg(0xdead, 8, hpRPCReply(0xdead, xdr.AcceptSuccess, nil)))
			e.replyOK(c, 8)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			wantStat(e.t, "BadXIDs", e.stats().BadXIDs, 1)
		},
	},
	{
		name: "xid/rpc-xid-differs-from-rdma-xid",
		want: "a reply whose RPC XID differs from rdma_xid: the call named by rdma_xid fails with a synthesized SYSTEM_ERR reply; BadReplies = 1; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpMsg(c.xid, 8, hpRPCReply(c.xid+1, xdr.AcceptSuccess, nil)))
			e.expectFailed(c.xid)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
			e.ping()
		},
	},
	{
		name: "xid/duplicate-reply",
		want: "two replies for one call: the first completes it, the second is dropped (BadXIDs = 1); connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.replyOK(c, 8)
			e.replyOK(c, 8)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			e.ping()
			wantStat(e.t, "BadXIDs", e.stats().BadXIDs, 1)
		},
	},
	{
		name: "xid/reply-after-call-completed",
		want: "a late reply for a call already completed and read, sent while another call is in flight: dropped (BadXIDs = 1); the other call completes normally",
		run: func(e *hpClientEnv) {
			c1 := e.call(hpProcNull, nil)
			e.replyOK(c1, 8)
			e.expectReply(c1.xid, xdr.AcceptSuccess)
			c2 := e.call(hpProcNull, nil)
			e.replyOK(c1, 8)
			e.replyOK(c2, 8)
			e.expectReply(c2.xid, xdr.AcceptSuccess)
			wantStat(e.t, "BadXIDs", e.stats().BadXIDs, 1)
		},
	},
	{
		name: "header/shorter-than-16-bytes",
		want: "a 12-byte reply (no trustworthy XID): dropped, BadReplies = 1; the call still completes with its real reply",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpWords(c.xid, 1, 8))
			e.replyOK(c, 8)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
		},
	},
	{
		name: "header/empty-send",
		want: "a zero-length Send: dropped, BadReplies = 1; the call still completes with its real reply",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(nil)
			e.replyOK(c, 8)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
		},
	},
	{
		name: "header/version-2",
		want: "a version-2 reply (XID untrusted): dropped, BadReplies = 1; the call still completes with its real reply",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(append(hpWords(c.xid, 2, 8, 0, 0, 0, 0), hpRPCReply(c.xid, xdr.AcceptSuccess, nil)...))
			e.replyOK(c, 8)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
		},
	},
	{
		name: "header/unknown-proc",
		want: "rdma_proc 7 in a reply: the call fails with SYSTEM_ERR; BadReplies = 1; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpWords(c.xid, 1, 8, 7))
			e.expectFailed(c.xid)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
			e.ping()
		},
	},
	{
		name: "header/rdma-done",
		want: "RDMA_DONE as a reply: the call fails with SYSTEM_ERR (as Linux fails it with EIO); connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpWords(c.xid, 1, 8, uint32(chunks.ProcDone)))
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "header/2^32-write-segments-claimed",
		want: "a reply's Write chunk claiming 2^32-1 segments: the call fails with SYSTEM_ERR, nothing allocated for the claim; connection up",
		heap: 1 << 20,
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpWords(c.xid, 1, 8, 0, 0, 1, 0xffffffff, 1, 2, 3, 4))
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "chunks/reply-with-read-list",
		want: "a reply carrying a Read list: the call fails with SYSTEM_ERR, nothing is read; BadReplies = 1; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(append(hpWords(hpCat([]uint32{c.xid, 1, 8, 0, 1, 0}, hpSeg(0x1234, 40, 0x1000), []uint32{0, 0, 0})...),
				hpRPCReply(c.xid, xdr.AcceptSuccess, nil)...))
			e.expectFailed(c.xid)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
			e.ping()
		},
	},
	{
		name: "chunks/nomsg-reply-without-reply-chunk",
		want: "RDMA_NOMSG reply with no Reply chunk (no message at all): the call fails with SYSTEM_ERR; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcBig, nil)
			e.peer.sendMsg(hpWords(c.xid, 1, 8, uint32(chunks.ProcNoMsg), 0, 0, 0))
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "chunks/nomsg-reply-for-call-without-reply-chunk",
		want: "RDMA_NOMSG reply to a call that offered no Reply chunk: the call fails with SYSTEM_ERR, nothing read from our memory; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpWords(hpCat([]uint32{c.xid, 1, 8, uint32(chunks.ProcNoMsg), 0, 0, 1, 1}, hpSeg(0x1234, 24, 0))...))
			e.expectFailed(c.xid)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
			e.ping()
		},
	},
	{
		name: "chunks/reply-chunk-overrun",
		want: "a Reply chunk reporting 4 bytes more than offered: the call fails with SYSTEM_ERR, nothing read beyond our memory; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcBig, nil)
			s := e.replySeg(c)
			e.peer.sendMsg(hpWords(hpCat([]uint32{c.xid, 1, 8, uint32(chunks.ProcNoMsg), 0, 0, 1, 1}, hpSeg(s.Handle, s.Length+4, s.Offset))...))
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "chunks/reply-chunk-claims-4-GiB",
		want: "RDMA_NOMSG reply whose Reply chunk claims 4 GiB - 1 (over Limits.MaxChunkLength): the call fails with SYSTEM_ERR, nothing allocated for the claim; connection up",
		heap: 1 << 20,
		run: func(e *hpClientEnv) {
			c := e.call(hpProcBig, nil)
			s := e.replySeg(c)
			e.peer.sendMsg(hpWords(hpCat([]uint32{c.xid, 1, 8, uint32(chunks.ProcNoMsg), 0, 0, 1, 1}, hpSeg(s.Handle, 0xffffffff, s.Offset))...))
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "chunks/msg-reply-with-nonempty-reply-chunk",
		want: "RDMA_MSG reply that also reports bytes in the Reply chunk: the call fails with SYSTEM_ERR; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcBig, nil)
			s := e.replySeg(c)
			e.peer.sendMsg(append(hpWords(hpCat([]uint32{c.xid, 1, 8, 0, 0, 0, 1, 1}, hpSeg(s.Handle, 24, s.Offset))...),
				hpRPCReply(c.xid, xdr.AcceptSuccess, nil)...))
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "chunks/write-chunk-longer-than-offered",
		want: "write chunk data longer than offered (Write list reports 8196 of 8192 bytes): the call fails with SYSTEM_ERR, nothing read beyond our memory; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(8192))
			s := e.writeSeg(c)
			e.peer.sendMsg(append(hpWords(hpCat([]uint32{c.xid, 1, 8, 0, 0, 1, 1}, hpSeg(s.Handle, 8196, s.Offset), []uint32{0, 0})...),
				hpRPCReply(c.xid, xdr.AcceptSuccess, hpWords(8196))...))
			e.expectFailed(c.xid)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
			e.ping()
		},
	},
	{
		name: "chunks/write-length-disagrees-with-rpc",
		want: "Write list reports 100 bytes but the reply's length word says 8192: the call fails with SYSTEM_ERR (no stale memory handed out); connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(8192))
			s := e.writeSeg(c)
			e.peer.rdmaWrite(s.Handle, s.Offset, hpPattern(100, 1))
			e.peer.sendMsg(append(hpWords(hpCat([]uint32{c.xid, 1, 8, 0, 0, 1, 1}, hpSeg(s.Handle, 100, s.Offset), []uint32{0, 0})...),
				hpRPCReply(c.xid, xdr.AcceptSuccess, hpWords(8192))...))
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "chunks/write-chunk-empty-rpc-claims-data",
		want: "Write list reports 0 bytes written and the reply's length word claims 8192 bytes that are not inline either: the call fails with SYSTEM_ERR (no truncated reply handed up); connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(8192))
			s := e.writeSeg(c)
			e.peer.sendMsg(append(hpWords(hpCat([]uint32{c.xid, 1, 8, 0, 0, 1, 1}, hpSeg(s.Handle, 0, s.Offset), []uint32{0, 0})...),
				hpRPCReply(c.xid, xdr.AcceptSuccess, hpWords(8192))...))
			e.expectFailed(c.xid)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
			e.ping()
		},
	},
	{
		name: "chunks/write-chunk-unused-data-inline",
		want: "control: READ data returned inline (within our Receive buffer) with 0 bytes reported in the Write chunk, as the Linux client accepts: the call completes with the inline data",
		pd:   []byte{0xf6, 0xab, 0x0e, 0x18, 0x01, 0x00, 0x00, 0x03},
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(2000))
			s := e.writeSeg(c)
			data := xdr.AppendOpaque(nil, hpPattern(2000, 6))
			e.peer.sendMsg(append(hpWords(hpCat([]uint32{c.xid, 1, 8, 0, 0, 1, 1}, hpSeg(s.Handle, 0, s.Offset), []uint32{0, 0})...),
				hpRPCReply(c.xid, xdr.AcceptSuccess, data)...))
			if got := e.expectReply(c.xid, xdr.AcceptSuccess); !bytes.Equal(got, data) {
				e.t.Fatal("the inline READ result differs")
			}
		},
	},
	{
		name: "chunks/more-write-chunks-than-offered",
		want: "two Write chunks in the reply of a call that offered one: the call fails with SYSTEM_ERR; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(8192))
			s := e.writeSeg(c)
			e.peer.sendMsg(append(hpWords(hpCat([]uint32{c.xid, 1, 8, 0, 0, 1, 1}, hpSeg(s.Handle, 100, s.Offset),
				[]uint32{1, 1}, hpSeg(s.Handle, 100, s.Offset+100), []uint32{0, 0})...),
				hpRPCReply(c.xid, xdr.AcceptSuccess, hpWords(100))...))
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "chunks/write-list-not-offered",
		want: "a Write list in the reply of a call that offered none: the call fails with SYSTEM_ERR; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(append(hpWords(hpCat([]uint32{c.xid, 1, 8, 0, 0, 1, 1}, hpSeg(0x1234, 4, 0), []uint32{0, 0})...),
				hpRPCReply(c.xid, xdr.AcceptSuccess, hpWords(4))...))
			e.expectFailed(c.xid)
			e.ping()
		},
	},
	{
		name: "rdma/write-beyond-write-chunk",
		want: "an RDMA Write of 8196 bytes into an 8192-byte Write chunk: refused (remote access) at the peer, our queue pair " +
			"fails and the connection closes: the pending call's ReadMsg returns io.EOF",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(8192))
			s := e.writeSeg(c)
			if wc := e.peer.rdmaWrite(s.Handle, s.Offset, hpPattern(8196, 1)); wc.Status != verbs.StatusRemoteAccess {
				e.t.Fatalf("the peer's RDMA Write: %v, want %v", wc.Status, verbs.StatusRemoteAccess)
			}
			e.expectDead(io.EOF)
		},
	},
	{
		name: "rdma/read-beyond-call-memory",
		want: "an RDMA Read past the end of a Long Call's memory: refused at the peer, the connection closes: ReadMsg returns io.EOF",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcEcho, xdr.AppendOpaque(nil, hpPattern(6000, 2)))
			s := e.replySeg(c)
			if wc, _ := e.peer.rdmaRead(s.Handle, s.Offset+uint64(xdr.RoundUp(int(s.Length))), 4); wc.Status != verbs.StatusRemoteAccess {
				e.t.Fatalf("the peer's RDMA Read: %v, want %v", wc.Status, verbs.StatusRemoteAccess)
			}
			e.expectDead(io.EOF)
		},
	},
	{
		name: "rdma/write-after-reply",
		want: "an RDMA Write through a call's rkey after its reply was read (the window was invalidated): refused at the peer, the connection closes: ReadMsg returns io.EOF",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcRead, hpWords(8192))
			e.readReply(c, hpPattern(8192, 3), verbs.OpSend, 0)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			s := e.writeSeg(c)
			if wc := e.peer.rdmaWrite(s.Handle, s.Offset, hpPattern(4, 1)); wc.Status != verbs.StatusRemoteAccess {
				e.t.Fatalf("the peer's RDMA Write: %v, want %v", wc.Status, verbs.StatusRemoteAccess)
			}
			e.expectDead(io.EOF)
		},
	},
	{
		name: "invalidate/another-calls-rkey",
		want: "a reply sent with Send With Invalidate naming another call's rkey: connection closed with an error wrapping ErrProtocol",
		run: func(e *hpClientEnv) {
			e.warmup(8)
			a := e.call(hpProcBig, nil)
			b := e.call(hpProcBig, nil)
			e.peer.sendInv(hpMsg(a.xid, 8, hpRPCReply(a.xid, xdr.AcceptSuccess, nil)), e.replySeg(b).Handle)
			e.expectDead(ErrProtocol)
		},
	},
	{
		name: "invalidate/unknown-rkey",
		want: "Send With Invalidate naming an rkey we never issued: our Receive fails (remote invalid request), the connection closes; ReadMsg returns an error wrapping verbs.ErrRemoteInvalidRequest",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcBig, nil)
			e.peer.sendInv(hpMsg(c.xid, 8, hpRPCReply(c.xid, xdr.AcceptSuccess, nil)), 0x00bad0ff)
			e.expectDead(verbs.ErrRemoteInvalidRequest)
		},
	},
	{
		name: "invalidate/unknown-xid",
		want: "Send With Invalidate of an in-flight call's rkey on a reply with an unknown XID: BadXIDs = 1 and the connection closes with an error wrapping ErrProtocol",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcBig, nil)
			e.peer.sendInv(hpMsg(0xdead, 8, hpRPCReply(0xdead, xdr.AcceptSuccess, nil)), e.replySeg(c).Handle)
			e.expectDead(ErrProtocol)
			wantStat(e.t, "BadXIDs", e.stats().BadXIDs, 1)
		},
	},
	{
		name: "invalidate/call-without-chunks",
		want: "Send With Invalidate of a live rkey on the reply of a call that has no chunks: connection closed with an error wrapping ErrProtocol",
		run: func(e *hpClientEnv) {
			e.warmup(8)
			big := e.call(hpProcBig, nil)
			c := e.call(hpProcNull, nil)
			e.peer.sendInv(hpMsg(c.xid, 8, hpRPCReply(c.xid, xdr.AcceptSuccess, nil)), e.replySeg(big).Handle)
			e.expectDead(ErrProtocol)
		},
	},
	{
		name: "credits/grant-0",
		want: "a reply granting 0 credits is treated as 1 (Negotiated.Credits = 1); calls keep flowing",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.replyOK(c, 0)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			if got := e.stats().Negotiated.Credits; got != 1 {
				e.t.Fatalf("credit limit %d after a grant of 0, want 1", got)
			}
			c = e.call(hpProcNull, nil)
			e.replyOK(c, 0)
			e.expectReply(c.xid, xdr.AcceptSuccess)
		},
	},
	{
		name: "credits/grant-2^32-1",
		want: "a reply granting 2^32-1 credits is clamped to what we asked for (Credits = 8)",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			if c.h.Credits != 8 {
				e.t.Fatalf("our call asks for %d credits, want 8", c.h.Credits)
			}
			e.replyOK(c, 0xffffffff)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			if got := e.stats().Negotiated.Credits; got != 8 {
				e.t.Fatalf("credit limit %d after a grant of 2^32-1, want 8", got)
			}
			e.ping()
		},
	},
	{
		name: "overflow/reply-larger-than-receive",
		want: "an 8 KiB reply into our 4096-byte Receive: the peer's Send fails, our Receive fails (length) and the connection closes; ReadMsg returns an error wrapping verbs.ErrLength",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			msg := hpMsg(c.xid, 8, hpRPCReply(c.xid, xdr.AcceptSuccess, hpPattern(8192, 1)))
			if wc := e.peer.wait(e.peer.sendAsync(msg, verbs.OpSend, 0)); wc.Status != verbs.StatusRemoteInvalidRequest {
				e.t.Fatalf("the peer's Send: %v, want %v", wc.Status, verbs.StatusRemoteInvalidRequest)
			}
			e.expectDead(verbs.ErrLength)
		},
	},
	{
		name: "error/err-chunk",
		want: "RDMA_ERROR ERR_CHUNK: ReadMsg returns a synthesized SYSTEM_ERR reply with a *RemoteError (code 2); RemoteErrors = 1; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(chunks.AppendErrChunk(nil, c.xid, 8))
			msg, err := e.read()
			var re *RemoteError
			if !errors.As(err, &re) || re.XID != c.xid || re.Code != 2 {
				e.t.Fatalf("ReadMsg error %v, want a *RemoteError ERR_CHUNK for xid %#x", err, c.xid)
			}
			var rh xdr.ReplyHeader
			if _, err := rh.Unmarshal(msg); err != nil || rh.XID != c.xid || rh.AcceptStat != xdr.AcceptSystemErr {
				e.t.Fatalf("synthesized reply %+v (%v)", rh, err)
			}
			wantStat(e.t, "RemoteErrors", e.stats().RemoteErrors, 1)
			e.ping()
		},
	},
	{
		name: "error/err-vers",
		want: "RDMA_ERROR ERR_VERS 2..3: SYSTEM_ERR reply with a *RemoteError (code 1, low 2, high 3); connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpWords(c.xid, 1, 8, uint32(chunks.ProcError), uint32(chunks.CodeVers), 2, 3))
			_, err := e.read()
			var re *RemoteError
			if !errors.As(err, &re) || re.Code != 1 || re.Low != 2 || re.High != 3 {
				e.t.Fatalf("ReadMsg error %v, want a *RemoteError ERR_VERS 2..3", err)
			}
			e.ping()
		},
	},
	{
		name: "error/unknown-error-code",
		want: "RDMA_ERROR with rdma_err 9: the call fails with SYSTEM_ERR and no *RemoteError; BadReplies = 1; connection up",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(hpWords(c.xid, 1, 8, uint32(chunks.ProcError), 9))
			e.expectFailed(c.xid)
			wantStat(e.t, "BadReplies", e.stats().BadReplies, 1)
			e.ping()
		},
	},
	{
		name: "error/unknown-xid",
		want: "an RDMA_ERROR for an XID matching no call: dropped, BadXIDs = 1; the call completes with its real reply",
		run: func(e *hpClientEnv) {
			c := e.call(hpProcNull, nil)
			e.peer.sendMsg(chunks.AppendErrChunk(nil, 0xdead, 8))
			e.replyOK(c, 8)
			e.expectReply(c.xid, xdr.AcceptSuccess)
			wantStat(e.t, "BadXIDs", e.stats().BadXIDs, 1)
		},
	},
	{
		name: "disconnect/mid-call",
		want: "the responder disconnects with a call in flight: the pending ReadMsg returns io.EOF, WriteMsg fails; no goroutine left",
		run: func(e *hpClientEnv) {
			e.call(hpProcNull, nil)
			pending := make(chan error, 1)
			go func() {
				_, err := e.cli.ReadMsg(nil)
				pending <- err
			}()
			_ = e.peer.vc.Close()
			select {
			case err := <-pending:
				if !errors.Is(err, io.EOF) {
					e.t.Fatalf("pending ReadMsg: %v, want io.EOF", err)
				}
			case <-time.After(hpGuard):
				e.t.Fatal("pending ReadMsg did not return")
			}
			if err := e.cli.WriteMsg(hpRPCCall(0x7fff_0001, hpProcNull, nil)); err == nil {
				e.t.Fatal("WriteMsg succeeded after the disconnect")
			}
		},
	},
	{
		name: "disconnect/right-after-accept",
		want: "the responder disconnects before any call: ReadMsg returns io.EOF and WriteMsg fails; no goroutine left",
		run: func(e *hpClientEnv) {
			_ = e.peer.vc.Close()
			e.expectDead(io.EOF)
		},
	},
	{
		name: "connect/196-bytes-of-garbage-private-data",
		want: "accept private data of 196 garbage bytes: \"not-found\", fallback 1024/1024: a 2 KiB call goes as a Long Call and completes",
		pd:   hpGarbage(196, 0x3c),
		run: func(e *hpClientEnv) {
			e.expectNegotiated("not-found", 1024)
			e.expectLongCallAtFallback()
		},
	},
	{
		name: "connect/no-private-data",
		want: "no accept private data (196 zero bytes): \"empty\", fallback 1024/1024 (as with NFS-Ganesha); calls complete",
		pd:   hpNoPD,
		run: func(e *hpClientEnv) {
			e.expectNegotiated("empty", 1024)
			e.expectLongCallAtFallback()
		},
	},
	{
		name: "connect/version-2-private-data",
		want: "accept private data of RFC 8797 version 2: \"bad-version\", fallback 1024/1024; calls complete",
		pd:   []byte{0xf6, 0xab, 0x0e, 0x18, 0x02, 0x00, 0x03, 0x03},
		run: func(e *hpClientEnv) {
			e.expectNegotiated("bad-version", 1024)
			e.expectLongCallAtFallback()
		},
	},
	{
		name: "connect/truncated-private-data",
		want: "format identifier in the last 4 of the 196 bytes: \"truncated\", fallback 1024/1024; calls complete",
		pd:   append(make([]byte, 192), 0xf6, 0xab, 0x0e, 0x18),
		run: func(e *hpClientEnv) {
			e.expectNegotiated("truncated", 1024)
			e.expectLongCallAtFallback()
		},
	},
}

func TestHostileResponder(t *testing.T) {
	for _, tc := range hpClientCases {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Log(hpDescribe(tc.name, tc.want))
				}
			}()
			hpRunClient(t, tc)
		})
	}
}

// TestHostileCaseTable checks the suite itself: at least 30 cases, each
// with a distinct name and a stated outcome. With -v it prints the table
// of the README.
func TestHostileCaseTable(t *testing.T) {
	seen := map[string]bool{}
	var rows []string
	add := func(role, name, want string) {
		key := role + "/" + name
		if name == "" || want == "" || seen[key] {
			t.Errorf("case %q: empty or duplicate name, or no expected outcome", key)
		}
		seen[key] = true
		rows = append(rows, "| "+role+" | `"+name+"` | "+strings.ReplaceAll(want, "|", "\\|")+" |")
	}
	for _, c := range hpServerCases {
		add("requester → our responder", c.name, c.want)
	}
	for _, c := range hpClientCases {
		add("responder → our requester", c.name, c.want)
	}
	if len(rows) < 30 {
		t.Errorf("%d hostile cases, the issue asks for at least 30", len(rows))
	}
	if testing.Verbose() {
		t.Log("\n| Hostile peer | Case | Expected outcome |\n|---|---|---|\n" + strings.Join(rows, "\n"))
	}
}
