package soft

import (
	"context"
	"errors"
	"net"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// pendingOf returns the places taken in l's backlog.
func pendingOf(l verbs.Listener) int {
	sl := l.(*listener)
	sl.mu.Lock()
	defer sl.mu.Unlock()
	return sl.pending
}

// waitPending waits until l's backlog holds n.
func waitPending(t *testing.T, l verbs.Listener, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return pendingOf(l) == n }, 10*time.Second, time.Millisecond,
		"backlog: %d, want %d", pendingOf(l), n)
}

// TestListenerBacklogBounded: silent connections (TCP, never a connect
// request) and connect requests nobody takes fill at most listenBacklog
// places, each with at most one goroutine. A connect request beyond them
// takes the place of the oldest silent connection, which is closed; once
// every place holds a request read, a further one is rejected at once.
// Every place comes back once its request is taken.
func TestListenerBacklogBounded(t *testing.T) {
	before := runtime.NumGoroutine()
	ln, err := (&Provider{}).Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	addr := ln.Addr().String()

	// Half the backlog silent, half connect requests left in the queue.
	var silent []net.Conn
	defer func() {
		for _, nc := range silent {
			_ = nc.Close()
		}
	}()
	for range listenBacklog / 2 {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		silent = append(silent, nc)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var queued []*HalfOpen
	defer func() {
		for _, h := range queued {
			_ = h.Close()
		}
	}()
	dialQueued := func(n int) {
		for range n {
			h, err := DialHalfOpen(ctx, addr, []byte{1, 2, 3})
			require.NoError(t, err)
			queued = append(queued, h)
		}
	}
	dialQueued(listenBacklog - listenBacklog/2)
	waitPending(t, ln, listenBacklog)
	waitQueued := func(n int) {
		require.Eventually(t, func() bool { return len(ln.(*listener).reqs) == n }, 10*time.Second, time.Millisecond,
			"queued %d, want %d", len(ln.(*listener).reqs), n)
	}
	waitQueued(len(queued))
	// One goroutine per silent connection, none per queued request (the
	// accept loop is the listener's own).
	require.LessOrEqual(t, runtime.NumGoroutine(), before+len(silent)+1+4)

	// Requests beyond the backlog take the silent connections' places.
	dialQueued(len(silent))
	waitQueued(listenBacklog)
	require.Equal(t, listenBacklog, pendingOf(ln))
	for _, nc := range silent {
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := nc.Read(make([]byte, 1))
		var ne net.Error
		require.False(t, err == nil || errors.As(err, &ne) && ne.Timeout(), "evicted silent connection: read %v, want its end", err)
	}

	// Over a backlog of requests read: a flood of rejects, each at once.
	for range 3 * listenBacklog {
		h, err := DialHalfOpen(ctx, addr, nil)
		require.NoError(t, err)
		start := time.Now()
		err = h.Await(ctx)
		_ = h.Close()
		var rej *verbs.RejectedError
		require.ErrorAs(t, err, &rej)
		require.Less(t, time.Since(start), time.Second)
	}
	_, err = (&Provider{}).Dial(ctx, addr, nil)
	require.ErrorIs(t, err, verbs.ErrRejected)
	require.LessOrEqual(t, runtime.NumGoroutine(), before+1+4)
	require.Equal(t, listenBacklog, pendingOf(ln))

	// The queued requests are taken.
	for range queued {
		r, err := ln.Accept(ctx)
		require.NoError(t, err)
		require.Equal(t, []byte{1, 2, 3}, r.PrivateData()[:3])
		require.NoError(t, r.Reject(nil))
	}
	require.Equal(t, 0, pendingOf(ln))
	for _, h := range queued {
		var rej *verbs.RejectedError
		require.ErrorAs(t, h.Await(ctx), &rej)
	}

	// Room again: a real dial gets through.
	accepted := make(chan error, 1)
	go func() {
		r, err := ln.Accept(ctx)
		if err == nil {
			var c verbs.Conn
			if c, err = r.Accept(ctx, nil); err == nil {
				<-c.Done()
				_ = c.Close()
			}
		}
		accepted <- err
	}()
	c, err := (&Provider{}).Dial(ctx, addr, nil)
	require.NoError(t, err)
	require.NoError(t, c.Close())
	require.NoError(t, <-accepted)
	require.NoError(t, ln.Close())
	for _, h := range queued {
		_ = h.Close()
	}
	queued = nil
	settle(t, before)
}

// TestListenerSilentFlood: 1,000 silent connections hold at most
// listenBacklog places and goroutines, and a dialer after them still gets
// its request through.
func TestListenerSilentFlood(t *testing.T) {
	before := runtime.NumGoroutine()
	ln, err := (&Provider{}).Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	addr := ln.Addr().String()
	var silent []net.Conn
	defer func() {
		for _, nc := range silent {
			_ = nc.Close()
		}
	}()
	for range 1000 {
		nc, err := net.Dial("tcp", addr)
		require.NoError(t, err)
		silent = append(silent, nc)
	}
	waitPending(t, ln, listenBacklog)
	// The evicted connections' goroutines end as their reads fail.
	require.Eventually(t, func() bool { return runtime.NumGoroutine() <= before+listenBacklog+1+4 }, 10*time.Second, time.Millisecond,
		"%d goroutines, want at most %d", runtime.NumGoroutine(), before+listenBacklog+1+4)

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	accepted := make(chan error, 1)
	go func() {
		r, err := ln.Accept(ctx)
		if err == nil {
			var c verbs.Conn
			if c, err = r.Accept(ctx, nil); err == nil {
				<-c.Done()
				_ = c.Close()
			}
		}
		accepted <- err
	}()
	start := time.Now()
	c, err := (&Provider{}).Dial(ctx, addr, nil)
	require.NoError(t, err)
	t.Logf("dial after 1,000 silent connections: %v", time.Since(start))
	require.NoError(t, c.Close())
	require.NoError(t, <-accepted)
	require.NoError(t, ln.Close())
	for _, nc := range silent {
		_ = nc.Close()
	}
	silent = nil
	settle(t, before)
}

// TestListenerSilentPeerTimesOut: a connection that never sends its
// connect request loses its place after reqTimeout.
func TestListenerSilentPeerTimesOut(t *testing.T) {
	defer func(d time.Duration) { reqTimeout = d }(reqTimeout)
	reqTimeout = 100 * time.Millisecond
	before := runtime.NumGoroutine()
	ln, err := (&Provider{}).Listen("127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	var conns []net.Conn
	for range 10 {
		nc, err := net.Dial("tcp", ln.Addr().String())
		require.NoError(t, err)
		defer nc.Close()
		conns = append(conns, nc)
	}
	waitPending(t, ln, 0)
	for _, nc := range conns {
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		_, err := nc.Read(make([]byte, 1))
		require.Error(t, err, "the listener closed the connection")
		var ne net.Error
		require.False(t, errors.As(err, &ne) && ne.Timeout(), "closed, not timed out: %v", err)
	}
	require.NoError(t, ln.Close())
	settle(t, before)
}

// settle waits until no more than want goroutines run.
func settle(t *testing.T, want int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > want {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("%d goroutines left, want %d:\n%s", runtime.NumGoroutine(), want, buf)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
