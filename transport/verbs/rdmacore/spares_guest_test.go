//go:build e2eguest

package rdmacore_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
)

// spareCaps are the queues of the connections of TestSpareRegions.
var spareCaps = verbs.QueueCaps{SendQueue: 4, RecvQueue: 4, MaxSGE: 1, ReadDepth: 1}

// failedAccept accepts a half-open request (rdmacore.DialHalfOpen: no RTU
// ever comes) on ln, with a Setup that allocates a region of each of
// sizes, reports each through seen (before it writes to it) and fills it
// with 0xa5; the Accept must fail once its context ends, the connection
// never established.
func failedAccept(t *testing.T, ln verbs.Listener, seen func(i int, r verbs.Region), sizes ...int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	h, err := rdmacore.DialHalfOpen(ctx, ln.Addr().String(), clientIP, nil)
	require.NoError(t, err)
	defer h.Close()
	req, err := ln.Accept(ctx)
	require.NoError(t, err)
	actx, acancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer acancel()
	_, err = req.Accept(actx, &verbs.ConnOptions{Caps: spareCaps, Setup: func(c verbs.Conn) error {
		for i, size := range sizes {
			r, err := c.AllocRegion(size)
			if err != nil {
				return err
			}
			seen(i, r)
			for j := range r.Bytes() {
				r.Bytes()[j] = 0xa5
			}
		}
		return nil
	}})
	require.ErrorIs(t, err, context.DeadlineExceeded, "accepting a half-open request")
}

// TestSpareRegions: the regions of a connection that was never
// established (an Accept whose peer never sent its RTU) stay registered
// as spares, zeroed, and the next AllocRegion of the same size takes one
// instead of registering memory; a region of another size is registered
// anew; an established connection's regions, spare or not, are freed by
// its Close and never kept; and the spares are freed once unused for the
// pool's idle time, the provider back to nothing registered. The reuse
// is checked with an idle time of a minute, so that a slow handshake on a
// loaded host never sees its spare age out; the release with 1.5 s.
func TestSpareRegions(t *testing.T) {
	const size, other = 3 * 4096, 5000
	const idle = 1500 * time.Millisecond
	server := &rdmacore.Provider{}
	rdmacore.SetSpareIdle(server, time.Minute)
	client := &rdmacore.Provider{LocalAddr: clientIP}
	ln, err := server.Listen(listenAddr)
	require.NoError(t, err)
	defer ln.Close()

	var first uint64
	failedAccept(t, ln, func(_ int, r verbs.Region) { first = r.Addr(0) }, size)
	require.EqualValues(t, size, server.SpareBytes(), "spare after the failed handshake")
	require.EqualValues(t, size, server.RegisteredBytes(), "the spare stays registered")

	// The next handshake takes the spare, zeroed, and registers the
	// other size.
	var addrs [2]uint64
	failedAccept(t, ln, func(i int, r verbs.Region) {
		addrs[i] = r.Addr(0)
		if i == 0 {
			if !bytes.Equal(r.Bytes(), make([]byte, size)) {
				t.Errorf("the spare region was not cleared")
			}
			if got := server.SpareBytes(); got != 0 {
				t.Errorf("%d spare bytes once the spare is taken, want 0", got)
			}
		}
	}, size, other)
	kept := time.Now() // the spares of this handshake were kept before this
	require.Equal(t, first, addrs[0], "the region of the same size is the spare")
	require.NotEqual(t, first, addrs[1], "a region of another size is new")
	require.EqualValues(t, size+other, server.SpareBytes())
	require.EqualValues(t, size+other, server.RegisteredBytes())

	// An established connection takes the spare of its size; its Close
	// frees it rather than keeping it, and the client, whose connection
	// was established too, keeps nothing.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := dialPair(t, ctx, client, ln, spareCaps, size, 0, 0)
	require.Equal(t, first, p.sregion.Addr(0), "the established connection takes the spare")
	require.EqualValues(t, other, server.SpareBytes())
	require.NoError(t, p.client.Close())
	require.NoError(t, p.server.Close())
	require.EqualValues(t, other, server.SpareBytes(), "an established connection's region was kept")
	require.EqualValues(t, other, server.RegisteredBytes())
	require.Zero(t, client.SpareBytes())
	require.Zero(t, client.RegisteredBytes())

	// A spare is freed once unused for the idle time: one kept now, and
	// the one left, kept earlier, once the idle time is 1.5 s. (The
	// handshake takes its 500 ms deadline: the time it was kept is
	// between beforeLast and keptLast.)
	beforeLast := time.Now()
	failedAccept(t, ln, func(int, verbs.Region) {}, size)
	keptLast := time.Now()
	require.EqualValues(t, size+other, server.SpareBytes())
	rdmacore.SetSpareIdle(server, idle)
	// A trim takes the spares out of the pool (SpareBytes) first and
	// deregisters them (RegisteredBytes) after, outside the pool's lock:
	// wait for both.
	deadline := time.Now().Add(idle + 30*time.Second)
	for server.SpareBytes() != 0 || server.RegisteredBytes() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d spare bytes, %d registered %v after they were kept, idle time %v",
				server.SpareBytes(), server.RegisteredBytes(), time.Since(kept), idle)
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.GreaterOrEqual(t, time.Since(beforeLast), idle, "a spare freed before the idle time")
	t.Logf("spares freed %v to %v after the last was kept (idle time %v)",
		time.Since(keptLast).Round(time.Millisecond), time.Since(beforeLast).Round(time.Millisecond), idle)
}
