package nfs_test

import (
	"context"
	"fmt"
	"log"
	"os"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// A Server exporting a directory on the software provider. With the
// rdma-core provider and the default addresses, the Linux client mounts
// it with mount -t nfs -o vers=3,proto=rdma,port=20049 server:/ /mnt.
func ExampleNewServer() {
	root, err := os.MkdirTemp("", "export")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	dir, err := nfs.DirFS(root)
	if err != nil {
		log.Fatal(err)
	}
	defer dir.Close()
	h, err := nfs.NewDirHandler(dir, nfs.DirHandlerOptions{})
	if err != nil {
		log.Fatal(err)
	}
	srv, err := nfs.NewServer(nfs.ServerConfig{
		Handler:   h,
		Transport: transport.Config{Provider: &soft.Provider{}},
		RDMAAddr:  "127.0.0.1:0",
		TCPAddr:   "127.0.0.1:0",
		Rpcbind:   nfs.RpcbindConfig{Disable: true},
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

// ReplyData finds the data of an NFSv3 READ reply, which a responder then
// places in the requester's Write chunk.
func ExampleBinding_ReplyData() {
	h := xdr.ReplyHeader{XID: 7, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}
	reply := h.Append(nil)
	results := len(reply)
	reply = xdr.AppendUint32(reply, 0)   // NFS3_OK
	reply = xdr.AppendBool(reply, false) // no post-op attributes
	reply = xdr.AppendUint32(reply, 5)   // count
	reply = xdr.AppendBool(reply, true)  // eof
	reply = xdr.AppendOpaque(reply, []byte("hello"))

	call := &xdr.CallHeader{Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcRead}
	item := nfs.Binding{}.ReplyData(call, reply, results)
	fmt.Printf("%+v %q\n", item, reply[item.Off:item.Off+item.N])
	// Output:
	// {Off:44 N:5 Present:true} "hello"
}

// Call names the data of an NFSv3 WRITE, which a requester sends in a Read
// chunk.
func ExampleBinding_Call() {
	h := xdr.CallHeader{XID: 1, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcWrite}
	msg := h.Append(nil)
	args := len(msg)
	msg = xdr.AppendOpaque(msg, []byte{1, 2, 3, 4}) // file handle
	msg = xdr.AppendUint64(msg, 0)                  // offset
	msg = xdr.AppendUint32(msg, 3)                  // count
	msg = xdr.AppendUint32(msg, 2)                  // FILE_SYNC
	msg = xdr.AppendOpaque(msg, []byte("abc"))

	info := nfs.Binding{}.Call(&h, msg, args)
	fmt.Printf("%+v %q, reply at most %d bytes\n", info.Arg, msg[info.Arg.Off:info.Arg.Off+info.Arg.N], info.MaxReply)
	// Output:
	// {Off:68 N:3 Present:true} "abc", reply at most 160 bytes
}
