package nfs_test

import (
	"encoding/binary"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// FuzzBindingCall: on any call to any procedure of NFS, MOUNT or NFSACL
// version 3, Call never panics; its bounds are sane; and a DDP-eligible
// argument it reports belongs to WRITE or SYMLINK and lies wholly inside
// the arguments, XDR pad included, word-aligned, just after its length word.
func FuzzBindingCall(f *testing.F) {
	for _, c := range procCases(f) {
		msg, args := encodeCall(f, c.prog, 3, c.proc, c.args)
		f.Add(msg, c.prog, c.proc, args)
		f.Add(msg[:len(msg)-1], c.prog, c.proc, args)
	}
	f.Add([]byte{}, uint32(nfs.ProgNFS), uint32(nfs.ProcWrite), 3)
	f.Fuzz(func(t *testing.T, msg []byte, prog, proc uint32, args int) {
		h := &xdr.CallHeader{Prog: prog, Vers: 3, Proc: proc}
		info := nfs.Binding{}.Call(h, msg, args)
		if info.MaxReply < 0 || info.ReplyData < 0 || (info.MaxReply != 0 && info.MaxReply < info.ReplyData) {
			t.Fatalf("bad bounds %+v", info)
		}
		if info.ReplyData != 0 && (prog != nfs.ProgNFS || (proc != nfs.ProcRead && proc != nfs.ProcReadlink)) {
			t.Fatalf("DDP-eligible result for %s", nfs.ProcName(prog, 3, proc))
		}
		a := info.Arg
		if !a.Present {
			return
		}
		if prog != nfs.ProgNFS || (proc != nfs.ProcWrite && proc != nfs.ProcSymlink) {
			t.Fatalf("argument item in %s", nfs.ProcName(prog, 3, proc))
		}
		if a.Off < args+4 || a.Off&3 != 0 || a.N < 0 || a.Off+xdr.RoundUp(a.N) > len(msg) {
			t.Fatalf("item %+v outside call of %d bytes (args at %d)", a, len(msg), args)
		}
		if n := binary.BigEndian.Uint32(msg[a.Off-4:]); int(n) != a.N {
			t.Fatalf("item length %d, length word %d", a.N, n)
		}
	})
}

// FuzzBindingReplyData: on any reply, ReplyData never panics, and an item it
// reports belongs to READ or READLINK, lies after the results, has its
// length word just before it, and is found again in the reply reduced to
// what precedes it (what a requester holds when the data went into a Write
// chunk).
func FuzzBindingReplyData(f *testing.F) {
	for _, data := range [][]byte{nil, []byte("abc"), make([]byte, 4096)} {
		for _, withAttrs := range []bool{false, true} {
			msg, res := encodeReply(f, readOK(data, withAttrs))
			f.Add(msg, uint32(nfs.ProcRead), res)
			f.Add(msg[:len(msg)/2], uint32(nfs.ProcRead), res)
			msg, res = encodeReply(f, readlinkOK(string(data), withAttrs))
			f.Add(msg, uint32(nfs.ProcReadlink), res)
		}
	}
	msg, res := encodeReply(f, &nfsv3.Read3res_default{Status: nfsv3.NFS3ERR_STALE,
		Resfail: nfsv3.Read3resfail{FileAttributes: &nfsv3.PostOpAttr_FALSE{}}})
	f.Add(msg, uint32(nfs.ProcRead), res)
	f.Add(msg, uint32(nfs.ProcGetattr), res)
	f.Add([]byte{}, uint32(nfs.ProcRead), -5)
	f.Fuzz(func(t *testing.T, reply []byte, proc uint32, results int) {
		h := readCall(proc)
		item := nfs.Binding{}.ReplyData(h, reply, results)
		if !item.Present {
			return
		}
		if proc != nfs.ProcRead && proc != nfs.ProcReadlink {
			t.Fatalf("item in a reply to %s", nfs.ProcName(nfs.ProgNFS, 3, proc))
		}
		if item.Off < results+4 || item.Off > len(reply) || item.N < 0 {
			t.Fatalf("item %+v outside reply of %d bytes (results at %d)", item, len(reply), results)
		}
		if n := binary.BigEndian.Uint32(reply[item.Off-4:]); int(n) != item.N {
			t.Fatalf("item length %d, length word %d", item.N, n)
		}
		if again := (nfs.Binding{}).ReplyData(h, reply[:item.Off], results); again != item {
			t.Fatalf("reduced reply: %+v, full reply: %+v", again, item)
		}
	})
}
