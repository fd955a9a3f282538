package main

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// closedEntryMaxBytes bounds the heap the table keeps for a closed
// connection: its addresses, times and counters.
const closedEntryMaxBytes = 1536

// liveHeap returns the live heap after two collections (objects with
// finalizers, sockets, take the second).
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// TestConnTableClosedMemory (issue 36): the table keeps its closed
// connections as records of their counters. n server-side connections,
// each having served a call, are entered and closed; the heap the table
// keeps for them (what dropping the table frees) is at most
// closedEntryMaxBytes each, and their final Stats are still there.
func TestConnTableClosedMemory(t *testing.T) {
	const n = 64
	prov := &soft.Provider{}
	l, err := transport.Listen("127.0.0.1:0", &transport.Config{Provider: prov})
	require.NoError(t, err)
	defer l.Close()
	goroutines := runtime.NumGoroutine() // the listener's own included
	table := &connTable{}
	for i := range n {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		c, err := transport.Dial(ctx, l.Addr().String(), &transport.Config{Provider: prov})
		cancel()
		require.NoError(t, err, "Dial %d", i)
		srv, err := l.AcceptRDMA()
		require.NoError(t, err)
		table.add(srv)
		served := make(chan error, 1)
		go func() {
			if _, err := srv.ReadMsg(nil); err != nil {
				served <- err
				return
			}
			served <- srv.WriteMsg((&xdr.ReplyHeader{XID: 1, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}).Append(nil))
		}()
		ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
		_, err = c.Call(ctx, nullCall(), nil)
		cancel()
		require.NoError(t, err, "call %d", i)
		require.NoError(t, <-served)
		_ = c.Close()
		_ = srv.Close()
	}
	require.Eventually(t, func() bool {
		for _, e := range table.snapshot() {
			if _, closed := e.Times(); closed.IsZero() {
				return false
			}
		}
		return true
	}, 10*time.Second, time.Millisecond, "every entry seen closed")
	for _, e := range table.snapshot() {
		st := e.Stats()
		require.EqualValues(t, 1, st.Recvs, "a closed entry's calls received")
		require.NotNil(t, e.RemoteAddr())
	}
	// Let the connections' goroutines end before measuring: while one
	// runs, what it references is live with or without the table.
	for end := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > goroutines; time.Sleep(time.Millisecond) {
		require.True(t, time.Now().Before(end), "goroutines: %d, %d before the connections", runtime.NumGoroutine(), goroutines)
	}
	withTable := liveHeap()
	runtime.KeepAlive(table)
	table = nil
	without := liveHeap()
	per := (int64(withTable) - int64(without)) / n
	t.Logf("the table keeps %d B for a closed connection (bound %d)", per, closedEntryMaxBytes)
	require.LessOrEqual(t, per, int64(closedEntryMaxBytes), "heap kept per closed connection")
}
