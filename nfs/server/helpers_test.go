package server_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"
)

// Small helpers the binding's tests (package nfs) have too.

// encode returns v's XDR encoding (nil: none).
func encode(t testing.TB, v io.WriterTo) []byte {
	t.Helper()
	if v == nil {
		return nil
	}
	var b bytes.Buffer
	_, err := v.WriteTo(&b)
	require.NoError(t, err)
	return b.Bytes()
}

// writerFunc adapts a function to io.WriterTo.
type writerFunc func(io.Writer) (int64, error)

func (f writerFunc) WriteTo(w io.Writer) (int64, error) { return f(w) }

// sattrNone sets nothing, with SET_TO_SERVER_TIME for mtime.
func sattrNone() nfsv3.Sattr3 {
	return nfsv3.Sattr3{
		Mode: &nfsv3.SetMode3_default{}, Uid: &nfsv3.SetUid3_default{}, Gid: &nfsv3.SetGid3_default{},
		Size: &nfsv3.SetSize3_default{}, Atime: &nfsv3.SetAtime_default{SetIt: nfsv3.DONT_CHANGE},
		Mtime: &nfsv3.SetMtime_default{SetIt: nfsv3.SET_TO_SERVER_TIME},
	}
}
