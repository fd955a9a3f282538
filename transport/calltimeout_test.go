package transport

import (
	"context"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestCallTimeoutReconnects: a responder that drops a call (never answers
// it) would hold the call's credit and XID forever; with CallTimeout the
// requester drops the connection as Linux does on an RPC timeout,
// reconnects and retransmits, and the call completes on the new
// connection.
func TestCallTimeoutReconnects(t *testing.T) {
	const callTimeout = 200 * time.Millisecond
	l, err := Listen("127.0.0.1:0", &Config{Provider: &soft.Provider{}, Credits: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	conns := make(chan *Conn, 4)
	go func() {
		for n := 0; ; n++ {
			c, err := l.AcceptRDMA()
			if err != nil {
				return
			}
			conns <- c
			go func(c *Conn, first bool) {
				_ = serveCalls(c, nil, nil, func(h *xdr.CallHeader, _, out []byte) ([]byte, bool, error) {
					// On the first connection, call 2 is dropped: no reply, ever.
					return out, !first || h.XID != 2, nil
				})
			}(c, n == 0)
		}
	}()
	c, err := Dial(context.Background(), l.Addr().String(), &Config{Provider: &soft.Provider{}, Reconnect: ReconnectPolicy{
		Enabled: true, Retransmit: true, Backoff: 10 * time.Millisecond, CallTimeout: callTimeout}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for xid := uint32(1); xid <= 3; xid++ {
		sent := time.Now()
		if err := c.WriteMsg(appendCall(nil, xid, 0)); err != nil {
			t.Fatal(err)
		}
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		reply, err := c.ReadMsg(nil)
		if err != nil {
			t.Fatalf("xid %d: %v", xid, err)
		}
		if got, _, _ := xdr.PeekXID(reply); got != xid {
			t.Fatalf("reply to xid %d, want %d", got, xid)
		}
		// Call 2 is answered only after the timeout dropped the
		// connection: never before CallTimeout.
		if waited := time.Since(sent); xid == 2 && waited < callTimeout {
			t.Errorf("call 2 answered after %v: the timeout (%v) came early", waited, callTimeout)
		}
	}
	s := c.Stats()
	if s.CallTimeouts != 1 || s.Reconnects != 1 {
		t.Errorf("CallTimeouts %d, Reconnects %d: want 1 and 1", s.CallTimeouts, s.Reconnects)
	}
	for range 2 {
		sc := <-conns
		_ = sc.Close()
	}
}
