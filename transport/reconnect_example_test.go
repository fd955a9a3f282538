package transport_test

import (
	"context"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// serveNull answers every call on c with an empty accepted reply; after
// the first reply it closes c if closeAfterOne is set.
func serveNull(c *transport.Conn, closeAfterOne bool) {
	defer c.Close()
	var buf, out []byte
	for {
		var err error
		if buf, err = c.ReadMsg(buf); err != nil {
			return
		}
		xid, _, _ := xdr.PeekXID(buf)
		out = (&xdr.ReplyHeader{XID: xid, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}).Append(out[:0])
		if c.WriteMsg(out) != nil || closeAfterOne {
			return
		}
	}
}

// A requester that reconnects: the responder closes the first connection
// after one reply; the next call goes over a new connection, negotiated
// afresh (RFC 8797), and a call caught in flight by the loss would be sent
// again with its XID.
func ExampleReconnectPolicy() {
	l, err := transport.Listen("127.0.0.1:0", &transport.Config{Provider: &soft.Provider{}})
	if err != nil {
		panic(err)
	}
	defer l.Close()
	go func() {
		for n := 0; ; n++ {
			c, err := l.AcceptRDMA()
			if err != nil {
				return
			}
			go serveNull(c, n == 0)
		}
	}()

	c, err := transport.Dial(context.Background(), l.Addr().String(), &transport.Config{
		Provider:  &soft.Provider{},
		Reconnect: transport.ReconnectPolicy{Enabled: true, Retransmit: true},
	})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	for xid := uint32(1); xid <= 2; xid++ {
		call := (&xdr.CallHeader{XID: xid, Prog: 100003, Vers: 3, Proc: 0}).Append(nil)
		if err := c.WriteMsg(call); err != nil {
			panic(err)
		}
		reply, err := c.ReadMsg(nil)
		if err != nil {
			panic(err)
		}
		got, _, _ := xdr.PeekXID(reply)
		fmt.Println("reply to xid", got)
	}
	fmt.Println("reconnects:", c.Stats().Reconnects)
	// Output:
	// reply to xid 1
	// reply to xid 2
	// reconnects: 1
}
