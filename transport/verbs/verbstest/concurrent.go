package verbstest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// testConcurrentPostPollClose: one goroutine posts 64 KiB RDMA Writes
// while another polls and waits, as a transport's posting goroutine and
// poll loop do (verbs.Conn: posting and polling may be called from any
// goroutine), and Close comes from a third while both are busy. Every
// completion before Close is a success and names a posted request once;
// Close returns while the others may be inside PostSend or Wait; both then
// end, PostSend with an error; nothing panics or hangs (a provider that
// posts outside its connection's lock, as rdmacore does, must not free
// the queue pair under a post).
func testConcurrentPostPollClose(t *testing.T, env Env) {
	const size = 64 << 10
	const depth = 8
	caps := verbs.QueueCaps{SendQueue: depth, RecvQueue: 1, MaxSGE: 1, ReadDepth: 1}
	var cr, sr verbs.Region
	client, server := connect(t, env,
		&verbs.ConnOptions{Caps: caps, Setup: RecvSetup(&cr, size, 0, 0)},
		&verbs.ConnOptions{Caps: caps, Setup: RecvSetup(&sr, size, 0, 0)})
	win := expose(t, server, sr, 0, size, rw)

	var (
		mu       sync.Mutex
		posted   = map[uint64]bool{}
		inFlight atomic.Int32
		done     atomic.Int32 // successful completions
		closed   atomic.Bool
		wg       sync.WaitGroup
	)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var postErr, pollErr error
	wg.Add(2)
	go func() { // the posting goroutine
		defer wg.Done()
		for id := uint64(1); ; id++ {
			for inFlight.Load() >= depth {
				if closed.Load() || ctx.Err() != nil {
					break
				}
				time.Sleep(50 * time.Microsecond)
			}
			mu.Lock()
			posted[id] = true
			mu.Unlock()
			inFlight.Add(1)
			if err := client.PostSend([]verbs.WorkRequest{writeWR(id, cr, 0, size, win, 0)}); err != nil {
				inFlight.Add(-1)
				postErr = err
				return
			}
		}
	}()
	go func() { // the poll loop
		defer wg.Done()
		cs := make([]verbs.Completion, 4)
		for {
			n, err := client.Poll(cs)
			if err != nil {
				pollErr = err
				return
			}
			for _, c := range cs[:n] {
				mu.Lock()
				ok := posted[c.ID]
				delete(posted, c.ID)
				mu.Unlock()
				if !ok {
					pollErr = errors.New("a completion for a request not posted, or twice")
					return
				}
				inFlight.Add(-1)
				if c.Err() == nil {
					done.Add(1)
				} else if !closed.Load() {
					pollErr = c.Err()
					return
				}
			}
			if n == 0 {
				if err := client.Wait(ctx); err != nil {
					pollErr = err
					return
				}
			}
		}
	}()
	// Close once both are in full swing.
	for done.Load() < 4*depth && ctx.Err() == nil {
		time.Sleep(time.Millisecond)
	}
	require.NoError(t, ctx.Err(), "no traffic before Close: %d Writes completed", done.Load())
	closed.Store(true)
	require.NoError(t, client.Close())
	finished := make(chan struct{})
	go func() { wg.Wait(); close(finished) }()
	select {
	case <-finished:
	case <-time.After(timeout):
		t.Fatal("the posting goroutine or the poll loop did not end after Close")
	}
	require.Error(t, postErr, "PostSend after Close")
	assert.Error(t, pollErr, "Poll or Wait after Close")
	assert.NotErrorIs(t, pollErr, context.DeadlineExceeded)
	t.Logf("%d Writes of 64 KiB completed before Close; PostSend: %v; Poll/Wait: %v", done.Load(), postErr, pollErr)
}
