package gonfsd_test

import (
	"encoding/binary"
	"slices"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/go-rpcrdma/rpcrdma/e2e/internal/gonfsd"
)

// FuzzBindingReplyData: on any reply, ReplyData never panics, and an item it
// reports lies after the results, has its length word just before it, and
// is found again in the reply reduced to what precedes it (what a
// requester holds when the data went into a Write chunk).
func FuzzBindingReplyData(f *testing.F) {
	for _, data := range [][]byte{nil, []byte("abc"), make([]byte, 4096)} {
		for _, attrs := range []bool{false, true} {
			msg, res := encodeReply(f, 1, readOK(data, attrs))
			f.Add(msg, uint32(gonfsd.ProcRead), res)
			f.Add(msg[:len(msg)/2], uint32(gonfsd.ProcRead), res)
		}
	}
	msg, res := encodeReply(f, 1, &nfsv3.Read3res_default{Status: nfsv3.NFS3ERR_STALE,
		Resfail: nfsv3.Read3resfail{FileAttributes: &nfsv3.PostOpAttr_FALSE{}}})
	f.Add(msg, uint32(gonfsd.ProcRead), res)
	f.Add(msg, uint32(1), res)
	f.Add([]byte{}, uint32(gonfsd.ProcRead), -5)
	f.Fuzz(func(t *testing.T, reply []byte, proc uint32, results int) {
		h := nfsCall(proc)
		item := gonfsd.Binding{}.ReplyData(h, reply, results)
		if !item.Present {
			return
		}
		if proc != gonfsd.ProcRead {
			t.Fatalf("item in a reply to procedure %d", proc)
		}
		if item.Off < results+4 || item.Off > len(reply) || item.N < 0 {
			t.Fatalf("item %+v outside reply of %d bytes (results at %d)", item, len(reply), results)
		}
		if n := binary.BigEndian.Uint32(reply[item.Off-4:]); int(n) != item.N {
			t.Fatalf("item length %d, length word %d", item.N, n)
		}
		if again := (gonfsd.Binding{}).ReplyData(h, reply[:item.Off], results); again != item {
			t.Fatalf("reduced reply: %+v, full reply: %+v", again, item)
		}
	})
}

// FuzzBindingCall: on any call, Call never panics, and a DDP-eligible
// argument it reports lies wholly inside the arguments, just after its
// length word.
func FuzzBindingCall(f *testing.F) {
	for _, n := range []int{0, 3, 5000} {
		msg, args := encodeCall(f, 1, gonfsd.ProgNFS, 3, gonfsd.ProcWrite,
			&nfsv3.Write3args{File: fh, Count: uint32(n), Stable: nfsv3.FILE_SYNC, Data: make([]byte, n)})
		f.Add(msg, uint32(gonfsd.ProcWrite), args)
		f.Add(msg[:len(msg)-1], uint32(gonfsd.ProcWrite), args)
	}
	msg, args := encodeCall(f, 1, gonfsd.ProgNFS, 3, gonfsd.ProcRead, &nfsv3.Read3args{File: fh, Count: 1 << 20})
	f.Add(msg, uint32(gonfsd.ProcRead), args)
	f.Add(msg, uint32(0), args)
	f.Add([]byte{}, uint32(gonfsd.ProcWrite), 3)
	f.Fuzz(func(t *testing.T, msg []byte, proc uint32, args int) {
		info := gonfsd.Binding{}.Call(nfsCall(proc), msg, args)
		if info.MaxReply < 0 || info.ReplyData < 0 || info.MaxReply < info.ReplyData {
			t.Fatalf("bad bounds %+v", info)
		}
		a := info.Arg
		if !a.Present {
			return
		}
		if proc != gonfsd.ProcWrite {
			t.Fatalf("argument item in procedure %d", proc)
		}
		if a.Off < args+4 || a.N < 0 || a.Off+a.N > len(msg) {
			t.Fatalf("item %+v outside call of %d bytes (args at %d)", a, len(msg), args)
		}
		if n := binary.BigEndian.Uint32(msg[a.Off-4:]); int(n) != a.N {
			t.Fatalf("item length %d, length word %d", a.N, n)
		}
	})
}

// FuzzCallScanner: any byte stream, scanned at once or in pieces of any
// size, gives the calls and counts of the plain reference scanner.
func FuzzCallScanner(f *testing.F) {
	var stream []byte
	for i := range 4 {
		stream = appendCallRecord(stream, uint32(i), 1+i*7)
	}
	f.Add(stream, uint8(0))
	f.Add(stream, uint8(6))
	f.Add(stream[:len(stream)-9], uint8(2))
	f.Add([]byte{0x80, 0, 0, 0, 0x80, 0, 0, 3, 1, 2, 3}, uint8(1))
	f.Add([]byte{0x7f, 0xff, 0xff, 0xff, 0, 0}, uint8(0))
	f.Fuzz(func(t *testing.T, stream []byte, piece uint8) {
		all, s1 := scanAll(stream, nil)
		pieces, s2 := scanAll(stream, []int{int(piece) + 1})
		ref, other := scanReference(stream)
		if !slices.Equal(all, ref) || !slices.Equal(pieces, ref) {
			t.Fatalf("calls: at once %v, in pieces of %d %v, reference %v", all, int(piece)+1, pieces, ref)
		}
		if s1.Other != other || s2.Other != other || s1.Calls != uint64(len(ref)) || s2.Calls != uint64(len(ref)) {
			t.Fatalf("counts: %d/%d and %d/%d, reference %d/%d", s1.Calls, s1.Other, s2.Calls, s2.Other, len(ref), other)
		}
	})
}
