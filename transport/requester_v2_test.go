package transport

import (
	"context"
	"encoding/binary"
	"errors"
	"os"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The requester's RPC-over-RDMA version 2 (Config.OfferVersion2): the
// negotiation of draft §7 against our responder with and without version
// 2, and against raw responders that answer as knfsd does, not at all, or
// wrongly. Version 2 calls of every form between our two sides are
// TestProtocolMatrixVersion2's.

// TestVersion2Fallback: a requester offering version 2 to our responder
// without AcceptVersion2 gets version 1's ERR_VERS and goes on in version 1
// on the same connection; a second Dial to the same address offers
// version 1 only (no ERR_VERS on the second connection).
func TestVersion2Fallback(t *testing.T) {
	l, err := Listen("127.0.0.1:0", softConfig(&Config{}))
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	t.Cleanup(func() { _ = l.Close(); v2Refused.Delete(addr) })
	for i := range 2 {
		accepted := make(chan *Conn, 1)
		go func() {
			c, err := l.AcceptRDMA()
			if err != nil {
				close(accepted)
				return
			}
			accepted <- c
			_ = serveTest(c)
		}()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		cli, err := Dial(ctx, addr, softConfig(&Config{OfferVersion2: true}))
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		srv := <-accepted
		p := &testPair{l: l, client: cli, server: srv}
		args := xdr.AppendOpaque(nil, pattern(100, 1))
		if got := p.call(t, 1, procEcho, args); string(got) != string(args) {
			t.Fatalf("connection %d: the echo differs", i)
		}
		if v := cli.Stats().Negotiated.Version; v != 1 {
			t.Fatalf("connection %d: Version %d, want 1", i, v)
		}
		if n, want := srv.Stats().ErrVersSent, uint64(1-i); n != want {
			t.Fatalf("connection %d: the responder sent %d ERR_VERS, want %d", i, n, want)
		}
		_ = cli.Close()
		_ = srv.Close()
	}
	if _, ok := v2Refused.Load(addr); !ok {
		t.Fatal("the address is not remembered as refusing version 2")
	}
}

// dialRawV2 dials a raw responder (the hostile suite's peer) with a
// requester offering version 2; the responder reads our RDMA2_CONNPROP,
// which must be well formed and at most 1,024 bytes, and sends what
// answer returns for it (nil: nothing). It returns Dial's result and the
// raw peer.
func dialRawV2(t *testing.T, cfg Config, answer func(connprop *rpcrdma2.Header) []byte) (*Conn, *hpPeer, error) {
	t.Helper()
	vl, err := protoNet.provider(false).Listen(protoNet.listen)
	if err != nil {
		t.Fatal(err)
	}
	addr := vl.Addr().String()
	t.Cleanup(func() { _ = vl.Close(); v2Refused.Delete(addr) })
	acc := hpAccept(t, vl, hpLinuxServerPD)
	type got struct {
		peer *hpPeer
		err  error
	}
	answered := make(chan got, 1)
	go func() {
		a := <-acc
		if a.err != nil {
			answered <- got{err: a.err}
			return
		}
		if !a.peer.waitUntil(func() bool { return len(a.peer.inbox) > 0 }) {
			answered <- got{peer: a.peer, err: errors.New("no RDMA2_CONNPROP")}
			return
		}
		msg := a.peer.inbox[0]
		a.peer.inbox = a.peer.inbox[1:]
		var h rpcrdma2.Header
		if _, err := h.Unmarshal(msg, nil); err != nil || h.Type != rpcrdma2.HTypeConnProp || h.Response() || len(msg) > 1024 {
			answered <- got{peer: a.peer, err: errors.New("the first message is not a requester's RDMA2_CONNPROP")}
			return
		}
		if b := answer(&h); b != nil {
			a.peer.sendAsync(b, verbs.OpSend, 0)
		}
		answered <- got{peer: a.peer}
	}()
	cfg.Provider, cfg.OfferVersion2, cfg.Binding, cfg.Credits = protoNet.provider(true), true, hpBinding{}, 8
	ctx, cancel := context.WithTimeout(context.Background(), hpGuard)
	defer cancel()
	cli, err := Dial(ctx, addr, &cfg)
	g := <-answered
	if g.err != nil {
		t.Fatal(g.err)
	}
	if cli != nil {
		t.Cleanup(func() { _ = cli.Close() })
	}
	t.Cleanup(func() { _ = g.peer.vc.Close() })
	return cli, g.peer, err
}

// knfsdAnswer is knfsd's answer to a version 2 message
// (rpcrdma2/testdata/knfsd-v2-answers.hex) for xid: version 1's ERR_VERS
// 1-1, its 64 credits, the refused rdma_vers 2 echoed.
func knfsdAnswer(xid uint32) []byte { return hpWords(xid, 2, 64, 4, 1, 1, 1) }

// A responder answering as knfsd does: version 1 on the same connection,
// which then carries version 1 calls; the address is remembered.
func TestVersion2KnfsdAnswer(t *testing.T) {
	cli, peer, err := dialRawV2(t, Config{}, func(h *rpcrdma2.Header) []byte { return knfsdAnswer(h.XID) })
	if err != nil {
		t.Fatal(err)
	}
	if v := cli.Stats().Negotiated.Version; v != 1 {
		t.Fatalf("Version %d, want 1", v)
	}
	if err := cli.WriteMsg(hpRPCCall(5, hpProcNull, nil)); err != nil {
		t.Fatal(err)
	}
	h, rpc := hpParse(t, peer.next())
	if h.Vers != chunks.Version1 || h.XID != 5 || len(rpc) == 0 {
		t.Fatalf("the call after the fallback: %+v", h)
	}
	if _, ok := v2Refused.Load(cli.RemoteAddr().String()); !ok {
		t.Fatal("the address is not remembered as refusing version 2")
	}
}

// A responder that never answers: version 1 once the negotiation times
// out.
func TestVersion2NoAnswer(t *testing.T) {
	defer func(d time.Duration) { negotiationTimeout = d }(negotiationTimeout)
	negotiationTimeout = 200 * time.Millisecond
	cli, _, err := dialRawV2(t, Config{}, func(*rpcrdma2.Header) []byte { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if v := cli.Stats().Negotiated.Version; v != 1 {
		t.Fatalf("Version %d, want 1", v)
	}
}

// Answers a negotiation must not accept: Dial fails with ErrProtocol.
func TestVersion2BadAnswers(t *testing.T) {
	for _, c := range []struct {
		name   string
		answer func(h *rpcrdma2.Header) []byte
	}{
		{"an RDMA2_MSG", func(h *rpcrdma2.Header) []byte {
			r := rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: h.XID, Vers: 2, Credit: 8, Type: rpcrdma2.HTypeMsg, Flags: rpcrdma2.FlagResponse}}
			return append(r.Append(nil), hpRPCReply(h.XID, xdr.AcceptSuccess, nil)...)
		}},
		{"an RDMA2_CONNPROP for another XID", func(h *rpcrdma2.Header) []byte {
			r := rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: h.XID + 1, Vers: 2, Credit: 8, Type: rpcrdma2.HTypeConnProp, Flags: rpcrdma2.FlagResponse}}
			return r.Append(nil)
		}},
		{"knfsd's ERR_VERS for another XID", func(h *rpcrdma2.Header) []byte { return knfsdAnswer(h.XID + 1) }},
		{"an RDMA2_ERROR other than ERR_VERS", func(h *rpcrdma2.Header) []byte {
			return rpcrdma2.AppendError(nil, h.XID, 8, rpcrdma2.Error{Code: rpcrdma2.ErrBadXDR})
		}},
		{"garbage", func(h *rpcrdma2.Header) []byte { return hpGarbage(40, 3) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := dialRawV2(t, Config{}, c.answer)
			if !errors.Is(err, ErrProtocol) {
				t.Fatalf("Dial: %v, want ErrProtocol", err)
			}
		})
	}
}

// A version 2 answer whose Receive Buffer Size is smaller than what RFC
// 8797 gave lowers our inline threshold; the grant it carries is our
// credit limit.
func TestVersion2ConnPropAnswer(t *testing.T) {
	cli, peer, err := dialRawV2(t, Config{}, func(h *rpcrdma2.Header) []byte {
		r := rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: h.XID, Vers: 2, Credit: 5, Type: rpcrdma2.HTypeConnProp, Flags: rpcrdma2.FlagResponse},
			Props: rpcrdma2.Properties{rpcrdma2.ReceiveBufferSize(2048)}}
		return r.Append(nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	n := cli.Stats().Negotiated
	if n.Version != 2 || n.SendInline != 2048 || n.Credits != 5 {
		t.Fatalf("negotiated %+v, want version 2, SendInline 2048, credits 5", n)
	}
	// A call goes out in version 2, naming no handle (it has no chunk).
	if err := cli.WriteMsg(hpRPCCall(9, hpProcNull, nil)); err != nil {
		t.Fatal(err)
	}
	var h rpcrdma2.Header
	b := peer.next()
	if _, err := h.ParseCall(b, nil); err != nil || h.XID != 9 || h.InvHandle != 0 || h.Credit != 8 {
		t.Fatalf("the call %x: %v, %+v", b, err, h.Prefix)
	}
}

// A version 2 error reaches the caller as a *RemoteError with its code.
func TestVersion2RemoteError(t *testing.T) {
	cli, peer, err := dialRawV2(t, Config{}, func(h *rpcrdma2.Header) []byte {
		r := rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: h.XID, Vers: 2, Credit: 8, Type: rpcrdma2.HTypeConnProp, Flags: rpcrdma2.FlagResponse}}
		return r.Append(nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := cli.WriteMsg(hpRPCCall(9, hpProcNull, nil)); err != nil {
		t.Fatal(err)
	}
	_ = peer.next()
	peer.sendMsg(rpcrdma2.AppendError(nil, 9, 8, rpcrdma2.Error{Code: rpcrdma2.ErrReplyResource, LengthNeeded: 9000}))
	_, err = cli.ReadMsg(make([]byte, 1024))
	var re *RemoteError
	if !errors.As(err, &re) || re.XID != 9 || re.Code != uint32(rpcrdma2.ErrReplyResource) {
		t.Fatalf("ReadMsg: %v, want a RemoteError RDMA2_ERR_REPLY_RESOURCE for xid 9", err)
	}
	if got := re.Error(); got != "rpcrdma: responder sent RDMA2_ERR_REPLY_RESOURCE for xid 0x9" {
		t.Fatalf("%q", got)
	}
	wantStat(t, "RemoteErrors", cli.Stats().RemoteErrors, 1)
}

// v2Answer is a raw responder's version 2 answer to our RDMA2_CONNPROP
// granting 8 credits, with props.
func v2Answer(props rpcrdma2.Properties) func(h *rpcrdma2.Header) []byte {
	return func(h *rpcrdma2.Header) []byte {
		r := rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: h.XID, Vers: 2, Credit: 8, Type: rpcrdma2.HTypeConnProp, Flags: rpcrdma2.FlagResponse},
			Props: props}
		return r.Append(nil)
	}
}

// v2ReplyMsg is an inline version 2 reply to xid with flags and rpc.
func v2ReplyMsg(xid, flags uint32, rpc []byte) []byte {
	h := rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: xid, Vers: 2, Credit: 8, Type: rpcrdma2.HTypeMsg, Flags: flags}}
	return append(h.Append(nil), rpc...)
}

// TestVersion2RequesterHostile: a raw responder that negotiated version 2
// and then sends what a conforming one would not. Each case says what our
// requester must do; the connection survives unless the case says it
// must not.
func TestVersion2RequesterHostile(t *testing.T) {
	// call sends a NULL call with xid and returns it as the responder got it.
	call := func(t *testing.T, cli *Conn, peer *hpPeer, xid uint32) {
		t.Helper()
		if err := cli.WriteMsg(hpRPCCall(xid, hpProcNull, nil)); err != nil {
			t.Fatal(err)
		}
		var h rpcrdma2.Header
		if _, err := h.ParseCall(peer.next(), nil); err != nil || h.XID != xid {
			t.Fatalf("the call %#x: %v, %+v", xid, err, h.Prefix)
		}
	}
	// answered requires the next reply read to be xid's, with err.
	answered := func(t *testing.T, cli *Conn, xid uint32, want error) {
		t.Helper()
		msg, err := cli.ReadMsg(make([]byte, 4096))
		if want == nil && err != nil || want != nil && !errors.Is(err, want) || len(msg) < 4 || binary.BigEndian.Uint32(msg) != xid {
			t.Fatalf("ReadMsg: %x, %v; want xid %#x with %v", msg[:min(len(msg), 16)], err, xid, want)
		}
	}
	ok := func(xid uint32) []byte {
		return v2ReplyMsg(xid, rpcrdma2.FlagResponse, hpRPCReply(xid, xdr.AcceptSuccess, nil))
	}
	for _, tc := range []struct {
		name, want string
		run        func(t *testing.T, cli *Conn, peer *hpPeer)
	}{
		{"version-1-reply", "a version 1 reply to a call of a version 2 connection fails that call (ErrBadReply)",
			func(t *testing.T, cli *Conn, peer *hpPeer) {
				call(t, cli, peer, 1)
				peer.sendMsg(hpMsg(1, 8, hpRPCReply(1, xdr.AcceptSuccess, nil)))
				answered(t, cli, 1, ErrBadReply)
				wantStat(t, "BadReplies", cli.Stats().BadReplies, 1)
			}},
		{"reply-without-f-response", "a reply without RPCRDMA2_F_RESPONSE is a reverse call: dropped (no handler), the call still waits for its reply",
			func(t *testing.T, cli *Conn, peer *hpPeer) {
				call(t, cli, peer, 2)
				peer.sendMsg(v2ReplyMsg(2, 0, hpRPCReply(2, xdr.AcceptSuccess, nil)))
				peer.sendMsg(ok(2))
				answered(t, cli, 2, nil)
				wantStat(t, "ReverseDropped", cli.Stats().ReverseDropped, 1)
			}},
		{"reserved-flags", "a reply with reserved flag bits set is taken (the draft: ignored by receivers)",
			func(t *testing.T, cli *Conn, peer *hpPeer) {
				call(t, cli, peer, 3)
				peer.sendMsg(v2ReplyMsg(3, rpcrdma2.FlagResponse|0x8000_0000, hpRPCReply(3, xdr.AcceptSuccess, nil)))
				answered(t, cli, 3, nil)
			}},
		{"unknown-xid", "a reply and an RDMA2_ERROR for no call in flight are dropped and counted (BadXIDs)",
			func(t *testing.T, cli *Conn, peer *hpPeer) {
				peer.sendMsg(ok(77))
				peer.sendMsg(rpcrdma2.AppendError(nil, 78, 8, rpcrdma2.Error{Code: rpcrdma2.ErrBadXDR}))
				call(t, cli, peer, 4)
				peer.sendMsg(ok(4))
				answered(t, cli, 4, nil)
				wantStat(t, "BadXIDs", cli.Stats().BadXIDs, 2)
			}},
		{"connprop-flood", "100 RDMA2_CONNPROPs after the negotiation, 4 between calls (within our Receives), the last with Receive Buffer Size 2048: all taken, the inline threshold lowered",
			func(t *testing.T, cli *Conn, peer *hpPeer) {
				for i := range 100 {
					props := rpcrdma2.Properties{rpcrdma2.ReceiveBufferSize(uint32(4096 - 20*i))}
					if i == 99 {
						props = rpcrdma2.Properties{rpcrdma2.ReceiveBufferSize(2048)}
					}
					peer.sendMsg(v2Answer(props)(&rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: uint32(1000 + i)}}))
					if i%4 == 3 {
						xid := uint32(100 + i)
						call(t, cli, peer, xid)
						peer.sendMsg(ok(xid))
						answered(t, cli, xid, nil)
					}
				}
				if n := cli.Stats().Negotiated.SendInline; n != 2048 {
					t.Fatalf("SendInline %d after the flood, want 2048", n)
				}
				wantStat(t, "BadReplies", cli.Stats().BadReplies, 0)
			}},
		{"connprop-with-invalidate", "an RDMA2_CONNPROP sent with Send With Invalidate ends the connection (the rkey is none of ours: the provider fails the Receive)",
			func(t *testing.T, cli *Conn, peer *hpPeer) {
				peer.sendInv(v2Answer(nil)(&rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: 9}}), 0x1234)
				peer.waitDown()
				_ = cli.SetReadDeadline(time.Now().Add(hpGuard))
				if _, err := cli.ReadMsg(nil); err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
					t.Fatalf("ReadMsg after: %v, want the connection's end", err)
				}
			}},
		{"error-code-unknown", "an RDMA2_ERROR with a code the draft does not define fails its call with that code",
			func(t *testing.T, cli *Conn, peer *hpPeer) {
				call(t, cli, peer, 7)
				peer.sendMsg(hpWords(7, 2, 8, 4, 1, 99))
				var re *RemoteError
				_, err := cli.ReadMsg(make([]byte, 4096))
				if !errors.As(err, &re) || re.Code != 99 || re.XID != 7 {
					t.Fatalf("ReadMsg: %v, want a RemoteError with code 99", err)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Log(hpDescribe(tc.name, tc.want))
				}
			}()
			cli, peer, err := dialRawV2(t, Config{}, v2Answer(nil))
			if err != nil {
				t.Fatal(err)
			}
			tc.run(t, cli, peer)
		})
	}
}
