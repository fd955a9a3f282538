package dropin_test

import (
	"context"
	"fmt"
	"log"

	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
	nfs "github.com/willscott/go-nfs"
	nfshelper "github.com/willscott/go-nfs/helpers"
)

// Example_goNFS serves github.com/willscott/go-nfs, unchanged, over
// RPC-over-RDMA: nfs.Serve takes the *transport.Listener as its
// net.Listener. A requester then calls the NFSv3 NULL procedure.
func Example_goNFS() {
	// The software provider (RDMA verbs emulated over TCP); on RDMA
	// hardware or Soft-RoCE, use &rdmacore.Provider{} and listen on an
	// address of the RDMA interface (NFS/RDMA uses port 20049).
	cfg := &transport.Config{Provider: &soft.Provider{}}
	l, err := transport.Listen("127.0.0.1:0", cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer l.Close()
	fs := memfs.New()
	go nfs.Serve(l, nfshelper.NewCachingHandler(nfshelper.NewNullAuthHandler(fs), 1024))

	c, err := transport.Dial(context.Background(), l.Addr().String(), cfg)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	call := xdr.CallHeader{XID: 1, Prog: 100003, Vers: 3, Proc: 0} // NFSPROC3_NULL
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
	// Output: 1 MSG_ACCEPTED SUCCESS
}
