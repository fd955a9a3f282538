package transport_test

import (
	"context"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Stats counts the RDMA operations each side posted: an RPC that fits the
// inline threshold both ways costs two Sends and nothing else; a result
// placed in a Write chunk adds one RDMA Write, an argument in a Read chunk
// one RDMA Read.
func ExampleConn_Stats_operations() {
	// The software provider: RDMA verbs emulated over TCP.
	cfg := &transport.Config{Provider: &soft.Provider{}}
	l, err := transport.Listen("127.0.0.1:0", cfg)
	if err != nil {
		panic(err)
	}
	defer l.Close()
	server := make(chan *transport.Conn, 1)
	go func() {
		s, err := l.AcceptRDMA()
		if err != nil {
			panic(err)
		}
		server <- s
		call, err := s.ReadMsg(nil)
		if err != nil {
			panic(err)
		}
		xid, _, _ := xdr.PeekXID(call)
		reply := (&xdr.ReplyHeader{XID: xid, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}).Append(nil)
		if err := s.WriteMsg(reply); err != nil {
			panic(err)
		}
	}()
	c, err := transport.Dial(context.Background(), l.Addr().String(), cfg)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	s := <-server
	defer s.Close()

	// An NFSv3 NULL call.
	if err := c.WriteMsg((&xdr.CallHeader{XID: 1, Prog: 100003, Vers: 3}).Append(nil)); err != nil {
		panic(err)
	}
	if _, err := c.ReadMsg(nil); err != nil {
		panic(err)
	}
	cs, ss := c.Stats(), s.Stats()
	fmt.Printf("sends %d+%d, RDMA reads %d, RDMA writes %d\n",
		cs.Sends, ss.Sends, cs.RDMAReads+ss.RDMAReads, cs.RDMAWrites+ss.RDMAWrites)
	// Output:
	// sends 1+1, RDMA reads 0, RDMA writes 0
}
