package transport_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// A server that takes its large call buffers from a pool of its own:
// ReadMsgAlloc asks for a buffer once it knows the call's length, so a 64
// KiB call lands in a pooled 64 KiB buffer instead of a new one, and the
// buffer goes back to the pool once the call is executed.
func ExampleConn_ReadMsgAlloc() {
	var big sync.Pool // *[]byte of 128 KiB
	get := func(n int) []byte {
		if n <= 4<<10 {
			return nil // small calls: let ReadMsgAlloc allocate
		}
		if p, _ := big.Get().(*[]byte); p != nil && cap(*p) >= n {
			return *p
		}
		return make([]byte, 0, 128<<10)
	}

	cfg := &transport.Config{Provider: &soft.Provider{}}
	l, err := transport.Listen("127.0.0.1:0", cfg)
	if err != nil {
		panic(err)
	}
	defer l.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.AcceptRDMA()
		if err != nil {
			return
		}
		defer c.Close()
		for range 2 {
			msg, err := c.ReadMsgAlloc(get)
			if err != nil {
				return
			}
			var h xdr.CallHeader
			args, _ := h.Unmarshal(msg)
			fmt.Printf("call %d: %d bytes of arguments, pooled buffer %v\n", h.XID, len(msg)-args, cap(msg) == 128<<10)
			rh := xdr.ReplyHeader{XID: h.XID, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}
			_ = c.WriteMsg(rh.Append(nil))
			if cap(msg) == 128<<10 {
				msg = msg[:0]
				big.Put(&msg) // executed: the buffer is free again
			}
		}
	}()

	c, err := transport.Dial(context.Background(), l.Addr().String(), cfg)
	if err != nil {
		panic(err)
	}
	defer c.Close()
	call(c, 1, 100)    // inline, in a buffer of its own
	call(c, 2, 64<<10) // a Long Call: its arguments in a pooled buffer
	<-done
	// Output:
	// call 1: 100 bytes of arguments, pooled buffer false
	// call 2: 65536 bytes of arguments, pooled buffer true
}

// call sends a call with size bytes of arguments and waits for its reply.
func call(c *transport.Conn, xid uint32, size int) {
	h := xdr.CallHeader{XID: xid, Prog: 100003, Vers: 3, Proc: 7}
	if _, err := c.Call(context.Background(), append(h.Append(nil), make([]byte, size)...), nil); err != nil {
		panic(err)
	}
}
