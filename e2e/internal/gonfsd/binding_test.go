package gonfsd_test

import (
	"bytes"
	"encoding/binary"
	"io"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/mount"
	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/go-rpcrdma/rpcrdma/e2e/internal/gonfsd"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var fh = nfsv3.NfsFh3{Data: bytes.Repeat([]byte{0xfe}, 30)} // 30 bytes: padded to 32

func nfsCall(proc uint32) *xdr.CallHeader {
	return &xdr.CallHeader{XID: 9, Prog: gonfsd.ProgNFS, Vers: 3, Proc: proc}
}

func TestBindingReplyData(t *testing.T) {
	data := []byte("hello")
	withAttrs, res := encodeReply(t, 9, readOK(data, true))
	noAttrs, res2 := encodeReply(t, 9, readOK(nil, false))
	failed, res3 := encodeReply(t, 9, &nfsv3.Read3res_default{Status: nfsv3.NFS3ERR_IO,
		Resfail: nfsv3.Read3resfail{FileAttributes: &nfsv3.PostOpAttr_FALSE{}}})
	getattr, res4 := encodeReply(t, 9, &nfsv3.Getattr3res_NFS3_OK{Resok: nfsv3.Getattr3resok{ObjAttributes: fattr(5)}})
	require.Equal(t, res, res2)
	require.Equal(t, res, res3)

	// status, attributes_follow, fattr3, count, eof, length word.
	const okFixed = 4 + 4 + 84 + 4 + 4 + 4
	b := gonfsd.Binding{}
	got := b.ReplyData(nfsCall(gonfsd.ProcRead), withAttrs, res)
	require.Equal(t, transport.DataItem{Present: true, Off: res + okFixed, N: len(data)}, got)
	require.Equal(t, data, withAttrs[got.Off:got.Off+got.N])
	require.Equal(t, transport.DataItem{Present: true, Off: res2 + okFixed - 84, N: 0},
		b.ReplyData(nfsCall(gonfsd.ProcRead), noAttrs, res2))

	// A requester asks about the reply whose data went into a Write
	// chunk: the data is gone, its length word is still there.
	reduced := withAttrs[:got.Off]
	require.Equal(t, got, b.ReplyData(nfsCall(gonfsd.ProcRead), reduced, res))

	for name, c := range map[string]struct {
		h     *xdr.CallHeader
		reply []byte
		res   int
	}{
		"READ error":            {nfsCall(gonfsd.ProcRead), failed, res3},
		"GETATTR":               {nfsCall(1), getattr, res4},
		"READ of NFS version 2": {&xdr.CallHeader{Prog: gonfsd.ProgNFS, Vers: 2, Proc: gonfsd.ProcRead}, withAttrs, res},
		"procedure 6 of MOUNT":  {&xdr.CallHeader{Prog: gonfsd.ProgMount, Vers: 3, Proc: 6}, withAttrs, res},
		"results past the end":  {nfsCall(gonfsd.ProcRead), withAttrs, len(withAttrs) + 1},
		"negative results":      {nfsCall(gonfsd.ProcRead), withAttrs, -1},
	} {
		assert.False(t, b.ReplyData(c.h, c.reply, c.res).Present, name)
	}
}

// Every prefix of a READ reply: the item is found exactly when the prefix
// holds its length word, always at the same place.
func TestBindingReplyDataTruncated(t *testing.T) {
	msg, res := encodeReply(t, 9, readOK([]byte("abcdefg"), true))
	want := gonfsd.Binding{}.ReplyData(nfsCall(gonfsd.ProcRead), msg, res)
	require.True(t, want.Present)
	for n := range len(msg) {
		got := gonfsd.Binding{}.ReplyData(nfsCall(gonfsd.ProcRead), msg[:n], min(res, n))
		if n < want.Off {
			assert.False(t, got.Present, "prefix of %d bytes", n)
		} else {
			assert.Equal(t, want, got, "prefix of %d bytes", n)
		}
	}
}

// A bad boolean in post_op_attr or eof is no item.
func TestBindingReplyDataBadBool(t *testing.T) {
	msg, res := encodeReply(t, 9, readOK([]byte("abc"), false))
	b := gonfsd.Binding{}
	for _, at := range []int{res + 4, res + 12} { // attributes_follow, eof
		bad := bytes.Clone(msg)
		binary.BigEndian.PutUint32(bad[at:], 2)
		assert.False(t, b.ReplyData(nfsCall(gonfsd.ProcRead), bad, res).Present, "bool at %d", at-res)
	}
}

func TestBindingCall(t *testing.T) {
	b := gonfsd.Binding{}
	maxHeader := (&xdr.ReplyHeader{Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess,
		Verf: xdr.OpaqueAuth{Body: make([]byte, xdr.MaxAuthBytes)}}).EncodedLen()

	t.Run("READ", func(t *testing.T) {
		msg, args := encodeCall(t, 1, gonfsd.ProgNFS, 3, gonfsd.ProcRead, &nfsv3.Read3args{File: fh, Offset: 4096, Count: 65537})
		info := b.Call(nfsCall(gonfsd.ProcRead), msg, args)
		require.Equal(t, 65537, info.ReplyData)
		require.False(t, info.Arg.Present)
		// The bound is exact: the largest READ reply for this count.
		largest := readOK(make([]byte, 65537), true)
		require.Equal(t, maxHeader+largest.GetEncodedSizeBytes(), info.MaxReply)
	})
	t.Run("WRITE", func(t *testing.T) {
		for _, n := range []int{0, 3, 100 << 10} {
			data := bytes.Repeat([]byte{7}, n)
			msg, args := encodeCall(t, 1, gonfsd.ProgNFS, 3, gonfsd.ProcWrite,
				&nfsv3.Write3args{File: fh, Offset: 1, Count: uint32(n), Stable: nfsv3.FILE_SYNC, Data: data})
			info := b.Call(nfsCall(gonfsd.ProcWrite), msg, args)
			require.True(t, info.Arg.Present, "%d bytes", n)
			require.Equal(t, n, info.Arg.N)
			require.Equal(t, data, msg[info.Arg.Off:info.Arg.Off+info.Arg.N])
			require.Equal(t, uint32(n), binary.BigEndian.Uint32(msg[info.Arg.Off-4:]), "length word before the data")
			require.Zero(t, info.ReplyData)
			largest := &nfsv3.Write3res_NFS3_OK{Resok: nfsv3.Write3resok{FileWcc: nfsv3.WccData{
				Before: &nfsv3.PreOpAttr_TRUE{Attributes: nfsv3.WccAttr{}},
				After:  &nfsv3.PostOpAttr_TRUE{Attributes: fattr(0)}}}}
			require.Equal(t, maxHeader+largest.GetEncodedSizeBytes(), info.MaxReply)
		}
		// Data cut short: no DDP item, the reply bound still holds.
		msg, args := encodeCall(t, 1, gonfsd.ProgNFS, 3, gonfsd.ProcWrite,
			&nfsv3.Write3args{File: fh, Count: 8, Stable: nfsv3.UNSTABLE, Data: make([]byte, 8)})
		info := b.Call(nfsCall(gonfsd.ProcWrite), msg[:len(msg)-4], args)
		require.False(t, info.Arg.Present)
		require.NotZero(t, info.MaxReply)
	})
	t.Run("NULL", func(t *testing.T) {
		for _, prog := range []uint32{gonfsd.ProgNFS, gonfsd.ProgMount, gonfsd.ProgNFSACL, 1} {
			msg, args := encodeCall(t, 1, prog, 3, gonfsd.ProcNull, nil)
			info := b.Call(&xdr.CallHeader{Prog: prog, Vers: 3}, msg, args)
			require.Equal(t, transport.CallInfo{MaxReply: maxHeader}, info, "program %d", prog)
		}
	})
	t.Run("others", func(t *testing.T) {
		msg, args := encodeCall(t, 1, gonfsd.ProgMount, 3, 1, writerFunc(func(w io.Writer) (int64, error) {
			return mount.WriteDirpath(w, "/")
		}))
		require.Zero(t, b.Call(&xdr.CallHeader{Prog: gonfsd.ProgMount, Vers: 3, Proc: 1}, msg, args))
		msg, args = encodeCall(t, 1, gonfsd.ProgNFS, 3, 1, &nfsv3.Getattr3args{Object: fh})
		require.Zero(t, b.Call(nfsCall(1), msg, args))
		// A file handle longer than NFS3_FHSIZE is no READ.
		msg, args = encodeCall(t, 1, gonfsd.ProgNFS, 3, gonfsd.ProcRead, writerFunc(func(w io.Writer) (int64, error) {
			a := xdr.AppendOpaque(nil, make([]byte, 65)) // buildbarn refuses to encode it
			a = xdr.AppendUint64(a, 0)
			a = xdr.AppendUint32(a, 10)
			n, err := w.Write(a)
			return int64(n), err
		}))
		require.Zero(t, b.Call(nfsCall(gonfsd.ProcRead), msg, args))
		require.Zero(t, b.Call(nfsCall(gonfsd.ProcRead), msg, len(msg)+1))
	})
}

// Every prefix of a WRITE call never yields an item outside the prefix.
func TestBindingCallTruncated(t *testing.T) {
	msg, args := encodeCall(t, 1, gonfsd.ProgNFS, 3, gonfsd.ProcWrite,
		&nfsv3.Write3args{File: fh, Count: 5, Stable: nfsv3.FILE_SYNC, Data: []byte("12345")})
	for n := range len(msg) {
		info := gonfsd.Binding{}.Call(nfsCall(gonfsd.ProcWrite), msg[:n], min(args, n))
		assert.False(t, info.Arg.Present, "prefix of %d bytes", n)
	}
	assert.True(t, gonfsd.Binding{}.Call(nfsCall(gonfsd.ProcWrite), msg, args).Arg.Present)
}

func TestBindingNoAllocs(t *testing.T) {
	reply, res := encodeReply(t, 9, readOK(make([]byte, 4096), true))
	call, args := encodeCall(t, 1, gonfsd.ProgNFS, 3, gonfsd.ProcWrite,
		&nfsv3.Write3args{File: fh, Count: 4096, Stable: nfsv3.FILE_SYNC, Data: make([]byte, 4096)})
	rh, wh := nfsCall(gonfsd.ProcRead), nfsCall(gonfsd.ProcWrite)
	var b transport.Binding = gonfsd.Binding{}
	allocs := testing.AllocsPerRun(100, func() {
		if !b.ReplyData(rh, reply, res).Present || !b.Call(wh, call, args).Arg.Present {
			panic("no item")
		}
	})
	require.Zero(t, allocs)
}

func BenchmarkBindingReplyData(b *testing.B) {
	reply, res := encodeReply(b, 9, readOK(make([]byte, 4096), true))
	h := nfsCall(gonfsd.ProcRead)
	var bd transport.Binding = gonfsd.Binding{}
	b.ReportAllocs()
	for b.Loop() {
		if !bd.ReplyData(h, reply, res).Present {
			b.Fatal("no item")
		}
	}
}

func BenchmarkBindingCall(b *testing.B) {
	call, args := encodeCall(b, 1, gonfsd.ProgNFS, 3, gonfsd.ProcWrite,
		&nfsv3.Write3args{File: fh, Count: 4096, Stable: nfsv3.FILE_SYNC, Data: make([]byte, 4096)})
	h := nfsCall(gonfsd.ProcWrite)
	var bd transport.Binding = gonfsd.Binding{}
	b.ReportAllocs()
	for b.Loop() {
		if !bd.Call(h, call, args).Arg.Present {
			b.Fatal("no item")
		}
	}
}
