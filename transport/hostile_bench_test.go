package transport

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// BenchmarkHostileErrChunk measures what one malformed call (RDMA_MSGP)
// costs our responder: the Receive, the parse, the ERR_CHUNK Send and the
// repost, as a flood of bad headers would make it pay. The allocations
// include the raw peer's (its posting slices and its copy of the reply).
func BenchmarkHostileErrChunk(b *testing.B) {
	l, err := Listen("127.0.0.1:0", &Config{Provider: &soft.Provider{}})
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	acc := make(chan *Conn, 1)
	go func() {
		c, _ := l.AcceptRDMA()
		acc <- c
	}()
	peer := hpDial(b, l.Addr().String(), hpLinuxClientPD)
	defer peer.vc.Close()
	srv := <-acc
	if srv == nil {
		b.Fatal("accept failed")
	}
	defer srv.Close()
	msg := hpHeader(1).proc(chunks.ProcMsgp).lists(0, 0, 0, 0, 0).bytes()
	b.ReportAllocs()
	for b.Loop() {
		peer.sendMsg(msg)
		if m := peer.next(); len(m) != chunks.ErrChunkSize {
			b.Fatalf("got %d bytes, want an ERR_CHUNK", len(m))
		}
	}
}

// BenchmarkHostileFailedReply measures a call whose reply breaks the
// protocol (its RPC XID differs from rdma_xid): our requester fails it with
// a synthesized SYSTEM_ERR reply and an error wrapping ErrBadReply, as
// TestHostileResponder's xid/rpc-xid-differs-from-rdma-xid requires. The
// allocations include the raw peer's.
func BenchmarkHostileFailedReply(b *testing.B) {
	vl, err := (&soft.Provider{}).Listen("127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer vl.Close()
	acc := hpAccept(b, vl, hpLinuxServerPD)
	ctx, cancel := context.WithTimeout(context.Background(), hpGuard)
	defer cancel()
	cli, err := Dial(ctx, vl.Addr().String(), &Config{Provider: &soft.Provider{}, Binding: hpBinding{}, Credits: 8})
	if err != nil {
		b.Fatal(err)
	}
	defer cli.Close()
	var a hpAccepted
	select {
	case a = <-acc:
	case <-time.After(hpGuard):
	}
	if a.peer == nil {
		b.Fatal("the raw responder did not accept", a.err)
	}
	defer a.peer.vc.Close()
	call := hpRPCCall(1, hpProcNull, nil)
	bad := hpMsg(1, 8, hpRPCReply(2, xdr.AcceptSuccess, nil))
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		if err := cli.WriteMsg(call); err != nil {
			b.Fatal(err)
		}
		a.peer.next()
		a.peer.sendMsg(bad)
		buf, err = cli.ReadMsg(buf)
		if !errors.Is(err, ErrBadReply) {
			b.Fatalf("ReadMsg: error %v, want one wrapping ErrBadReply", err)
		}
		var rh xdr.ReplyHeader
		if _, uerr := rh.Unmarshal(buf); uerr != nil || rh.XID != 1 || rh.Stat != xdr.MsgAccepted || rh.AcceptStat != xdr.AcceptSystemErr {
			b.Fatalf("reply %+v (%v), want xid 0x1 SYSTEM_ERR", rh, uerr)
		}
	}
}
