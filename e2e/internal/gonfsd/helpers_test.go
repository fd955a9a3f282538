package gonfsd_test

import (
	"bytes"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
	"github.com/stretchr/testify/require"
)

// encodeCall encodes an RPC call with an AUTH_SYS credential and the
// arguments args (encoded by buildbarn/go-xdr's generated code, so that the
// offsets the binding finds are checked against a third-party encoder). It
// returns the message and the offset of the arguments.
func encodeCall(t testing.TB, xid, prog, vers, proc uint32, args io.WriterTo) ([]byte, int) {
	t.Helper()
	sys := xdr.AuthSys{Stamp: 7, MachineName: []byte("client"), UID: 0, GID: 0, GIDs: []uint32{0, 1}}
	h := xdr.CallHeader{XID: xid, Prog: prog, Vers: vers, Proc: proc, Cred: sys.OpaqueAuth(nil)}
	msg := h.Append(nil)
	off := len(msg)
	if args != nil {
		var b bytes.Buffer
		_, err := args.WriteTo(&b)
		require.NoError(t, err)
		msg = append(msg, b.Bytes()...)
	}
	return msg, off
}

// encodeReply encodes an accepted SUCCESS reply with the results res and
// returns it and the offset of the results.
func encodeReply(t testing.TB, xid uint32, res io.WriterTo) ([]byte, int) {
	t.Helper()
	h := xdr.ReplyHeader{XID: xid, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}
	msg := h.Append(nil)
	off := len(msg)
	var b bytes.Buffer
	_, err := res.WriteTo(&b)
	require.NoError(t, err)
	return append(msg, b.Bytes()...), off
}

// fattr returns a regular file's attributes of the given size.
func fattr(size uint64) nfsv3.Fattr3 {
	return nfsv3.Fattr3{Type: nfsv3.NF3REG, Mode: 0o644, Nlink: 1, Size: size, Used: size, Fileid: 42}
}

// readOK is a successful READ3res with data (and attributes when attrs).
func readOK(data []byte, attrs bool) *nfsv3.Read3res_NFS3_OK {
	var pa nfsv3.PostOpAttr = &nfsv3.PostOpAttr_FALSE{}
	if attrs {
		pa = &nfsv3.PostOpAttr_TRUE{Attributes: fattr(uint64(len(data)))}
	}
	return &nfsv3.Read3res_NFS3_OK{Resok: nfsv3.Read3resok{FileAttributes: pa, Count: uint32(len(data)), Eof: true, Data: data}}
}

// writerFunc adapts a function to io.WriterTo.
type writerFunc func(io.Writer) (int64, error)

func (f writerFunc) WriteTo(w io.Writer) (int64, error) { return f(w) }

// pattern returns n pseudo-random bytes that depend on seed.
func pattern(n int, seed uint64) []byte {
	p := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	return p
}
