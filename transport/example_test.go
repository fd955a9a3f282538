package transport_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"log"
	"sync"

	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Dial connects a requester (an RPC client) to a responder and sizes the
// connection from the RFC 8797 exchange. The responder here is a Listener
// on loopback with the software provider, which runs anywhere; against an
// NFS/RDMA server (Linux knfsd, rdma-nfsd), use &rdmacore.Provider{} and
// the server's address on its RDMA interface, port 20049.
func ExampleDial() {
	// The software provider: RDMA verbs emulated over TCP.
	cfg := &transport.Config{Provider: &soft.Provider{}}

	// A responder to dial (see ExampleListen): it answers every call with
	// an empty accepted reply.
	l, err := transport.Listen("127.0.0.1:0", cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	go func() {
		s, err := l.AcceptRDMA()
		if err != nil {
			return
		}
		defer s.Close()
		for {
			msg, err := s.ReadMsg(nil)
			if err != nil {
				return
			}
			xid, _, _ := xdr.PeekXID(msg)
			reply := xdr.ReplyHeader{XID: xid, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}
			if err := s.WriteMsg(reply.Append(nil)); err != nil {
				return
			}
		}
	}()

	c, err := transport.Dial(context.Background(), l.Addr().String(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	n := c.Stats().Negotiated
	fmt.Printf("private data %s; inline %d bytes out, %d in; remote invalidation %v\n",
		n.PeerPrivateData, n.SendInline, n.RecvInline, n.ExpectRemoteInvalidate)

	// One call, NFSv3 NULL, and its reply: WriteMsg and ReadMsg carry
	// whole RPC messages (Write and Read carry them record-marked, as a
	// TCP connection would).
	call := xdr.CallHeader{XID: 1, Prog: 100003, Vers: 3, Proc: 0}
	if err := c.WriteMsg(call.Append(nil)); err != nil {
		log.Fatal(err)
	}
	msg, err := c.ReadMsg(nil)
	if err != nil {
		log.Fatal(err)
	}
	var reply xdr.ReplyHeader
	if _, err := reply.Unmarshal(msg); err != nil {
		log.Fatal(err)
	}
	fmt.Println(reply.XID, reply.Stat, reply.AcceptStat)
	// Output:
	// private data found; inline 4096 bytes out, 4096 in; remote invalidation true
	// 1 MSG_ACCEPTED SUCCESS
}

// A responder (an RPC server): each connection the Listener accepts is
// served by a goroutine of its own, which reads whole calls with ReadMsg
// and answers each with WriteMsg. The program here is a made-up one
// whose procedure 1 returns its argument plus one. Listener is also a
// net.Listener, whose Accept hands out the same connections as
// record-marked net.Conns for servers written for TCP.
func ExampleListen() {
	const prog, vers = 0x20000001, 1

	cfg := &transport.Config{Provider: &soft.Provider{}}
	l, err := transport.Listen("127.0.0.1:0", cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			s, err := l.AcceptRDMA()
			if err != nil {
				return // the Listener was closed
			}
			go func() {
				defer s.Close()
				var msg, out []byte
				for {
					var err error
					if msg, err = s.ReadMsg(msg); err != nil {
						return // the requester left
					}
					var h xdr.CallHeader
					args, err := h.Unmarshal(msg)
					if err != nil {
						continue // not a call: the transport checked the rest
					}
					rh := xdr.ReplyHeader{XID: h.XID, Stat: xdr.MsgAccepted}
					switch {
					case h.Prog != prog:
						rh.AcceptStat = xdr.AcceptProgUnavail
					case h.Proc != 1 || len(msg)-args != 4:
						rh.AcceptStat = xdr.AcceptGarbageArgs
					}
					out = rh.Append(out[:0])
					if rh.AcceptStat == xdr.AcceptSuccess {
						out = binary.BigEndian.AppendUint32(out, binary.BigEndian.Uint32(msg[args:])+1)
					}
					if err := s.WriteMsg(out); err != nil {
						return
					}
				}
			}()
		}
	}()

	// A requester, to call it.
	c, err := transport.Dial(context.Background(), l.Addr().String(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for _, p := range []uint32{prog, 100003} {
		h := xdr.CallHeader{XID: p, Prog: p, Vers: vers, Proc: 1}
		reply, err := c.Call(context.Background(), binary.BigEndian.AppendUint32(h.Append(nil), 41), nil)
		if err != nil {
			log.Fatal(err)
		}
		var rh xdr.ReplyHeader
		res, err := rh.Unmarshal(reply)
		if err != nil {
			log.Fatal(err)
		}
		if rh.AcceptStat == xdr.AcceptSuccess {
			fmt.Println(rh.AcceptStat, binary.BigEndian.Uint32(reply[res:]))
		} else {
			fmt.Println(rh.AcceptStat)
		}
	}
	// Output:
	// SUCCESS 42
	// PROG_UNAVAIL
}

// Call is for message-aware RPC clients with many calls in flight on one
// Conn: each Call gets its own reply, matched by XID, whatever the order
// the replies arrive in. The responder here answers each call from a
// goroutine of its own, so replies may overtake one another.
func ExampleConn_Call() {
	cfg := &transport.Config{Provider: &soft.Provider{}}
	l, err := transport.Listen("127.0.0.1:0", cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	go func() {
		s, err := l.AcceptRDMA()
		if err != nil {
			return
		}
		defer s.Close()
		for {
			msg, err := s.ReadMsg(nil)
			if err != nil {
				return
			}
			// A responder's WriteMsg may be called from several
			// goroutines at once.
			go func() {
				var h xdr.CallHeader
				args, err := h.Unmarshal(msg)
				if err != nil || len(msg)-args != 4 {
					return
				}
				n := binary.BigEndian.Uint32(msg[args:])
				rh := xdr.ReplyHeader{XID: h.XID, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}
				_ = s.WriteMsg(binary.BigEndian.AppendUint32(rh.Append(nil), n*n))
			}()
		}
	}()

	c, err := transport.Dial(context.Background(), l.Addr().String(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	// Eight calls at once, each with its own XID. ctx bounds each
	// Call: the wait for a credit and the wait for the reply.
	ctx := context.Background()
	squares := make([]uint32, 8)
	var wg sync.WaitGroup
	for i := range squares {
		wg.Go(func() {
			h := xdr.CallHeader{XID: uint32(i + 1), Prog: 0x20000001, Vers: 1, Proc: 2}
			reply, err := c.Call(ctx, binary.BigEndian.AppendUint32(h.Append(nil), uint32(i)), nil)
			if err != nil {
				log.Fatal(err)
			}
			var rh xdr.ReplyHeader
			res, err := rh.Unmarshal(reply)
			if err != nil || rh.XID != h.XID || len(reply)-res != 4 {
				log.Fatalf("reply %+v: %v", rh, err)
			}
			squares[i] = binary.BigEndian.Uint32(reply[res:])
		})
	}
	wg.Wait()
	fmt.Println(squares)
	// Output: [0 1 4 9 16 25 36 49]
}
