package transport

import (
	"sync"
	"sync/atomic"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// batchCap is the capacity of a batch's work request and SGE lists: a batch
// that fills it is queued and a new one begun (endpoint.batchFull).
const batchCap = 16

// sendBatch is one batch of send work requests built under Conn.mu, with
// the SGE memory its requests' lists point into.
type sendBatch struct {
	wrs  []verbs.WorkRequest
	sges []verbs.SGE
	bulk bool // moves at least Config.PostAsyncMin bytes
}

func newSendBatch() sendBatch {
	return sendBatch{wrs: make([]verbs.WorkRequest, 0, batchCap), sges: make([]verbs.SGE, 0, batchCap)}
}

// batchBytes returns the bytes the batch's requests move.
func batchBytes(b sendBatch) int {
	n := 0
	for _, s := range b.sges {
		n += s.Length
	}
	return n
}

// postQueue passes the batches built under Conn.mu to the goroutine that
// posts them, after Conn.mu is released.
//
// Building a batch is cheap and touches the connection's state; posting it
// may not be (a software provider such as rxe runs a user queue pair's
// work requests in the poster's thread), and nothing may post under
// Conn.mu, which would hold up the poll loop for as long. So a batch is
// queued under Conn.mu, in the order the protocol needs (an RDMA Write
// before the Send that reports it), and whoever released Conn.mu after
// queuing posts the queue, in that order, under posting alone; a goroutine
// that finds another posting leaves its batch to that one, which looks at
// the queue again before it stops. A bulk batch (Config.PostAsyncMin) is
// left to the endpoint loop (Conn.endpointLoop), and with it what was
// queued after it: the goroutine that built it goes on. The batch counts as posted from the moment it is
// queued (sqOut, Send buffers, Stats): its completions can only come
// later. A post that fails ends the connection, as a failed work request
// does.
type postQueue struct {
	mu      sync.Mutex  // guards queued and spare
	queued  []sendBatch // in posting order
	spare   []sendBatch // posted batches, for reuse
	posting sync.Mutex  // held by the goroutine posting the queue
	taken   []sendBatch // the batches being posted; guarded by posting
	all     []verbs.WorkRequest
	// posted, if set, counts the PostSend calls (Stats.SendPosts).
	posted *atomic.Uint64

	// afterPost, if set (by tests), runs when the queue was found empty
	// (or at a bulk batch) and posting is still held.
	afterPost func()
}

// push queues b and returns an empty batch to build the next one in.
func (q *postQueue) push(b sendBatch) sendBatch {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queued = append(q.queued, b)
	if n := len(q.spare); n > 0 {
		next := q.spare[n-1]
		q.spare = q.spare[:n-1]
		return next
	}
	return newSendBatch()
}

// pending reports whether batches wait to be posted, and whether the first
// is bulk.
func (q *postQueue) pending() (left, bulk bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.queued) == 0 {
		return false, false
	}
	return true, q.queued[0].bulk
}

// flush posts the queued batches on vc, in order, as one work request list,
// unless another goroutine is posting (it posts them). Unless mayBulk (the
// endpoint loop), it stops at a bulk batch and reports that one is left
// (the caller wakes the endpoint loop). It returns the first post
// error, after which nothing more of the queue is posted; the caller ends
// the connection. Called without Conn.mu.
func (q *postQueue) flush(vc verbs.Conn, mayBulk bool) (bulkLeft bool, err error) {
	for {
		if !q.posting.TryLock() {
			return false, nil
		}
		err := q.postAll(vc, mayBulk)
		if q.afterPost != nil {
			q.afterPost()
		}
		q.posting.Unlock()
		// A batch queued while we were posting, whose goroutine found
		// posting held, is ours to post.
		left, bulk := q.pending()
		switch {
		case err != nil:
			return false, err
		case !left:
			return false, nil
		case bulk && !mayBulk:
			return true, nil
		}
	}
}

// postAll posts the queue until it is empty (or, unless mayBulk, until
// its first batch is bulk); posting is held.
func (q *postQueue) postAll(vc verbs.Conn, mayBulk bool) error {
	for {
		q.mu.Lock()
		n := len(q.queued)
		if !mayBulk {
			for i, b := range q.queued {
				if b.bulk {
					n = i
					break
				}
			}
		}
		q.taken = append(q.taken[:0], q.queued[:n]...)
		rest := copy(q.queued, q.queued[n:])
		clear(q.queued[rest:])
		q.queued = q.queued[:rest]
		q.mu.Unlock()
		if len(q.taken) == 0 {
			return nil
		}
		q.all = q.all[:0]
		for _, b := range q.taken {
			q.all = append(q.all, b.wrs...)
		}
		if q.posted != nil {
			// Before the post, as Stats counts work requests: once
			// posted, a reply may reach its caller before PostSend
			// returns.
			q.posted.Add(1)
		}
		err := vc.PostSend(q.all)
		clear(q.all) // drop the references to regions and windows
		q.mu.Lock()
		for _, b := range q.taken {
			clear(b.wrs)
			clear(b.sges)
			q.spare = append(q.spare, sendBatch{wrs: b.wrs[:0], sges: b.sges[:0]})
		}
		clear(q.taken)
		if err != nil {
			clear(q.queued)
			q.queued = q.queued[:0] // never posted: the connection ends
		}
		q.mu.Unlock()
		if err != nil {
			return err
		}
	}
}
