package transport

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

// Tests of calls read in place: the responder keeps a call of at most one
// Read chunk in its Receive buffer and chunk memory until Read copies it
// out (callReadyLocked), so both must stay the call's until then.

// TestCallsReadInPlace queues calls of every form (inline, a DDP Read
// chunk, a Long Call), reads and answers one of them, which posts a
// Receive again, and sends two more, which land in the Receive buffers and
// chunk memory free by then (five credits: the second one needs the
// Receive just posted): every queued call must still read as sent. Were a
// queued call's Receive buffer or chunk memory freed before Read took it,
// the new calls would overwrite it.
func TestCallsReadInPlace(t *testing.T) {
	b := testBinding{ddp: true}
	cl, srv := netconvPair(t, &Config{Binding: b, Credits: 5}, &Config{Binding: b})
	deadline := time.Now().Add(20 * time.Second)
	_ = cl.SetDeadline(deadline)
	_ = srv.SetDeadline(deadline)

	// One call and its reply first: the requester has one credit until a
	// reply grants more.
	roundTrip := func(xid uint32) {
		t.Helper()
		if err := cl.WriteMsg(appendCall(nil, xid, 0)); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.ReadMsg(nil); err != nil {
			t.Fatal(err)
		}
		if err := srv.WriteMsg(appendReply(nil, xid)); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.ReadMsg(nil); err != nil {
			t.Fatal(err)
		}
	}
	roundTrip(1)

	// The DDP call last: its RDMA Reads complete after the Long Call's,
	// so that it is the last call ready, whose Receive buffer and chunk
	// memory a responder that freed them too early would use first.
	first := [][]byte{
		append(appendCall(nil, 10, 0), pattern(300, 10)...),    // inline
		append(appendCall(nil, 11, 0), pattern(64<<10, 11)...), // Long Call
		append(appendCall(nil, 12, 0), pattern(900, 12)...),    // inline
		writeCall(13, 64<<10),                                  // DDP Read chunk
	}
	var sent [][]byte
	send := func(msgs [][]byte) {
		t.Helper()
		for _, m := range msgs {
			if err := cl.WriteMsg(m); err != nil {
				t.Fatal(err)
			}
			sent = append(sent, m)
		}
	}
	send(first)
	waitQueued(t, srv, len(first))
	// Calls are queued as their data arrives, not in the order sent:
	// each is matched by its XID.
	byXID := func() map[uint32][]byte {
		m := make(map[uint32][]byte)
		for _, msg := range sent {
			m[binary.BigEndian.Uint32(msg)] = msg
		}
		return m
	}
	readAs := func(t *testing.T, want map[uint32][]byte) uint32 {
		t.Helper()
		got, err := srv.ReadMsg(nil)
		if err != nil {
			t.Fatal(err)
		}
		xid := binary.BigEndian.Uint32(got)
		if !bytes.Equal(got, want[xid]) {
			t.Fatalf("call %d of %d bytes read as %d bytes that differ", xid, len(want[xid]), len(got))
		}
		delete(want, xid)
		return xid
	}
	want := byXID()
	xid := readAs(t, want)
	if err := srv.WriteMsg(appendReply(nil, xid)); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.ReadMsg(nil); err != nil {
		t.Fatal(err)
	}
	send([][]byte{append(appendCall(nil, 20, 0), pattern(600, 20)...), writeCall(21, 64<<10)})
	waitQueued(t, srv, len(first)-1+2)
	want = byXID()
	delete(want, xid)
	for len(want) > 0 {
		readAs(t, want)
	}
}

// TestCallsInPlaceOutliveEndpoint: calls queued in place when the
// connection is lost are copied out of the endpoint's memory before it is
// freed, and read as sent.
func TestCallsInPlaceOutliveEndpoint(t *testing.T) {
	b := testBinding{ddp: true}
	cl, srv := netconvPair(t, &Config{Binding: b}, &Config{Binding: b})
	deadline := time.Now().Add(20 * time.Second)
	_ = srv.SetDeadline(deadline)
	_ = cl.SetDeadline(deadline)
	msgs := [][]byte{writeCall(5, 64<<10)}
	if err := cl.WriteMsg(msgs[0]); err != nil {
		t.Fatal(err)
	}
	waitQueued(t, srv, 1)
	srv.mu.Lock()
	inPlace := srv.svcState.calls[srv.readQ.buf[srv.readQ.head]].inPlace
	srv.mu.Unlock()
	if !inPlace {
		t.Fatal("a call of one Read chunk was not queued in place")
	}
	closeAndWaitLost(t, cl, srv)
	srv.mu.Lock()
	for i := range srv.svcState.calls {
		if srv.svcState.calls[i].inPlace {
			srv.mu.Unlock()
			t.Fatalf("slot %d still in place after its endpoint went", i)
		}
	}
	srv.mu.Unlock()
	got, err := srv.ReadMsg(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msgs[0]) {
		t.Fatalf("call read as %d bytes that differ from the %d sent", len(got), len(msgs[0]))
	}
}

// closeAndWaitLost closes the requester cl and waits until the responder
// srv has seen its connection go.
func closeAndWaitLost(t *testing.T, cl, srv *Conn) {
	t.Helper()
	_ = cl.Close()
	if !haWait(func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		return srv.ep == nil
	}) {
		t.Fatal("the responder did not see the connection's loss")
	}
}

// waitQueued waits until srv has n calls queued for Read (their RDMA Reads
// done).
func waitQueued(t *testing.T, srv *Conn, n int) {
	t.Helper()
	q := 0
	if !haWait(func() bool {
		srv.mu.Lock()
		defer srv.mu.Unlock()
		q = srv.readQ.size
		return q == n
	}) {
		t.Fatalf("%d of %d calls queued", q, n)
	}
}
