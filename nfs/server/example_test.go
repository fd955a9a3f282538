package server_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// A Server exporting a directory on the software provider. With the
// rdma-core provider and the default addresses, the Linux client mounts
// it with mount -t nfs -o vers=3,proto=rdma,port=20049 server:/ /mnt.
func ExampleNew() {
	root, err := os.MkdirTemp("", "export")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	dir, err := server.DirFS(root)
	if err != nil {
		log.Fatal(err)
	}
	defer dir.Close()
	h, err := server.NewDirHandler(dir, server.DirHandlerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := server.New(server.Config{
		Handler:   h,
		Transport: transport.Config{Provider: &soft.Provider{}},
		RDMAAddr:  "127.0.0.1:0",
		TCPAddr:   "127.0.0.1:0",
		Rpcbind:   server.RpcbindConfig{Disable: true},
	})
	if err != nil {
		log.Fatal(err)
	}
	go srv.Serve(context.Background())
	defer srv.Close()

	c, err := transport.Dial(context.Background(), srv.RDMAAddr().String(), &transport.Config{Provider: &soft.Provider{}})
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	for xid, prog := range []uint32{nfs.ProgNFS, nfs.ProgNFSACL} {
		h := xdr.CallHeader{XID: uint32(xid), Prog: prog, Vers: 3, Proc: 0}
		if err := c.WriteMsg(h.Append(nil)); err != nil {
			log.Fatal(err)
		}
		reply, err := c.ReadMsg(nil)
		if err != nil {
			log.Fatal(err)
		}
		var rh xdr.ReplyHeader
		if _, err := rh.Unmarshal(reply); err != nil {
			log.Fatal(err)
		}
		fmt.Println(nfs.ProcName(prog, 3, 0)+":", rh.AcceptStat)
	}
	// Output:
	// NFS3 NULL: SUCCESS
	// NFSACL3 NULL: PROG_UNAVAIL
}
