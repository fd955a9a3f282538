package transport

import (
	"context"
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
