package transport

// Fuzzing the engine through a raw peer: FuzzHostileRequester sends
// fuzzer-chosen RPC-over-RDMA messages at our responder (a Listener and
// hpServe); FuzzHostileResponder answers our requester's calls with
// fuzzer-chosen replies. Each input is one connection (dialled and accepted
// on a listener shared by all inputs, so the setup is one loopback
// handshake) and a script of at most hpFuzzOps messages, then a NULL call.
// Whatever the script did, nothing may panic, the connection either still
// answers the NULL call or was closed with an error, and no goroutine is
// left after Close.

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

const (
	// hpFuzzOps bounds the messages of a script: one fewer than the
	// credits of the side under test, so that the final NULL call always
	// has one.
	hpFuzzOps     = 7
	hpFuzzCredits = 8
	// hpFuzzGuard bounds each wait of a fuzz input (a hang is a finding).
	hpFuzzGuard = 5 * time.Second
	// hpFuzzPingXID is the final NULL call's XID; script XIDs stay below.
	hpFuzzPingXID = 0xffff_fff0
)

// hpScript reads a fuzz input as a stream of choices; past its end every
// choice is 0.
type hpScript []byte

func (s *hpScript) byte() byte {
	if len(*s) == 0 {
		return 0
	}
	b := (*s)[0]
	*s = (*s)[1:]
	return b
}

func (s *hpScript) u32() uint32 {
	return uint32(s.byte())<<24 | uint32(s.byte())<<16 | uint32(s.byte())<<8 | uint32(s.byte())
}

// bytes returns the next n bytes of the input (fewer at its end).
func (s *hpScript) bytes(n int) []byte {
	n = min(n, len(*s))
	b := (*s)[:n]
	*s = (*s)[n:]
	return b
}

// segment returns a segment: one inside a window of the peer (rkey,
// addr, size bytes) or an arbitrary one.
func (s *hpScript) segment(rkey uint32, addr uint64, size int) chunks.Segment {
	if s.byte()%2 == 0 {
		off := int(s.byte()) * 16 % size
		return hpS(rkey, uint32(int(s.byte())*32%(size-off+1)), addr+uint64(off))
	}
	return hpS(s.u32(), s.u32()%(1<<20), uint64(s.u32()))
}

// header fills in a fuzzer-chosen header: version, credits, procedure, chunk
// lists made with seg, trailing words and a truncation.
func (s *hpScript) header(h *hpHdr, credits uint32, seg func() chunks.Segment) *hpHdr {
	if v := s.byte(); v >= 240 {
		h.vers(uint32(v - 240))
	}
	if s.byte() >= 240 {
		h.credits(credits + s.u32())
	}
	if p := s.byte(); p >= 128 {
		h.proc(chunks.Proc(p % 8))
	}
	for range s.byte() % 3 {
		h.read(uint32(s.byte())*4+uint32(s.byte()%4/3), seg())
	}
	for range s.byte() % 3 {
		var segs []chunks.Segment
		for range s.byte() % 3 {
			segs = append(segs, seg())
		}
		h.write(segs...)
	}
	if n := s.byte() % 4; n > 0 {
		var segs []chunks.Segment
		for range n - 1 {
			segs = append(segs, seg())
		}
		h.reply(segs...)
	}
	if s.byte() >= 250 {
		h.trail(s.u32(), s.u32())
	}
	if c := s.byte(); c >= 240 {
		h.truncate(int(c-240) * 4)
	}
	return h
}

// trySend posts msg without waiting, and reports whether the post
// succeeded (it fails on a connection that is down).
func (p *hpPeer) trySend(msg []byte, op verbs.Opcode, invRKey uint32) bool {
	msg = msg[:min(len(msg), hpSendSlotSize)]
	off := p.slot % hpSendSlots * hpSendSlotSize
	p.slot++
	copy(p.send.Bytes()[off:], msg)
	p.nextID++
	return p.vc.PostSend([]verbs.WorkRequest{{ID: p.nextID, Op: op, InvalidateRKey: invRKey,
		SGL: []verbs.SGE{{Region: p.send, Offset: off, Length: len(msg)}}}}) == nil
}

// tryNext returns the next message our side sent, or nil once the
// connection is down or after hpFuzzGuard.
func (p *hpPeer) tryNext() []byte {
	ctx, cancel := context.WithTimeout(context.Background(), hpFuzzGuard)
	defer cancel()
	for {
		p.poll()
		if len(p.inbox) > 0 {
			m := p.inbox[0]
			p.inbox = p.inbox[1:]
			return m
		}
		if p.vc.Wait(ctx) != nil {
			p.poll()
			if len(p.inbox) > 0 {
				continue
			}
			return nil
		}
	}
}

// FuzzHostileRequester: a raw requester sends a script of fuzzer-chosen
// messages (valid calls, raw bytes, headers from the builder, Sends With
// Invalidate) at our responder, then a NULL call. Our responder must
// answer that call, or have closed the connection with an error.
func FuzzHostileRequester(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0, 1})                                  // a valid call
	f.Add([]byte{1, 12, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 32})     // a 12-byte header of version 2
	f.Add([]byte{2, 0, 0, 0, 5, 250, 0, 200, 1, 0, 4, 0, 0, 0})   // RDMA_MSGP
	f.Add([]byte{2, 0, 0, 0, 6, 0, 0, 0, 1, 0, 10, 0, 3, 1, 0})   // a Read chunk in our window
	f.Add([]byte{2, 0, 0, 0, 7, 0, 0, 0, 0, 1, 2, 0, 1, 2, 2})    // Write chunks and a Reply chunk
	f.Add([]byte{3, 0, 0, 0, 8, 1, 0xba, 0xd0, 0x0f, 0xf0})       // Send With Invalidate
	f.Add([]byte{2, 0, 0, 0, 9, 241, 0, 0, 0, 0, 0, 0, 250, 245}) // version 1, truncated
	l, err := Listen("127.0.0.1:0", &Config{Provider: &soft.Provider{}, Credits: hpFuzzCredits})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = l.Close() })
	f.Fuzz(func(t *testing.T, input []byte) {
		s := hpScript(input)
		before := hpGoroutines()
		acc := make(chan *Conn, 1)
		go func() {
			c, _ := l.AcceptRDMA()
			acc <- c
		}()
		peer := hpDial(t, l.Addr().String(), hpLinuxClientPD)
		var srv *Conn
		select {
		case srv = <-acc:
		case <-time.After(hpFuzzGuard):
		}
		if srv == nil {
			_ = peer.vc.Close()
			t.Fatal("our listener did not accept the raw requester")
		}
		served := make(chan error, 1)
		go func() { served <- hpServe(srv) }()
		defer func() {
			_ = peer.vc.Close()
			_ = srv.Close()
			<-served
			checkLeaks(t, before, hpFuzzGuard)
		}()
		rkey, addr := peer.expose(hpPattern(4096, 1), 4096)
		seg := func() chunks.Segment { return s.segment(rkey, addr, 4096) }
		for range hpFuzzOps {
			if len(s) == 0 {
				break
			}
			xid := s.u32() & 0x7fff_ffff
			var msg []byte
			op, inv := verbs.OpSend, uint32(0)
			switch s.byte() % 4 {
			case 0:
				msg = hpMsg(xid, hpFuzzCredits, hpRPCCall(xid, hpProcEcho, xdr.AppendOpaque(nil, s.bytes(int(s.byte())))))
			case 1:
				msg = s.bytes(int(s.byte()))
			case 2:
				h := s.header(hpHeader(xid).credits(hpFuzzCredits), hpFuzzCredits, seg)
				switch s.byte() % 3 {
				case 0:
					h.rpc(hpRPCCall(xid, uint32(s.byte()%4), s.bytes(int(s.byte()))))
				case 1:
					h.rpc(s.bytes(int(s.byte())))
				}
				msg = h.bytes()
			case 3:
				msg, op = hpMsg(xid, hpFuzzCredits, hpRPCCall(xid, hpProcNull, nil)), verbs.OpSendWithInvalidate
				inv = rkey
				if s.byte()%2 == 1 {
					inv = s.u32()
				}
			}
			if !peer.trySend(msg, op, inv) {
				break
			}
		}
		// The NULL call: answered, or the connection is closed.
		if peer.trySend(hpMsg(hpFuzzPingXID, hpFuzzCredits, hpRPCCall(hpFuzzPingXID, hpProcNull, nil)), verbs.OpSend, 0) {
			for {
				m := peer.tryNext()
				if m == nil {
					break
				}
				var h chunks.Header
				if _, err := h.Unmarshal(m, nil); err != nil {
					t.Fatalf("our responder sent an unparsable header %x: %v", m[:min(len(m), 64)], err)
				}
				if h.XID != hpFuzzPingXID {
					continue
				}
				if h.Proc != chunks.ProcMsg {
					t.Fatalf("our responder answered the NULL call with %v %v", h.Proc, h.ErrCode)
				}
				return
			}
		}
		select {
		case err := <-served:
			served <- err // for the deferred wait
			if err == nil {
				t.Fatal("the server loop ended without an error")
			}
		case <-time.After(hpFuzzGuard):
			t.Fatal("our responder neither answered the NULL call nor closed the connection")
		}
		if srv.WriteMsg(hpRPCReply(1, xdr.AcceptSuccess, nil)) == nil {
			t.Fatal("WriteMsg succeeded on a closed connection")
		}
	})
}

// FuzzHostileResponder: our requester sends a script of calls (NULL,
// echo, READ with a Write chunk, a call offering a Reply chunk), and a raw
// responder answers each with a fuzzer-chosen reply (proper, raw bytes,
// headers from the builder over the chunks the call offered, Sends With
// Invalidate), then answers a NULL call properly. Our requester must read
// that reply, or fail with an error.
func FuzzHostileResponder(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0})                                 // NULL answered properly
	f.Add([]byte{2, 0, 40, 1, 0, 1, 0, 0, 0, 0, 1, 1, 1})  // READ, a builder reply
	f.Add([]byte{3, 0, 1, 2, 16, 0, 0, 0, 1, 2, 3, 4})     // Big, raw bytes
	f.Add([]byte{1, 30, 3, 1})                             // echo, Send With Invalidate
	f.Add([]byte{0, 0, 1, 1, 0, 200, 0, 0, 0, 0, 0, 0, 1}) // NULL, RDMA_MSG of another proc
	vl, err := (&soft.Provider{}).Listen("127.0.0.1:0")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { _ = vl.Close() })
	f.Fuzz(func(t *testing.T, input []byte) {
		s := hpScript(input)
		before := hpGoroutines()
		acc := hpAccept(t, vl, hpLinuxServerPD)
		ctx, cancel := context.WithTimeout(context.Background(), hpFuzzGuard)
		defer cancel()
		cli, err := Dial(ctx, vl.Addr().String(), &Config{Provider: &soft.Provider{}, Binding: hpBinding{}, Credits: hpFuzzCredits})
		if err != nil {
			t.Fatal(err)
		}
		a := <-acc
		if a.err != nil {
			_ = cli.Close()
			t.Fatal(a.err)
		}
		peer := a.peer
		_ = cli.SetDeadline(time.Now().Add(hpFuzzGuard))
		type read struct {
			msg []byte
			err error
		}
		reads := make(chan read, 2*hpFuzzOps+4)
		go func() {
			for {
				m, err := cli.ReadMsg(nil)
				reads <- read{m, err}
				if err != nil {
					var re *RemoteError
					if errors.As(err, &re) {
						continue // one call failed; the connection goes on
					}
					close(reads)
					return
				}
			}
		}()
		defer func() {
			_ = cli.Close()
			_ = peer.vc.Close()
			for range reads {
			}
			checkLeaks(t, before, hpFuzzGuard)
		}()
		// recvCall returns our requester's next call, nil once the
		// connection is down.
		recvCall := func() (*chunks.Header, []byte) {
			m := peer.tryNext()
			if m == nil {
				return nil, nil
			}
			h := new(chunks.Header)
			if _, err := h.ParseCall(m, nil); err != nil {
				t.Fatalf("our requester sent an invalid call: %v", err)
			}
			return h, m
		}
		// Warm-up: a NULL call answered with a grant of hpFuzzCredits, so
		// that the script's calls and the final one all have a credit.
		if err := cli.WriteMsg(hpRPCCall(1, hpProcNull, nil)); err != nil {
			t.Fatal(err)
		}
		if h, _ := recvCall(); h == nil || !peer.trySend(hpMsg(h.XID, hpFuzzCredits, hpRPCReply(h.XID, xdr.AcceptSuccess, nil)), verbs.OpSend, 0) {
			t.Fatal("the warm-up call did not arrive")
		}
		if r := <-reads; r.err != nil {
			t.Fatalf("the warm-up call: %v", r.err)
		}
		for i := range hpFuzzOps {
			if len(s) == 0 {
				break
			}
			xid := uint32(2 + i)
			var args []byte
			proc := uint32(s.byte() % 4)
			switch proc {
			case hpProcEcho:
				args = xdr.AppendOpaque(nil, hpPattern(int(s.byte())*40, byte(xid)))
			case hpProcRead:
				args = hpWords(uint32(s.byte()) * 64)
			}
			if cli.WriteMsg(hpRPCCall(xid, proc, args)) != nil {
				break
			}
			call, _ := recvCall()
			if call == nil {
				break
			}
			// The chunks our requester offered, for the builder's segments.
			var offered []chunks.Segment
			for _, w := range call.WriteList {
				offered = append(offered, w...)
			}
			offered = append(offered, call.ReplyChunk...)
			for _, r := range call.ReadList {
				offered = append(offered, r.Segment)
			}
			seg := func() chunks.Segment {
				if len(offered) > 0 && s.byte()%2 == 0 {
					o := offered[int(s.byte())%len(offered)]
					return hpS(o.Handle, min(o.Length, uint32(s.byte())*64), o.Offset)
				}
				return hpS(s.u32(), s.u32()%(1<<20), uint64(s.u32()))
			}
			rxid := call.XID
			if s.byte() >= 240 {
				rxid = s.u32()
			}
			reply := hpRPCReply(rxid, xdr.AcceptSuccess, nil)
			var msg []byte
			op, inv := verbs.OpSend, uint32(0)
			switch s.byte() % 4 {
			case 0:
				msg = hpMsg(rxid, hpFuzzCredits, reply)
			case 1:
				h := s.header(hpHeader(rxid).credits(hpFuzzCredits), hpFuzzCredits, seg)
				switch s.byte() % 3 {
				case 0:
					h.rpc(hpRPCReply(rxid, xdr.AcceptStat(s.byte()%6), s.bytes(int(s.byte()))))
				case 1:
					h.rpc(s.bytes(int(s.byte())))
				}
				msg = h.bytes()
			case 2:
				msg = s.bytes(int(s.byte()))
			case 3:
				msg, op = hpMsg(rxid, hpFuzzCredits, reply), verbs.OpSendWithInvalidate
				inv = seg().Handle
			}
			if !peer.trySend(msg, op, inv) {
				break
			}
		}
		// The final NULL call, answered properly: its reply must be read,
		// or the connection must have failed.
		if cli.WriteMsg(hpRPCCall(hpFuzzPingXID, hpProcNull, nil)) == nil {
			for {
				h, _ := recvCall()
				if h == nil {
					break
				}
				if h.XID == hpFuzzPingXID {
					peer.trySend(hpMsg(h.XID, hpFuzzCredits, hpRPCReply(h.XID, xdr.AcceptSuccess, nil)), verbs.OpSend, 0)
					break
				}
			}
		}
		for r := range reads {
			if r.err != nil {
				var re *RemoteError
				if errors.As(r.err, &re) || errors.Is(r.err, ErrBadReply) {
					continue // one call failed; the connection goes on
				}
				if errors.Is(r.err, os.ErrDeadlineExceeded) {
					t.Fatal("our requester neither read the NULL call's reply nor failed")
				}
				if cli.WriteMsg(hpRPCCall(hpFuzzPingXID+1, hpProcNull, nil)) == nil {
					t.Fatalf("ReadMsg failed (%v) but WriteMsg still succeeds", r.err)
				}
				return
			}
			if xid, _, _ := xdr.PeekXID(r.msg); xid == hpFuzzPingXID {
				var rh xdr.ReplyHeader
				if _, err := rh.Unmarshal(r.msg); err != nil || rh.Stat != xdr.MsgAccepted || rh.AcceptStat != xdr.AcceptSuccess {
					t.Fatalf("the NULL call's reply %+v (%v)", rh, err)
				}
				return
			}
		}
	})
}
