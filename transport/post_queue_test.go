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

// queueFixture is a postQueue with a recordingConn to post on and what
// endpoint.post uses to build batches: Conn.mu (mu), the batch being
// built and the next request ID.
type queueFixture struct {
	q    postQueue
	vc   *recordingConn
	mu   sync.Mutex
	cur  sendBatch
	next uint64
}

func newQueueFixture() *queueFixture {
	return &queueFixture{vc: &recordingConn{}, cur: newSendBatch()}
}

// queue builds one batch of n requests (bulk or not) under f.mu, as
// endpoint.post does under Conn.mu, and queues it.
func (f *queueFixture) queue(n int, bulk bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cur.bulk = bulk
	for range n {
		i := len(f.cur.sges)
		f.cur.sges = append(f.cur.sges, verbs.SGE{Offset: int(f.next)})
		f.cur.wrs = append(f.cur.wrs, verbs.WorkRequest{ID: f.next, Op: verbs.OpSend, SGL: f.cur.sges[i : i+1 : i+1]})
		f.next++
	}
	f.cur = f.q.push(f.cur)
}

// flushInline is the flush of a goroutine that built a batch (not the
// posting goroutine), which must find no bulk batch left.
func (f *queueFixture) flushInline() error {
	bulk, err := f.q.flush(f.vc, false)
	if bulk {
		return errors.New("a bulk batch was left")
	}
	return err
}

// queued reports whether batches wait in the queue.
func (f *queueFixture) queued() bool {
	left, _ := f.q.pending()
	return left
}

// checkOrder checks that every request queued was posted once, in order.
func (f *queueFixture) checkOrder(t *testing.T) {
	t.Helper()
	f.vc.mu.Lock()
	defer f.vc.mu.Unlock()
	require.Len(t, f.vc.ids, int(f.next))
	for i, id := range f.vc.ids {
		if uint64(i) != id {
			t.Fatalf("posted out of order: request %d has ID %d", i, id)
		}
	}
	assert.False(t, f.vc.overlap, "posts overlapped or a batch's memory was reused before its post")
}

// TestPostQueueOrder: batches queued by many goroutines are all posted, in
// the order they were queued, one post at a time, by whichever goroutine
// found the queue free, and each batch's memory is reused only after its
// post.
func TestPostQueueOrder(t *testing.T) {
	f := newQueueFixture()
	const goroutines, batches = 8, 200
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range batches {
				f.queue(1+(g+i)%batchCap, false)
				assert.NoError(t, f.flushInline())
			}
		}()
	}
	wg.Wait()
	// Every flush has returned: nothing may be left in the queue.
	assert.False(t, f.queued())
	f.checkOrder(t)
	assert.Less(t, f.vc.posts, goroutines*batches, "no post carried batches of other goroutines")
	t.Logf("%d requests in %d batches, %d posts", f.next, goroutines*batches, f.vc.posts)
}

// TestPostQueueError: a post that fails returns its error to the flush that
// made it and drops the rest of the queue (the connection ends); nothing of
// it is posted later.
func TestPostQueueError(t *testing.T) {
	f := newQueueFixture()
	boom := errors.New("boom")
	f.vc.fail = boom
	f.queue(3, false)
	f.queue(2, false)
	require.ErrorIs(t, f.flushInline(), boom)
	assert.False(t, f.queued())
	assert.Empty(t, f.vc.ids)
	f.queue(1, false)
	require.NoError(t, f.flushInline())
	assert.Equal(t, []uint64{5}, f.vc.ids)
}

// TestPostQueueHandOff: a batch queued while another goroutine holds the
// queue, after that one found it empty, is posted by that one once it lets
// go: the goroutine that queued it returns at once and nothing is stranded.
func TestPostQueueHandOff(t *testing.T) {
	f := newQueueFixture()
	late := 0
	f.q.afterPost = func() {
		if late++; late > 1 {
			return
		}
		done := make(chan error)
		go func() {
			f.queue(2, false)
			done <- f.flushInline() // finds posting held: leaves the batch
		}()
		require.NoError(t, <-done)
		assert.True(t, f.queued())
	}
	f.queue(1, false)
	require.NoError(t, f.flushInline())
	assert.False(t, f.queued())
	assert.Equal(t, []uint64{0, 1, 2}, f.vc.ids)
	assert.Equal(t, 2, f.vc.posts)
}

// TestPostQueueBulk: a goroutine that built a batch posts the queue up to
// the first bulk batch and reports it; the posting goroutine (mayBulk)
// posts the rest, in order.
func TestPostQueueBulk(t *testing.T) {
	f := newQueueFixture()
	f.queue(2, false) // 0, 1
	f.queue(1, true)  // 2
	f.queue(1, false) // 3
	bulk, err := f.q.flush(f.vc, false)
	require.NoError(t, err)
	assert.True(t, bulk)
	assert.Equal(t, []uint64{0, 1}, f.vc.ids)
	// Only a bulk batch at the head: nothing posted inline.
	bulk, err = f.q.flush(f.vc, false)
	require.NoError(t, err)
	assert.True(t, bulk)
	assert.Equal(t, []uint64{0, 1}, f.vc.ids)
	bulk, err = f.q.flush(f.vc, true)
	require.NoError(t, err)
	assert.False(t, bulk)
	assert.Equal(t, []uint64{0, 1, 2, 3}, f.vc.ids)
	assert.False(t, f.queued())
}

// TestPostQueueBulkConcurrent: goroutines queue batches, some bulk, and
// flush inline, waking a posting goroutine when one reports a bulk batch
// left, as endpoint.flush and postLoop do: everything is posted, in
// queue order, one post at a time.
func TestPostQueueBulkConcurrent(t *testing.T) {
	f := newQueueFixture()
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
			_, err := f.q.flush(f.vc, true)
			assert.NoError(t, err)
		}
	}()
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 150 {
				f.queue(1+i%3, (g+i)%5 == 0)
				bulk, err := f.q.flush(f.vc, false)
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
	for f.queued() || !f.q.posting.TryLock() {
		if time.Now().After(deadline) {
			t.Fatal("batches left unposted")
		}
		time.Sleep(time.Millisecond)
	}
	f.q.posting.Unlock()
	close(stop)
	<-posterDone
	f.checkOrder(t)
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
