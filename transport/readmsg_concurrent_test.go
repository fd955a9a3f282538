package transport

import (
	"sync"
	"testing"
	"time"
)

// TestReadMsgConcurrentReaders: several goroutines waiting in a
// responder's ReadMsg each get one of the calls that arrive together (as
// one batch of completions for the connection's loop). Each reader holds
// its message until all have one, so a reader left waiting with a message
// queued fails the test. (The wake-up a reader passes on when it leaves
// messages queued closes a narrower window, a reader between its look at
// the queue and its wait while two messages arrive, which this test does
// not reach deterministically.)
func TestReadMsgConcurrentReaders(t *testing.T) {
	const readers = 4
	cl, srv := loopbackPair(t, 10*time.Second)

	// One call and its reply first: the requester has one credit until
	// a reply grants more.
	if err := cl.WriteMsg(appendCall(nil, 1, 0)); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.ReadMsg(nil); err != nil {
		t.Fatal(err)
	}
	if err := srv.WriteMsg(appendReply(nil, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.ReadMsg(nil); err != nil {
		t.Fatal(err)
	}

	for round := range 20 {
		var got, all sync.WaitGroup
		got.Add(readers)
		all.Add(readers)
		release := make(chan struct{})
		errs := make(chan error, readers)
		for range readers {
			go func() {
				defer all.Done()
				if _, err := srv.ReadMsg(nil); err != nil {
					errs <- err
				}
				got.Done()
				<-release
			}()
		}
		time.Sleep(10 * time.Millisecond) // the readers wait
		// The calls arrive while the responder's loop cannot take them
		// (its lock held), so that it takes them as one batch.
		srv.mu.Lock()
		for i := range readers {
			if err := cl.WriteMsg(appendCall(nil, uint32(100*round+10+i), 0)); err != nil {
				srv.mu.Unlock()
				t.Fatal(err)
			}
		}
		time.Sleep(20 * time.Millisecond)
		srv.mu.Unlock()
		done := make(chan struct{})
		go func() { got.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("round %d: calls queued while readers wait", round)
		}
		close(release)
		all.Wait()
		select {
		case err := <-errs:
			t.Fatal(err)
		default:
		}
		for i := range readers {
			if err := srv.WriteMsg(appendReply(nil, uint32(100*round+10+i))); err != nil {
				t.Fatal(err)
			}
			if _, err := cl.ReadMsg(nil); err != nil {
				t.Fatal(err)
			}
		}
	}
}
