package gonfsd_test

import (
	"context"
	"fmt"
	"log"
	"net"
	"os"
	"path/filepath"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/gonfsd"
	"github.com/go-rpcrdma/rpcrdma/nfs"
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
	if err := rc.WriteMsg(null(1, nfs.ProgNFS)); err != nil {
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
	if _, err := tc.Write(xdr.AppendRecord(nil, null(2, nfs.ProgMount), 0)); err != nil {
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

// A CallScanner reports the procedure of each call in a record-marked
// stream, however it is cut.
func ExampleCallScanner() {
	var stream []byte
	for _, proc := range []uint32{0, 6} {
		h := xdr.CallHeader{XID: proc, Prog: nfs.ProgNFS, Vers: 3, Proc: proc}
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
	fmt.Println(gonfsd.CallID{Prog: nfs.ProgMount, Vers: 3, Proc: 1})
	fmt.Println(gonfsd.CallID{Prog: nfs.ProgNFSACL, Vers: 3, Proc: 0})
	fmt.Println(gonfsd.CallID{Prog: nfs.ProgNLM, Vers: 4, Proc: 2})
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
