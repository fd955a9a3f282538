//go:build e2eguest

package rdmacore_test

import (
	"context"
	"fmt"
	"log"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
)

// A connection between the VM's two Soft-RoCE devices: the listener posts
// a Receive in Setup, before it accepts; the client connects from rxe1's
// address with RFC 8797 private data and sends one message.
func Example() {
	ctx := context.Background()
	ln, err := (&rdmacore.Provider{}).Listen("10.0.0.1:0") // rxe0
	if err != nil {
		log.Fatal(err)
	}
	defer ln.Close()
	got := make(chan string, 1)
	go func() {
		req, err := ln.Accept(ctx)
		if err != nil {
			log.Fatal(err)
		}
		var buf verbs.Region
		c, err := req.Accept(ctx, &verbs.ConnOptions{Setup: func(c verbs.Conn) (err error) {
			if buf, err = c.AllocRegion(4096); err != nil {
				return err
			}
			return c.PostRecv([]verbs.RecvRequest{{ID: 1, SGL: []verbs.SGE{{Region: buf, Length: 4096}}}})
		}})
		if err != nil {
			log.Fatal(err)
		}
		defer c.Close()
		var cs [1]verbs.Completion
		for n := 0; n == 0; n, _ = c.Poll(cs[:]) {
			_ = c.Wait(ctx) // parks on the netpoller
		}
		got <- fmt.Sprintf("%q (%v), private data % x", buf.Bytes()[:cs[0].ByteLen], cs[0].Err(), req.PrivateData()[:8])
	}()

	client := &rdmacore.Provider{LocalAddr: "10.0.0.2"} // rxe1
	c, err := client.Dial(ctx, ln.Addr().String(), &verbs.ConnOptions{PrivateData: []byte{0xf6, 0xab, 0x0e, 0x18, 1, 1, 3, 3}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	msg, err := c.AllocRegion(64)
	if err != nil {
		log.Fatal(err)
	}
	n := copy(msg.Bytes(), "hello over rxe")
	if err := c.PostSend([]verbs.WorkRequest{{ID: 7, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: msg, Length: n}}}}); err != nil {
		log.Fatal(err)
	}
	fmt.Println(<-got)
	fmt.Println("accept's private data:", len(c.PeerPrivateData()), "bytes")
	// Output:
	// "hello over rxe" (<nil>), private data f6 ab 0e 18 01 01 03 03
	// accept's private data: 196 bytes
}
