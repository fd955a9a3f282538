package transport

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestSlowAndUnansweredReplies: a call whose reply the server posts later
// than Config.SlowReply is counted in SlowReplies, a prompt one is not,
// and a call the connection closes on before its reply is counted in
// Unanswered, once.
func TestSlowAndUnansweredReplies(t *testing.T) {
	const bound = 20 * time.Millisecond
	l, err := Listen("127.0.0.1:0", softConfig(&Config{SlowReply: bound}))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan *Conn, 1)
	go func() {
		c, err := l.AcceptRDMA()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	client, err := Dial(ctx, l.Addr().String(), softConfig(nil))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	srv := <-accepted
	if srv == nil {
		t.Fatal("accept failed")
	}
	reply := func(xid uint32) []byte {
		rh := xdr.ReplyHeader{XID: xid, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}
		return rh.Append(nil)
	}
	roundTrip := func(xid uint32, delay time.Duration) {
		t.Helper()
		if err := client.WriteMsg(appendCall(nil, xid, 0)); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.ReadMsg(nil); err != nil {
			t.Fatal(err)
		}
		time.Sleep(delay) // at least delay: the bound is then passed or not
		if err := srv.WriteMsg(reply(xid)); err != nil {
			t.Fatal(err)
		}
		if _, err := client.ReadMsg(nil); err != nil {
			t.Fatal(err)
		}
	}
	roundTrip(1, 0) // prompt, unless the host is starved: not asserted
	base := srv.Stats().SlowReplies
	roundTrip(2, 10*bound)
	if got := srv.Stats().SlowReplies; got != base+1 {
		t.Errorf("SlowReplies %d after a reply held %v with a bound of %v, want %d", got, 10*bound, bound, base+1)
	}

	// A call read and never answered, then the connection closes.
	if err := client.WriteMsg(appendCall(nil, 3, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.ReadMsg(nil); err != nil {
		t.Fatal(err)
	}
	if err := srv.Close(); err != nil {
		t.Fatal(err)
	}
	st := srv.Stats()
	if st.Unanswered != 1 {
		t.Errorf("Unanswered %d after closing on one call, want 1", st.Unanswered)
	}
	t.Logf("server stats: Sends %d Recvs %d SlowReplies %d Unanswered %d", st.Sends, st.Recvs, st.SlowReplies, st.Unanswered)
}

// TestSlowInlineReply: the reply of a call served on the poll loop
// (SetInlineHandler) is timed too, though the loop reads the clock once
// per run of inline calls: a call its handler holds past
// Config.SlowReply is counted in SlowReplies.
func TestSlowInlineReply(t *testing.T) {
	const bound = 20 * time.Millisecond
	var read atomic.Int64
	var eh *echoInline
	c := inlinePair(t, &Config{Binding: testBinding{}, SlowReply: bound}, func(c *Conn) InlineHandler {
		eh = &echoInline{c: c, hold: make(chan struct{}), entered: make(chan struct{})}
		return eh
	}, &read)
	done := make(chan error, 1)
	go func() {
		_, err := c.Call(t.Context(), appendCall(nil, 1, 0), nil)
		done <- err
	}()
	<-eh.entered
	time.Sleep(10 * bound) // at least: the bound is passed
	eh.hold <- struct{}{}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := eh.c.Stats().SlowReplies; got != 1 {
		t.Errorf("SlowReplies %d after an inline reply held %v with a bound of %v, want 1", got, 10*bound, bound)
	}
	if read.Load() != 0 || eh.served.Load() != 1 {
		t.Errorf("%d calls read, %d served inline; want the one inline", read.Load(), eh.served.Load())
	}
}
