package soft

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// TestRetryTimerCountsTicksWithoutProgress drives the transport timer by
// hand (its own period is an hour here): the first tick after a request
// went out sets the mark, each later tick without progress counts a retry,
// an ACK of the oldest request is progress and starts the count again, and
// the tick after RetryCount retries fails the oldest request with
// StatusRetryExceeded, flushes the rest and tells the peer.
func TestRetryTimerCountsTicksWithoutProgress(t *testing.T) {
	c, f := dialFake(t, nil, 16)
	c.mu.Lock()
	c.retry.timeout = time.Hour
	limit := c.retry.limit
	c.mu.Unlock()
	require.Equal(t, DefaultRetryCount, limit)
	reg, err := c.AllocRegion(4096)
	require.NoError(t, err)
	write := func(id uint64) verbs.WorkRequest {
		return verbs.WorkRequest{ID: id, Op: verbs.OpRDMAWrite, RKey: 0x1234, RemoteAddr: 0x1000,
			SGL: []verbs.SGE{{Region: reg, Length: 1000}}}
	}
	require.NoError(t, c.PostSend([]verbs.WorkRequest{write(1), write(2)}))
	h1, _, _ := f.read()
	h2, _, _ := f.read()
	require.Equal(t, h1.Seq+1, h2.Seq)

	alive := func(what string) {
		t.Helper()
		select {
		case <-c.Done():
			t.Fatalf("%s: the queue pair failed: %v", what, c.Err())
		default:
		}
	}
	for i := range limit + 1 { // the mark, then RetryCount retries
		c.retryTick()
		alive(fmt.Sprintf("tick %d", i))
	}
	// The peer acknowledges the first Write: progress.
	f.frame(frameHeader{Type: frameAck, Seq: h1.Seq}, nil, 0)
	comp := nextCompletion(t, c)
	require.Equal(t, uint64(1), comp.ID)
	require.NoError(t, comp.Err())
	for range limit + 1 {
		c.retryTick()
		alive("after the ACK")
	}
	c.retryTick()
	waitDone(t, c)
	require.ErrorIs(t, c.Err(), verbs.ErrRetryExceeded)
	comp = nextCompletion(t, c)
	require.Equal(t, uint64(2), comp.ID)
	require.Equal(t, verbs.StatusRetryExceeded, comp.Status)
	h, _, _ := f.read()
	require.Equal(t, frameDisconnect, h.Type, "the peer is told")
}
