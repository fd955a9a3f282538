package transport

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The hostile requesters: a raw requester (hostile_peer_test.go) against
// our responder, Listen and an RPC server loop (hpServe). The suite is
// described in hostile_shared_test.go.

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
		prov := &hpCountingProvider{Provider: protoNet.provider(false)}
		cfg := tc.cfg
		cfg.Provider = prov
		l, err := Listen(protoNet.listen, &cfg)
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
func hpServe(c *Conn) error { return serveCalls(c, nil, nil, echoArgs) }

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

// longCall sends rpc as a Long Call (RDMA_NOMSG, position-zero Read chunk
// in a window of the raw requester) with the given Reply chunk (nil: none).
func (e *hpServerEnv) longCall(xid uint32, rpc []byte, reply []chunks.Segment) {
	e.t.Helper()
	rkey, addr := e.peer.expose(rpc, len(rpc))
	h := hpHeader(xid).proc(chunks.ProcNoMsg).read(0, hpS(rkey, uint32(len(rpc)), addr))
	if reply != nil {
		h.reply(reply...)
	}
	e.peer.sendMsg(h.bytes())
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
			e.peer.sendMsg(hpHeader(xid).proc(chunks.ProcNoMsg).read(0, hpS(crkey, uint32(len(rpc)), caddr)).
				reply(hpS(rkey, 8192, addr)).bytes())
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
			e.sendBad(hpHeader(xid).vers(2).rpc(hpRPCCall(xid, 0, nil)).bytes(), chunks.ErrVersion)
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
			e.sendBad(hpHeader(xid).vers(2).lists().bytes(), chunks.ErrVersion)
			e.expectError(xid, chunks.CodeVers)
			e.ping()
		},
	},
	{
		name: "header/rdma-msgp",
		want: "RDMA_MSGP (retired by RFC 8166 §4.6.1): ERR_CHUNK; connection up; ErrChunkSent = 1",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			// rdma_align, rdma_thresh, then three empty chunk lists.
			e.sendBad(hpHeader(xid).proc(chunks.ProcMsgp).lists(0, 0, 0, 0, 0).bytes(), chunks.ErrMsgp)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
			wantStat(e.t, "ErrChunkSent", e.stats().ErrChunkSent, 1)
		},
	},
	{
		name: "header/rdma-done",
		want: "RDMA_DONE (retired): dropped silently; connection up; Dropped = 1",
		run: func(e *hpServerEnv) {
			e.sendBad(hpHeader(e.nextXID()).proc(chunks.ProcDone).lists().bytes(), chunks.ErrDone)
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
			e.sendBad(hpHeader(xid).proc(7).bytes(), chunks.ErrUnknownProc)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
		},
	},
	{
		name: "header/shorter-than-16-bytes",
		want: "a 12-byte header (no XID to answer): dropped silently; connection up; Dropped = 1",
		run: func(e *hpServerEnv) {
			e.sendBad(hpHeader(e.nextXID()).truncate(12).bytes(), chunks.ErrShortHeader)
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
			// The Read segment's handle, then the end of the Send.
			e.sendBad(hpHeader(xid).read(0, hpS(0x1234, 0, 0)).truncate(28).bytes(), chunks.ErrTruncated)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
		},
	},
	{
		name: "header/bad-discriminator",
		want: "a chunk-list discriminator of 7: ERR_CHUNK; connection up",
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			e.sendBad(hpHeader(xid).lists(0, 7, 0).rpc(hpRPCCall(xid, 0, nil)).bytes(), chunks.ErrBadDiscriminator)
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
			// One segment follows the claim, then the Send ends.
			e.sendBad(hpHeader(xid).writeClaim(0xffffffff, hpS(1, 2, 3<<32|4)).truncate(44).bytes(), chunks.ErrTooManySegments)
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
			e.sendBad(hpHeader(xid).replyClaim(0xffffffff, hpS(1, 2, 3<<32|4)).bytes(), chunks.ErrTooManySegments)
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
			e.sendBad(hpHeader(xid).read(6, hpS(rkey, 8, addr)).rpc(hpRPCCall(xid, 0, nil)).bytes(), chunks.ErrPositionAlign)
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
			e.sendBad(hpHeader(xid).read(400, hpS(rkey, 8, addr)).rpc(hpRPCCall(xid, 0, nil)).bytes(), chunks.ErrPositionBeyondMessage)
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
			e.sendBad(hpHeader(xid).read(40, hpS(rkey, 100, addr)).read(44, hpS(rkey, 8, addr)).
				rpc(hpRPCCall(xid, 0, nil)).bytes(), chunks.ErrReadChunkOverlap)
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
			e.sendBad(hpHeader(xid).read(40, hpS(rkey, 0xffffffff, addr)).rpc(hpRPCCall(xid, 0, nil)).bytes(), chunks.ErrChunkTooLong)
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
			e.sendBad(hpHeader(xid).read(40, hpS(rkey, 2<<20, addr)).rpc(hpRPCCall(xid, 0, nil)).bytes(), nil)
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
			e.sendBad(hpHeader(xid).proc(chunks.ProcNoMsg).bytes(), chunks.ErrNoMsgNoCallChunk)
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
			e.sendBad(hpHeader(xid).read(0, hpS(rkey, 40, addr)).rpc(hpRPCCall(xid, 0, nil)).bytes(), chunks.ErrPositionZeroInMsg)
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
				h := hpHeader(xid).proc(chunks.ProcNoMsg)
				for i := 0; i < len(rpc); i += 4 {
					h.read(0, hpS(rkey, 4, addr+uint64(i)))
				}
				msgs = append(msgs, h.bytes())
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
			e.sendBad(hpHeader(xid).proc(chunks.ProcNoMsg).read(0, hpS(rkey, 0, addr)).bytes(), nil)
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
			e.peer.sendMsg(hpHeader(xid).proc(chunks.ProcNoMsg).read(0, hpS(0xbad00, uint32(len(rpc)), 0x1000)).bytes())
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
			e.peer.sendMsg(hpHeader(xid).proc(chunks.ProcNoMsg).read(0, hpS(rkey, uint32(len(rpc)), addr+64)).bytes())
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
			e.peer.sendMsg(hpHeader(xid).proc(chunks.ProcNoMsg).read(0, hpS(rkey, 4096, addr)).bytes())
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
			e.peer.sendMsg(hpHeader(xid).reply(hpS(rkey, 64, addr)).rpc(hpRPCCall(xid, hpProcEcho, hpPattern(2000, 1))).bytes())
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
			e.sendBad(hpHeader(xid).write(hpSegs(100, rkey, addr)...).reply(hpSegs(100, rkey, addr+6400)...).
				rpc(hpRPCCall(xid, hpProcNull, nil)).bytes(), nil)
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
			e.sendBad(hpHeader(xid).write(hpSegs(260, rkey, addr)...).reply(hpSegs(260, rkey, addr+64*260)...).
				rpc(hpRPCCall(xid, hpProcNull, nil)).bytes(), nil)
			e.expectError(xid, chunks.CodeChunk)
			e.ping()
		},
	},
	{
		name: "reply/huge-chunks-offered",
		want: "lies about lengths: a Write chunk and a Reply chunk of 4 MiB each over a 64-byte window, for a NULL call: " +
			"the reply (24 bytes) goes through the Reply chunk as svcrdma's would, written within the window, " +
			"nothing into the Write chunk, nothing registered for the 4 MiB offer (one 16 KiB staging buffer for " +
			"the 24 bytes); connection up",
		reg: chunkBufAlign,
		run: func(e *hpServerEnv) {
			xid := e.nextXID()
			rkey, addr := e.peer.expose(nil, 64)
			e.sendBad(hpHeader(xid).write(hpS(rkey, 4<<20, addr)).reply(hpS(rkey, 4<<20, addr)).
				rpc(hpRPCCall(xid, hpProcNull, nil)).bytes(), nil)
			var h chunks.Header
			if _, err := h.ParseReply(e.peer.next(), &chunks.DefaultLimits); err != nil || h.XID != xid || h.Proc != chunks.ProcNoMsg {
				e.t.Fatalf("reply: %v, xid %#x, %v; want RDMA_NOMSG for %#x", err, h.XID, h.Proc, xid)
			}
			n := h.ReplyChunk.Length()
			if len(h.WriteList) != 1 || h.WriteList[0].Length() != 0 || n == 0 || n > 64 {
				e.t.Fatalf("reply reports %d/%d bytes written", h.WriteList[0].Length(), n)
			}
			var rh xdr.ReplyHeader
			if _, err := rh.Unmarshal(e.peer.memAt(addr, int(n))); err != nil || rh.XID != xid {
				e.t.Fatalf("the Reply chunk holds no reply for xid %#x: %v", xid, err)
			}
			e.ping()
			wantStat(e.t, "RDMAWriteBytes", e.stats().RDMAWriteBytes, n)
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
