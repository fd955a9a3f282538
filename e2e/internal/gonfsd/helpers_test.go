package gonfsd_test

import (
	"bytes"
	"io"
	"testing"

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

// writerFunc adapts a function to io.WriterTo.
type writerFunc func(io.Writer) (int64, error)

func (f writerFunc) WriteTo(w io.Writer) (int64, error) { return f(w) }
