package soft_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// completion waits for the next completion of c.
func completion(c verbs.Conn) verbs.Completion {
	var cs [1]verbs.Completion
	for {
		if n, err := c.Poll(cs[:]); err != nil || n == 1 {
			return cs[0]
		}
		if err := c.Wait(context.Background()); err != nil {
			return verbs.Completion{Status: verbs.StatusFlushed}
		}
	}
}

// examplePair connects a client of cp to a server of sp whose Setup posts
// one 4 KiB Receive into *recv.
func examplePair(cp, sp *soft.Provider, recv *verbs.Region) (client, server verbs.Conn) {
	ctx := context.Background()
	ln, err := sp.Listen("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	accepted := make(chan verbs.Conn)
	go func() {
		req, err := ln.Accept(ctx)
		if err != nil {
			panic(err)
		}
		c, err := req.Accept(ctx, &verbs.ConnOptions{Setup: func(c verbs.Conn) (err error) {
			if *recv, err = c.AllocRegion(4096); err != nil {
				return err
			}
			return c.PostRecv([]verbs.RecvRequest{{ID: 1, SGL: []verbs.SGE{{Region: *recv, Length: 4096}}}})
		}})
		if err != nil {
			panic(err)
		}
		accepted <- c
	}()
	client, err = cp.Dial(ctx, ln.Addr().String(), nil)
	if err != nil {
		panic(err)
	}
	return client, <-accepted
}

// send posts a Send of msg from a new region of c.
func send(c verbs.Conn, id uint64, msg string) {
	r, err := c.AllocRegion(len(msg) + 1)
	if err != nil {
		panic(err)
	}
	n := copy(r.Bytes(), msg)
	if err := c.PostSend([]verbs.WorkRequest{{ID: id, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: r, Length: n}}}}); err != nil {
		panic(err)
	}
}

// Two endpoints over TCP loopback: the listener posts a Receive in Setup,
// before the connection is established, and the dialer sends into it.
// Private data arrives zero-padded, as rdma_cm delivers it.
func Example() {
	ctx := context.Background()
	p := &soft.Provider{}
	ln, err := p.Listen("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()

	served := make(chan string)
	go func() {
		req, err := ln.Accept(ctx)
		if err != nil {
			panic(err)
		}
		var buf verbs.Region
		c, err := req.Accept(ctx, &verbs.ConnOptions{
			PrivateData: []byte("server"),
			Setup: func(c verbs.Conn) (err error) {
				if buf, err = c.AllocRegion(4096); err != nil {
					return err
				}
				return c.PostRecv([]verbs.RecvRequest{{ID: 1, SGL: []verbs.SGE{{Region: buf, Length: 4096}}}})
			},
		})
		if err != nil {
			panic(err)
		}
		defer c.Close()
		comp := completion(c)
		served <- fmt.Sprintf("server received %q; connect private data: %d bytes, %q",
			buf.Bytes()[:comp.ByteLen], len(c.PeerPrivateData()), bytes.TrimRight(c.PeerPrivateData(), "\x00"))
	}()

	c, err := p.Dial(ctx, ln.Addr().String(), &verbs.ConnOptions{PrivateData: []byte("client")})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	msg, err := c.AllocRegion(64)
	if err != nil {
		panic(err)
	}
	n := copy(msg.Bytes(), "hello, RDMA")
	if err := c.PostSend([]verbs.WorkRequest{{ID: 7, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: msg, Length: n}}}}); err != nil {
		panic(err)
	}
	comp := completion(c)
	fmt.Printf("send %d: %v\n", comp.ID, comp.Status)
	fmt.Println(<-served)
	fmt.Printf("accept private data: %d bytes, %q\n", len(c.PeerPrivateData()), bytes.TrimRight(c.PeerPrivateData(), "\x00"))
	// Output:
	// send 7: success
	// server received "hello, RDMA"; connect private data: 56 bytes, "client"
	// accept private data: 196 bytes, "server"
}

// A listener that refuses a request: the dialer's error carries the
// reject's private data.
func ExampleProvider_Listen() {
	p := &soft.Provider{}
	ln, err := p.Listen("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	go func() {
		req, err := ln.Accept(context.Background())
		if err == nil {
			_ = req.Reject([]byte("busy"))
		}
	}()
	_, err = p.Dial(context.Background(), ln.Addr().String(), nil)
	var rej *verbs.RejectedError
	fmt.Println(errors.Is(err, verbs.ErrRejected), errors.As(err, &rej), len(rej.PrivateData), string(rej.PrivateData[:4]))
	// Output: true true 148 busy
}

// Dial reports a refused TCP connect as verbs.ErrRefused.
func ExampleProvider_Dial() {
	ln, err := (&soft.Provider{}).Listen("127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = (&soft.Provider{}).Dial(context.Background(), addr, nil)
	fmt.Println(errors.Is(err, verbs.ErrRefused))
	// Output: true
}

// A link that breaks under a Send: the Send fails as if the peer had
// stopped answering, and both sides go down.
func ExampleFaults() {
	faults := &soft.Faults{}
	var recv verbs.Region
	client, server := examplePair(&soft.Provider{Faults: faults}, &soft.Provider{}, &recv)
	defer client.Close()
	defer server.Close()

	faults.DropAtSend(1)
	send(client, 1, "lost")
	fmt.Println("send:", completion(client).Status)
	<-server.Done()
	fmt.Println("server down:", errors.Is(server.Err(), verbs.ErrDisconnected))
	fmt.Println("server's Receive:", completion(server).Status)
	// Output:
	// send: transport retry exceeded
	// server down: true
	// server's Receive: flushed
}

// Drop breaks every connection of the provider now.
func ExampleFaults_Drop() {
	faults := &soft.Faults{}
	var recv verbs.Region
	client, server := examplePair(&soft.Provider{Faults: faults}, &soft.Provider{}, &recv)
	defer client.Close()
	defer server.Close()
	faults.Drop()
	<-client.Done()
	<-server.Done()
	fmt.Println(errors.Is(client.Err(), verbs.ErrDisconnected), errors.Is(server.Err(), verbs.ErrDisconnected))
	// Output: true true
}

// A Receive completion that lies about its length, as a test of the
// receiver's parsing.
func ExampleFaults_CorruptNextRecvLength() {
	faults := &soft.Faults{}
	var recv verbs.Region
	client, server := examplePair(&soft.Provider{}, &soft.Provider{Faults: faults}, &recv)
	defer client.Close()
	defer server.Close()
	faults.CorruptNextRecvLength(func(n int) int { return n / 2 })
	send(client, 1, "twelve bytes")
	fmt.Println(completion(server).ByteLen)
	// Output: 6
}

// Completions held back: they arrive late, and in order.
func ExampleFaults_DelayCompletions() {
	faults := &soft.Faults{}
	var recv verbs.Region
	client, server := examplePair(&soft.Provider{Faults: faults}, &soft.Provider{}, &recv)
	defer client.Close()
	defer server.Close()
	faults.DelayCompletions(20 * time.Millisecond)
	start := time.Now()
	send(client, 1, "slow")
	comp := completion(client)
	fmt.Println(comp.ID, comp.Status, time.Since(start) >= 20*time.Millisecond)
	// Output: 1 success true
}

// Posts that fail, as when a provider runs out of resources.
func ExampleFaults_FailPostSend() {
	faults := &soft.Faults{}
	var recv verbs.Region
	client, server := examplePair(&soft.Provider{Faults: faults}, &soft.Provider{}, &recv)
	defer client.Close()
	defer server.Close()
	faults.FailPostSend(1, verbs.ErrQueueFull)
	err := client.PostSend([]verbs.WorkRequest{{ID: 1, Op: verbs.OpRDMAWrite}})
	fmt.Println(errors.Is(err, verbs.ErrQueueFull))
	err = client.PostSend([]verbs.WorkRequest{{ID: 2, Op: verbs.OpRDMAWrite}})
	fmt.Println(err, completion(client).ID)
	// Output:
	// true
	// <nil> 2
}

// A Receive that cannot be posted.
func ExampleFaults_FailPostRecv() {
	faults := &soft.Faults{}
	var recv verbs.Region
	client, server := examplePair(&soft.Provider{}, &soft.Provider{Faults: faults}, &recv)
	defer client.Close()
	defer server.Close()
	faults.FailPostRecv(1, nil)
	fmt.Println(server.PostRecv([]verbs.RecvRequest{{ID: 2, SGL: []verbs.SGE{{Region: recv, Length: 64}}}}) != nil)
	// Output: true
}
