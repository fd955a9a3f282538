package transport

import (
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// recordingConn is a verbs.Conn whose PostSend records the IDs it is given,
// checks that no two posts overlap, and can be made to fail.
type recordingConn struct {
	verbs.Conn
	mu      sync.Mutex
	ids     []uint64
	posts   int
	inPost  int
	overlap bool
	fail    error
}

func (r *recordingConn) PostSend(wrs []verbs.WorkRequest) error {
	r.mu.Lock()
	r.inPost++
	if r.inPost > 1 {
		r.overlap = true
	}
	fail := r.fail
	r.fail = nil
	r.mu.Unlock()
	runtime.Gosched() // a slow post: let the others queue behind it
	r.mu.Lock()
	defer r.mu.Unlock()
	r.inPost--
	if fail != nil {
		return fail
	}
	r.posts++
	for _, wr := range wrs {
		r.ids = append(r.ids, wr.ID)
		if len(wr.SGL) != 1 || wr.SGL[0].Offset != int(wr.ID) {
			r.overlap = true // a batch's SGE memory was reused too early
		}
	}
	return nil
}

// queueBatch builds one batch of n requests with IDs from *next on, as
// endpoint.post does under Conn.mu (here mu), and queues it.
func queueBatch(q *postQueue, cur *sendBatch, mu *sync.Mutex, next *uint64, n int) {
	queueBatchBulk(q, cur, mu, next, n, false)
}

// queueBatchBulk is queueBatch of a batch marked bulk or not.
func queueBatchBulk(q *postQueue, cur *sendBatch, mu *sync.Mutex, next *uint64, n int, bulk bool) {
	mu.Lock()
	defer mu.Unlock()
	cur.bulk = bulk
	for range n {
		i := len(cur.sges)
		cur.sges = append(cur.sges, verbs.SGE{Offset: int(*next)})
		cur.wrs = append(cur.wrs, verbs.WorkRequest{ID: *next, Op: verbs.OpSend, SGL: cur.sges[i : i+1 : i+1]})
		*next++
	}
	*cur = q.push(*cur)
}

// TestPostQueueOrder: batches queued by many goroutines are all posted, in
// the order they were queued, one post at a time, by whichever goroutine
// found the queue free, and each batch's memory is reused only after its
// post.
func TestPostQueueOrder(t *testing.T) {
	var q postQueue
	vc := &recordingConn{}
	var mu sync.Mutex // Conn.mu
	cur := newSendBatch()
	var next uint64
	const goroutines, batches = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range batches {
				queueBatch(&q, &cur, &mu, &next, 1+(g+i)%batchCap)
				require.NoError(t, flushInline(&q, vc))
			}
		}()
	}
	wg.Wait()
	// Every flush has returned: nothing may be left in the queue.
	assert.False(t, queued(&q))
	require.Len(t, vc.ids, int(next))
	for i, id := range vc.ids {
		if uint64(i) != id {
			t.Fatalf("posted out of order: request %d has ID %d", i, id)
		}
	}
	assert.False(t, vc.overlap, "posts overlapped or a batch's memory was reused before its post")
	assert.Less(t, vc.posts, goroutines*batches, "no post carried batches of other goroutines")
	t.Logf("%d requests in %d batches, %d posts", next, goroutines*batches, vc.posts)
}

// TestPostQueueError: a post that fails returns its error to the flush that
// made it and drops the rest of the queue (the connection ends); nothing of
// it is posted later.
func TestPostQueueError(t *testing.T) {
	var q postQueue
	boom := errors.New("boom")
	vc := &recordingConn{fail: boom}
	var mu sync.Mutex
	cur := newSendBatch()
	var next uint64
	queueBatch(&q, &cur, &mu, &next, 3)
	queueBatch(&q, &cur, &mu, &next, 2)
	require.ErrorIs(t, flushInline(&q, vc), boom)
	assert.False(t, queued(&q))
	assert.Empty(t, vc.ids)
	queueBatch(&q, &cur, &mu, &next, 1)
	require.NoError(t, flushInline(&q, vc))
	assert.Equal(t, []uint64{5}, vc.ids)
}

// TestPostQueueHandOff: a batch queued while another goroutine holds the
// queue, after that one found it empty, is posted by that one once it lets
// go: the goroutine that queued it returns at once and nothing is stranded.
func TestPostQueueHandOff(t *testing.T) {
	var q postQueue
	vc := &recordingConn{}
	var mu sync.Mutex
	cur := newSendBatch()
	var next uint64
	late := 0
	q.afterPost = func() {
		if late++; late > 1 {
			return
		}
		done := make(chan error)
		go func() {
			queueBatch(&q, &cur, &mu, &next, 2)
			done <- flushInline(&q, vc) // finds posting held: leaves the batch
		}()
		require.NoError(t, <-done)
		assert.True(t, queued(&q))
	}
	queueBatch(&q, &cur, &mu, &next, 1)
	require.NoError(t, flushInline(&q, vc))
	assert.False(t, queued(&q))
	assert.Equal(t, []uint64{0, 1, 2}, vc.ids)
	assert.Equal(t, 2, vc.posts)
}

// flushInline is the flush of a goroutine that built a batch (not the
// posting goroutine), which must find no bulk batch left.
func flushInline(q *postQueue, vc verbs.Conn) error {
	bulk, err := q.flush(vc, false)
	if bulk {
		return errors.New("a bulk batch was left")
	}
	return err
}

// queued reports whether batches wait in q.
func queued(q *postQueue) bool {
	left, _ := q.pending()
	return left
}

// TestPostQueueBulk: a goroutine that built a batch posts the queue up to
// the first bulk batch and reports it; the posting goroutine (mayBulk)
// posts the rest, in order.
func TestPostQueueBulk(t *testing.T) {
	var q postQueue
	vc := &recordingConn{}
	var mu sync.Mutex
	cur := newSendBatch()
	var next uint64
	queueBatchBulk(&q, &cur, &mu, &next, 2, false) // 0, 1
	queueBatchBulk(&q, &cur, &mu, &next, 1, true)  // 2
	queueBatchBulk(&q, &cur, &mu, &next, 1, false) // 3
	bulk, err := q.flush(vc, false)
	require.NoError(t, err)
	assert.True(t, bulk)
	assert.Equal(t, []uint64{0, 1}, vc.ids)
	// Only a bulk batch at the head: nothing posted inline.
	bulk, err = q.flush(vc, false)
	require.NoError(t, err)
	assert.True(t, bulk)
	assert.Equal(t, []uint64{0, 1}, vc.ids)
	bulk, err = q.flush(vc, true)
	require.NoError(t, err)
	assert.False(t, bulk)
	assert.Equal(t, []uint64{0, 1, 2, 3}, vc.ids)
	assert.False(t, queued(&q))
}

// TestPostQueueBulkConcurrent: goroutines queue batches, some bulk, and
// flush inline, waking a posting goroutine when one reports a bulk batch
// left, as endpoint.flush and postLoop do: everything is posted, in
// queue order, one post at a time.
func TestPostQueueBulkConcurrent(t *testing.T) {
	var q postQueue
	vc := &recordingConn{}
	var mu sync.Mutex
	cur := newSendBatch()
	var next uint64
	wake := make(chan struct{}, 1)
	stop := make(chan struct{})
	posterDone := make(chan struct{})
	go func() {
		defer close(posterDone)
		for {
			select {
			case <-wake:
			case <-stop:
				return
			}
			_, err := q.flush(vc, true)
			assert.NoError(t, err)
		}
	}()
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 150 {
				queueBatchBulk(&q, &cur, &mu, &next, 1+i%3, (g+i)%5 == 0)
				bulk, err := q.flush(vc, false)
				assert.NoError(t, err)
				if bulk {
					select {
					case wake <- struct{}{}:
					default:
					}
				}
			}
		}()
	}
	wg.Wait()
	// The posting goroutine finishes what is left.
	deadline := time.Now().Add(10 * time.Second) // a guard against hangs
	for queued(&q) || !q.posting.TryLock() {
		if time.Now().After(deadline) {
			t.Fatal("batches left unposted")
		}
		time.Sleep(time.Millisecond)
	}
	q.posting.Unlock()
	close(stop)
	<-posterDone
	vc.mu.Lock()
	defer vc.mu.Unlock()
	require.Len(t, vc.ids, int(next))
	for i, id := range vc.ids {
		if uint64(i) != id {
			t.Fatalf("posted out of order: request %d has ID %d", i, id)
		}
	}
	assert.False(t, vc.overlap)
}

// TestReplyThenClose: a responder that writes a reply large enough to be
// posted by the posting goroutine (a 64 KiB READ result, by RDMA Write)
// and closes its connection at once still delivers the reply, as TCP
// delivers what was written before a close: Close posts what the posting
// goroutine left and waits for the Sends to complete (closeLinger) before
// it disconnects. Before, the soft provider's disconnect flushed a posted
// reply in 6 runs of 20 even with every batch posted inline.
func TestReplyThenClose(t *testing.T) {
	b := testBinding{ddp: true}
	l, err := Listen("127.0.0.1:0", softConfig(&Config{Binding: b}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	const n = 64 << 10
	data := pattern(n, 7)
	go func() {
		c, err := l.AcceptRDMA()
		if err != nil {
			return
		}
		call, err := c.ReadMsg(nil)
		if err != nil {
			_ = c.Close()
			return
		}
		var h xdr.CallHeader
		if _, err := h.Unmarshal(call); err != nil {
			_ = c.Close()
			return
		}
		reply := xdr.ReplyHeader{XID: h.XID, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}
		_ = c.WriteMsg(xdr.AppendOpaque(reply.Append(nil), data))
		_ = c.Close()
	}()
	c := rcDial(t, l.Addr().String(), &Config{Binding: b})
	got := callOK(t, c, 1, procRead, xdr.AppendUint32(nil, n))
	require.Equal(t, xdr.AppendOpaque(nil, data), got)
	require.Equal(t, uint64(1), c.Stats().WriteChunks)
}
