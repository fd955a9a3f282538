package gonfsd_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/gonfsd"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// A Server on the software provider: NFS NULL over RPC-over-RDMA, MOUNT
// NULL over TCP, each counted on its transport. In the VM the same server
// runs with Provider: &rdmacore.Provider{} on 10.0.0.1:20049 and the Linux
// kernel mounts it.
func ExampleStart() {
	dir, err := os.MkdirTemp("", "gonfsd")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	srv, err := gonfsd.Start(gonfsd.Config{FS: gonfsd.NewDirFS(dir), RDMAAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0"})
	if err != nil {
		log.Fatal(err)
	}
	defer srv.Close()

	null := func(xid, prog uint32) []byte {
		h := xdr.CallHeader{XID: xid, Prog: prog, Vers: 3, Proc: 0}
		return h.Append(nil)
	}
	rc, err := transport.Dial(context.Background(), srv.RDMAAddr().String(), &transport.Config{Provider: &soft.Provider{}})
	if err != nil {
		log.Fatal(err)
	}
	defer rc.Close()
	if err := rc.WriteMsg(null(1, gonfsd.ProgNFS)); err != nil {
		log.Fatal(err)
	}
	if _, err := rc.ReadMsg(nil); err != nil {
		log.Fatal(err)
	}
	tc, err := net.Dial("tcp", srv.TCPAddr().String())
	if err != nil {
		log.Fatal(err)
	}
	defer tc.Close()
	if _, err := tc.Write(xdr.AppendRecord(nil, null(2, gonfsd.ProgMount), 0)); err != nil {
		log.Fatal(err)
	}
	if _, err := xdr.ReadRecord(tc, nil, 1<<16); err != nil {
		log.Fatal(err)
	}

	for _, c := range srv.Calls() {
		fmt.Printf("%s: %s x%d\n", c.Transport, c.ID, c.N)
	}
	fmt.Printf("private data % x\n", srv.ConnRequests()[0].PrivateData[:8])
	// Output:
	// rdma: NFS3 NULL x1
	// tcp: MOUNT3 NULL x1
	// private data f6 ab 0e 18 01 01 03 03
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

	call := &xdr.CallHeader{Prog: gonfsd.ProgNFS, Vers: 3, Proc: gonfsd.ProcRead}
	item := gonfsd.Binding{}.ReplyData(call, reply, results)
	fmt.Printf("%+v %q\n", item, reply[item.Off:item.Off+item.N])
	// Output:
	// {Off:44 N:5 Present:true} "hello"
}

// Call names the data of an NFSv3 WRITE, which a requester sends in a Read
// chunk.
func ExampleBinding_Call() {
	h := xdr.CallHeader{XID: 1, Prog: gonfsd.ProgNFS, Vers: 3, Proc: gonfsd.ProcWrite}
	msg := h.Append(nil)
	args := len(msg)
	msg = xdr.AppendOpaque(msg, []byte{1, 2, 3, 4}) // file handle
	msg = xdr.AppendUint64(msg, 0)                  // offset
	msg = xdr.AppendUint32(msg, 3)                  // count
	msg = xdr.AppendUint32(msg, 2)                  // FILE_SYNC
	msg = xdr.AppendOpaque(msg, []byte("abc"))

	info := gonfsd.Binding{}.Call(&h, msg, args)
	fmt.Printf("%+v %q, reply at most %d bytes\n", info.Arg, msg[info.Arg.Off:info.Arg.Off+info.Arg.N], info.MaxReply)
	// Output:
	// {Off:68 N:3 Present:true} "abc", reply at most 560 bytes
}

// A CallScanner reports the procedure of each call in a record-marked
// stream, however it is cut.
func ExampleCallScanner() {
	var stream []byte
	for _, proc := range []uint32{0, 6} {
		h := xdr.CallHeader{XID: proc, Prog: gonfsd.ProgNFS, Vers: 3, Proc: proc}
		stream = xdr.AppendRecord(stream, h.Append(nil), 10) // 10-byte fragments
	}
	var s gonfsd.CallScanner
	for _, b := range stream { // one byte at a time
		s.Scan([]byte{b}, func(id gonfsd.CallID) { fmt.Println(id) })
	}
	fmt.Println(s.Calls, "calls")
	// Output:
	// NFS3 NULL
	// NFS3 READ
	// 2 calls
}

func ExampleCallID_String() {
	fmt.Println(gonfsd.CallID{Prog: gonfsd.ProgMount, Vers: 3, Proc: 1})
	fmt.Println(gonfsd.CallID{Prog: gonfsd.ProgNFSACL, Vers: 3, Proc: 0})
	fmt.Println(gonfsd.CallID{Prog: gonfsd.ProgNLM, Vers: 4, Proc: 2})
	// Output:
	// MOUNT3 MNT
	// NFSACL3 NULL
	// prog 100021 v4 proc 2
}

// A DirFS exports a directory; what go-nfs writes is a plain file.
func ExampleNewDirFS() {
	dir, err := os.MkdirTemp("", "dirfs")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	fs := gonfsd.NewDirFS(dir)
	f, err := fs.Create("sub/f3")
	if err != nil {
		log.Fatal(err)
	}
	if _, err := f.Write([]byte("abc")); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "sub", "f3"))
	fmt.Printf("%s %q %v\n", f.Name(), b, err)
	// Output:
	// sub/f3 "abc" <nil>
}
