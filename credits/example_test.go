package credits_test

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/credits"
)

// A requester starts with one credit and learns its real limit from the
// first reply.
func ExampleRequester() {
	r := credits.NewRequester(credits.DefaultRequest)
	fmt.Println("ask for", r.Requested(), "limit", r.Limit())

	fmt.Println("send first call:", r.TryAcquire())
	fmt.Println("send second call:", r.TryAcquire()) // must wait for a grant

	limit, err := r.Complete(64) // the reply grants 64 (Linux svcrdma)
	fmt.Println("limit", limit, err, "available", r.Available())
	// Output:
	// ask for 128 limit 1
	// send first call: true
	// send second call: false
	// limit 64 <nil> available 64
}

// A grant that shrinks while calls are in flight cancels none of them; new
// calls wait until the number in flight is below the new limit.
func ExampleRequester_Update() {
	r := credits.NewRequester(credits.DefaultRequest)
	r.Update(4)
	for r.TryAcquire() {
	}
	fmt.Println("in flight", r.InFlight())

	r.Update(2)
	fmt.Println("after shrink: in flight", r.InFlight(), "may send:", r.TryAcquire())
	_ = r.Release()
	_ = r.Release()
	fmt.Println("after two replies: in flight", r.InFlight(), "may send:", r.TryAcquire())
	_ = r.Release()
	fmt.Println("after a third: may send:", r.TryAcquire())

	fmt.Println("grant 0 reads as", r.Update(0), "and 1000 as", r.Update(1000))
	fmt.Println("stalls", r.Stats().Stalls)
	// Output:
	// in flight 4
	// after shrink: in flight 4 may send: false
	// after two replies: in flight 2 may send: false
	// after a third: may send: true
	// grant 0 reads as 1 and 1000 as 128
	// stalls 3
}

// A responder grants no more than its posted Receives can back.
func ExampleResponder() {
	r := credits.NewResponder(credits.Policy{}) // constant 64, like Linux svcrdma
	_ = r.Post(64)                              // before accepting the connection

	_ = r.Received() // a call arrives and consumes a Receive
	_ = r.Post(1)    // repost it
	g, err := r.Reply(credits.DefaultRequest)
	fmt.Println("grant", g, err)

	// Receives reposted lazily: 3 calls arrive, none reposted.
	for range 3 {
		_ = r.Received()
	}
	g, _ = r.Reply(credits.DefaultRequest)
	fmt.Println("posted", r.Posted(), "unanswered", r.Unanswered(), "grant", g)
	fmt.Println("post", r.Wanted(), "more for a full grant")
	// Output:
	// grant 64 <nil>
	// posted 61 unanswered 2 grant 63
	// post 3 more for a full grant
}

// With a HighWater mark, the grant halves under load and grows back, one
// credit per reply, when the backlog drains.
func ExamplePolicy() {
	r := credits.NewResponder(credits.Policy{Max: 64, Min: 8, HighWater: 4})
	_ = r.Post(1000)
	for range 6 {
		_ = r.Received()
	}
	g, _ := r.Reply(0) // 6 requests being processed > 4
	fmt.Println("overloaded: grant", g)
	for r.Backlog() > 0 {
		g, _ = r.Reply(0)
	}
	fmt.Println("drained: grant", g)
	fmt.Printf("%+v\n", r.Stats())
	// Output:
	// overloaded: grant 32
	// drained: grant 34
	// {Shrinks:1 Grows:2 ReceiveLimited:0}
}
