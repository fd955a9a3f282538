package transport

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
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
	vl, err := (&soft.Provider{}).Listen("127.0.0.1:0")
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
	cfg.Provider, cfg.OfferVersion2, cfg.Binding, cfg.Credits = &soft.Provider{}, true, hpBinding{}, 8
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
