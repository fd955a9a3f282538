package transport

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestResponderWriteMsgConcurrent: a responder's WriteMsg does not wait for
// another goroutine's reply to be posted. The first reply's post is held
// (postQueue.afterPost) while a second goroutine writes its reply: the
// second WriteMsg returns with its work requests queued, and the first
// poster posts them when it goes on. Both replies reach the requester. A
// WriteMsg serialised behind the first (as Write is) never returns while
// the first is held, and the test fails.
func TestResponderWriteMsgConcurrent(t *testing.T) {
	cl, srv := loopbackPair(t, 10*time.Second)

	// One call and its reply first: the requester has one credit until
	// a reply grants more.
	require.NoError(t, cl.WriteMsg(appendCall(nil, 1, 0)))
	_, err := srv.ReadMsg(nil)
	require.NoError(t, err)
	require.NoError(t, srv.WriteMsg(appendReply(nil, 1)))
	_, err = cl.ReadMsg(nil)
	require.NoError(t, err)

	for _, xid := range []uint32{10, 11} {
		require.NoError(t, cl.WriteMsg(appendCall(nil, xid, 0)))
		msg, err := srv.ReadMsg(nil)
		require.NoError(t, err)
		got, _, err := xdr.PeekXID(msg)
		require.NoError(t, err)
		require.Equal(t, xid, got)
	}

	// Hold the next post once, after it posted its own batch.
	var armed atomic.Bool
	held, release := make(chan struct{}), make(chan struct{})
	srv.mu.Lock() // the flushing goroutines take srv.mu before they flush
	srv.ep.posts.afterPost = func() {
		if armed.CompareAndSwap(true, false) {
			close(held)
			<-release
		}
	}
	srv.mu.Unlock()
	armed.Store(true)

	var wg sync.WaitGroup
	errs := make(chan error, 2)
	wg.Go(func() { errs <- srv.WriteMsg(appendReply(nil, 10)) })
	rcRecvGuard(t, "the first reply's post", held)
	second := make(chan error, 1)
	go func() { second <- srv.WriteMsg(appendReply(nil, 11)) }()
	select {
	case err := <-second:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		close(release)
		t.Fatal("the second WriteMsg waited for the first reply's post")
	}
	close(release)
	wg.Wait()
	require.NoError(t, <-errs)

	seen := map[uint32]bool{}
	for range 2 {
		msg, err := cl.ReadMsg(nil)
		require.NoError(t, err)
		xid, _, err := xdr.PeekXID(msg)
		require.NoError(t, err)
		seen[xid] = true
	}
	require.Equal(t, map[uint32]bool{10: true, 11: true}, seen)
}

// TestResponderWriteMsgManyWriters: workers that each read a call and
// write its reply, all at once, answer every call of a requester that
// keeps its credits full, each reply to its own call.
func TestResponderWriteMsgManyWriters(t *testing.T) {
	const workers, calls = 8, 400
	cl, srv := loopbackPair(t, 60*time.Second)

	// The reply carries its call's procedure, which was made from the
	// XID.
	wg := replyWorkers(t, srv, workers, func(call []byte) ([]byte, error) {
		var c xdr.CallHeader
		if _, err := c.Unmarshal(call); err != nil {
			return nil, err
		}
		return xdr.AppendUint32(appendReply(nil, c.XID), c.Proc), nil
	}, func(err error) {
		if err != nil {
			t.Error(err)
		}
	})

	// Calls through Call, many at once, each checked against its reply.
	callers := callInParallel(16, func(xid uint32) error {
		if xid > calls {
			return errStop
		}
		reply, err := cl.Call(t.Context(), appendCall(nil, xid, xid*7), nil)
		if err != nil {
			return err
		}
		var rh xdr.ReplyHeader
		res, err := rh.Unmarshal(reply)
		if err != nil || rh.XID != xid || len(reply) != res+4 {
			return fmt.Errorf("call %d: reply %x (%v)", xid, reply, err)
		}
		r := xdr.NewReader(reply[res:])
		if p, _ := r.Uint32(); p != xid*7 {
			return fmt.Errorf("call %d: the reply of procedure %d", xid, p)
		}
		return nil
	}, func(err error) { t.Error(err) })
	callers.Wait()
	_ = cl.Close()
	_ = srv.Close()
	wg.Wait()
}

// TestResponderWriteMsgPeerGone: writers replying at once when the
// requester goes away mid-stream all return (with an error or not), none
// hangs, and the responder's Close completes: the writers waiting for room
// in the send queue are woken by the connection's loss.
func TestResponderWriteMsgPeerGone(t *testing.T) {
	const workers = 8
	cl, srv := loopbackPair(t, 30*time.Second)

	var replied atomic.Int64
	wg := replyWorkers(t, srv, workers, func(call []byte) ([]byte, error) {
		xid, _, err := xdr.PeekXID(call)
		return append(appendReply(nil, xid), make([]byte, 512)...), err
	}, func(err error) {
		if err == nil {
			replied.Add(1)
		}
	})
	callers := callInParallel(16, func(xid uint32) error {
		_, err := cl.Call(t.Context(), appendCall(nil, xid, 0), nil)
		return err
	}, func(error) {}) // the requester's Close ends the calls
	rcEventually(t, "replies flowing", func() bool { return replied.Load() > 100 })
	require.NoError(t, cl.Close())
	callers.Wait()
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("responder workers still blocked after the requester went away")
	}
	require.NoError(t, srv.Close())
}

// loopbackPair is netconvPair (soft provider, loopback) with a deadline
// d from now on both Conns.
func loopbackPair(t *testing.T, d time.Duration) (cl, srv *Conn) {
	t.Helper()
	cl, srv = netconvPair(t, nil, nil)
	deadline := time.Now().Add(d)
	_ = srv.SetDeadline(deadline)
	_ = cl.SetDeadline(deadline)
	return cl, srv
}

// replyWorkers starts n goroutines that each read calls from srv and write
// the reply reply makes of each, until a ReadMsg fails (the connection's
// end); written gets each WriteMsg's error. A call reply cannot answer
// fails the test and stops its worker.
func replyWorkers(t *testing.T, srv *Conn, n int, reply func(call []byte) ([]byte, error), written func(error)) *sync.WaitGroup {
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for {
				msg, err := srv.ReadMsg(nil)
				if err != nil {
					return
				}
				out, err := reply(msg)
				if err != nil {
					t.Error(err)
					return
				}
				written(srv.WriteMsg(out))
			}
		})
	}
	return &wg
}

// errStop ends a callInParallel goroutine without an error.
var errStop = errors.New("stop")

// callInParallel starts n goroutines that each take the next XID (from 1)
// and run call with it, until call returns an error; failed gets the
// errors other than errStop. It returns the group to wait on.
func callInParallel(n int, call func(xid uint32) error, failed func(error)) *sync.WaitGroup {
	var wg sync.WaitGroup
	var next atomic.Uint32
	for range n {
		wg.Go(func() {
			for {
				if err := call(next.Add(1)); err != nil {
					if !errors.Is(err, errStop) {
						failed(err)
					}
					return
				}
			}
		})
	}
	return &wg
}
