package nfs_test

import (
	"bytes"
	"io"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
	"github.com/stretchr/testify/require"
)

// encodeCall encodes an RPC call with an AUTH_SYS credential and the
// arguments args (encoded by buildbarn/go-xdr's generated code, so that the
// offsets the binding finds are checked against a third-party encoder). It
// returns the message and the offset of the arguments.
func encodeCall(t testing.TB, prog, vers, proc uint32, args io.WriterTo) ([]byte, int) {
	t.Helper()
	sys := xdr.AuthSys{Stamp: 7, MachineName: []byte("client"), GIDs: []uint32{0, 1}}
	h := xdr.CallHeader{XID: 1, Prog: prog, Vers: vers, Proc: proc, Cred: sys.OpaqueAuth(nil)}
	msg := h.Append(nil)
	off := len(msg)
	if args != nil {
		msg = append(msg, encode(t, args)...)
	}
	return msg, off
}

// encodeReply encodes an accepted SUCCESS reply with the results res and
// an AUTH_NONE verifier; it returns the reply and the offset of the results.
func encodeReply(t testing.TB, res io.WriterTo) ([]byte, int) {
	t.Helper()
	h := xdr.ReplyHeader{XID: 1, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}
	msg := h.Append(nil)
	return append(msg, encode(t, res)...), len(msg)
}

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

// maxHeader is the largest accepted reply header: a verifier of
// xdr.MaxAuthBytes (RFC 5531 §8.2).
var maxHeader = (&xdr.ReplyHeader{Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess,
	Verf: xdr.OpaqueAuth{Body: make([]byte, xdr.MaxAuthBytes)}}).EncodedLen()

// minHeader is an accepted reply header with an AUTH_NONE verifier.
var minHeader = (&xdr.ReplyHeader{Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}).EncodedLen()

// writerFunc adapts a function to io.WriterTo.
type writerFunc func(io.Writer) (int64, error)

func (f writerFunc) WriteTo(w io.Writer) (int64, error) { return f(w) }

// raw is XDR the test encodes itself.
type raw []byte

func (r raw) WriteTo(w io.Writer) (int64, error) {
	n, err := w.Write(r)
	return int64(n), err
}

// Items of the largest size, for the largest results.
var (
	bigFH   = nfsv3.NfsFh3{Data: bytes.Repeat([]byte{0xfe}, 64)} // NFS3_FHSIZE
	smallFH = nfsv3.NfsFh3{Data: bytes.Repeat([]byte{0xfe}, 30)} // padded to 32
	verf    = [8]byte{1, 2, 3, 4, 5, 6, 7, 8}
)

func fattr(size uint64) nfsv3.Fattr3 {
	return nfsv3.Fattr3{Type: nfsv3.NF3REG, Mode: 0o644, Nlink: 1, Size: size, Used: size, Fileid: 42}
}

func attrs() nfsv3.PostOpAttr { return &nfsv3.PostOpAttr_TRUE{Attributes: fattr(1)} }

func wcc() nfsv3.WccData {
	return nfsv3.WccData{Before: &nfsv3.PreOpAttr_TRUE{Attributes: nfsv3.WccAttr{Size: 1}}, After: attrs()}
}

// sattrAll sets every attribute (the largest sattr3).
func sattrAll() nfsv3.Sattr3 {
	return nfsv3.Sattr3{
		Mode: &nfsv3.SetMode3_TRUE{Mode: 0o755}, Uid: &nfsv3.SetUid3_TRUE{Uid: 1}, Gid: &nfsv3.SetGid3_TRUE{Gid: 2},
		Size:  &nfsv3.SetSize3_TRUE{Size: 3},
		Atime: &nfsv3.SetAtime_SET_TO_CLIENT_TIME{Atime: nfsv3.Nfstime3{Seconds: 4}},
		Mtime: &nfsv3.SetMtime_SET_TO_CLIENT_TIME{Mtime: nfsv3.Nfstime3{Seconds: 5}},
	}
}

// sattrNone sets nothing, with SET_TO_SERVER_TIME for mtime.
func sattrNone() nfsv3.Sattr3 {
	return nfsv3.Sattr3{
		Mode: &nfsv3.SetMode3_default{}, Uid: &nfsv3.SetUid3_default{}, Gid: &nfsv3.SetGid3_default{},
		Size: &nfsv3.SetSize3_default{}, Atime: &nfsv3.SetAtime_default{SetIt: nfsv3.DONT_CHANGE},
		Mtime: &nfsv3.SetMtime_default{SetIt: nfsv3.SET_TO_SERVER_TIME},
	}
}

// readOK is a successful READ3res with data (and attributes when withAttrs).
func readOK(data []byte, withAttrs bool) *nfsv3.Read3res_NFS3_OK {
	var pa nfsv3.PostOpAttr = &nfsv3.PostOpAttr_FALSE{}
	if withAttrs {
		pa = attrs()
	}
	return &nfsv3.Read3res_NFS3_OK{Resok: nfsv3.Read3resok{FileAttributes: pa, Count: uint32(len(data)), Eof: true, Data: data}}
}

// readlinkOK is a successful READLINK3res.
func readlinkOK(path string, withAttrs bool) *nfsv3.Readlink3res_NFS3_OK {
	var pa nfsv3.PostOpAttr = &nfsv3.PostOpAttr_FALSE{}
	if withAttrs {
		pa = attrs()
	}
	return &nfsv3.Readlink3res_NFS3_OK{Resok: nfsv3.Readlink3resok{SymlinkAttributes: pa, Data: path}}
}

// dirEntries returns READDIR entries whose encoding, value_follows words
// included, is exactly n bytes (n a multiple of 256).
func dirEntries(n int) *nfsv3.Entry3 {
	var head *nfsv3.Entry3
	for range n / 256 {
		// value_follows, fileid, name (4 + 232), cookie.
		head = &nfsv3.Entry3{Fileid: 1, Name: string(bytes.Repeat([]byte{'a'}, 232)), Cookie: 2, Nextentry: head}
	}
	return head
}

// dirEntriesPlus is dirEntries for READDIRPLUS.
func dirEntriesPlus(n int) *nfsv3.Entryplus3 {
	var head *nfsv3.Entryplus3
	for range n / 256 {
		// value_follows, fileid, name (4 + 72), cookie, post_op_attr
		// (88), post_op_fh3 (72).
		head = &nfsv3.Entryplus3{Fileid: 1, Name: string(bytes.Repeat([]byte{'a'}, 72)), Cookie: 2,
			NameAttributes: attrs(), NameHandle: &nfsv3.PostOpFh3_TRUE{Handle: bigFH}, Nextentry: head}
	}
	return head
}
