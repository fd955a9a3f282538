package nfs_test

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

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
