//go:build e2eguest && linux && cgo

// The stuck-peer test of issue 29 on real verbs: it runs inside the
// project's Soft-RoCE VM, started by e2e/rdmacore_stuck_test.go, over
// rdma-core between rxe1 (10.0.0.2, the requester) and rxe0 (10.0.0.1,
// the responder), where rxe's own transport timer applies.

package transport

import (
	"context"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// ipLink sets the state of a guest netdev.
func ipLink(t *testing.T, dev, state string) {
	t.Helper()
	if out, err := exec.Command("ip", "link", "set", "dev", dev, state).CombinedOutput(); err != nil {
		t.Fatalf("ip link set %s %s: %v: %s", dev, state, err, out)
	}
}

// TestRdmacoreStuckRead: a requester sends two calls of 1 MiB through
// Read chunks; our responder, whose Calls budget holds one, pulls the
// first. Then the requester's link goes silent (its veth goes down:
// nothing it would answer reaches us) and the RPC server reads the first
// call, which lets the responder pull the second: that RDMA Read is never
// answered (or, if the first one's was still in flight, that one is not).
// rxe's transport timer must fail it with IBV_WC_RETRY_EXC_ERR; the
// connection then fails, the RPC server's ReadMsg returns an error
// wrapping verbs.ErrRetryExceeded, and once it closed the connection the
// Listener's budgets are back to zero.
func TestRdmacoreStuckRead(t *testing.T) {
	const guard = 3 * time.Minute
	l, err := Listen("10.0.0.1:0", &Config{Provider: &rdmacore.Provider{},
		Memory: MemoryLimits{Calls: DefaultMaxRPCSize}})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan *Conn, 1)
	go func() {
		if c, err := l.AcceptRDMA(); err == nil {
			accepted <- c
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	cli, err := Dial(ctx, l.Addr().String(), &Config{Provider: &rdmacore.Provider{LocalAddr: "10.0.0.2"},
		Reconnect: ReconnectPolicy{CallTimeout: -1}})
	if err != nil {
		t.Fatal(err)
	}
	linkDown := false
	defer func() {
		if linkDown {
			ipLink(t, "veth1", "up")
		}
		_ = cli.Close()
	}()
	var srv *Conn
	select {
	case srv = <-accepted:
	case <-time.After(guard):
		t.Fatal("no connection accepted")
	}
	defer srv.Close()

	// A first call and its reply: the requester starts from a credit
	// limit of 1 (RFC 8166 §3.3.3), the reply grants more.
	first := make(chan error, 1)
	go func() { _, err := cli.Call(ctx, hpRPCCall(1, hpProcNull, nil), nil); first <- err }()
	if _, err := srv.ReadMsg(nil); err != nil {
		t.Fatal(err)
	}
	if err := srv.WriteMsg(hpRPCReply(1, xdr.AcceptSuccess, nil)); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		go func() { _, _ = cli.Call(ctx, hpRPCCall(uint32(100+i), hpProcNull, hpPattern(1<<20, byte(i))), nil) }()
	}
	// Both calls arrived, the first one's chunk is being pulled or was.
	deadline := time.Now().Add(guard)
	for srv.Stats().Recvs < 3 || l.Stats().CallBytes < 1<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("calls not received: %+v, listener %+v", srv.Stats(), l.Stats())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Not an assertion: most likely the first Read has completed by now;
	// either way one RDMA Read is left unanswered.
	time.Sleep(time.Second)
	ipLink(t, "veth1", "down")
	linkDown = true
	start := time.Now()

	errc := make(chan error, 1)
	go func() {
		for {
			if _, err := srv.ReadMsg(nil); err != nil {
				errc <- err
				return
			}
			t.Log("the first call was read: the second call's RDMA Read goes out on the silent link")
		}
	}()
	select {
	case err = <-errc:
	case <-time.After(guard):
		t.Fatalf("the stuck RDMA Read did not fail within %v: listener %+v", guard, l.Stats())
	}
	failed := time.Since(start)
	if !errors.Is(err, verbs.ErrRetryExceeded) {
		t.Fatalf("ReadMsg: %v, want an error wrapping verbs.ErrRetryExceeded", err)
	}
	_ = srv.Close()
	// The deadline counts from here: the wait above may have used most
	// of the previous one on a busy host.
	deadline = time.Now().Add(guard)
	for s := l.Stats(); s.Conns != 0 || s.CallBytes != 0 || s.ReplyBytes != 0; s = l.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("after the failure: %+v", s)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("stuck RDMA Read failed %v after the link went silent (%v); connection closed, listener budgets back to 0", failed.Round(time.Millisecond), err)
}
