package nfs

import (
	gonfs "github.com/willscott/go-nfs"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// appendFattr3 appends a's fattr3 (RFC 1813 §2.6): the fields of
// gonfs.FileAttribute in order, the bytes go-nfs's reflective encoder
// writes, without the reflection.
func appendFattr3(b []byte, a *gonfs.FileAttribute) []byte {
	b = xdr.AppendUint32(b, uint32(a.Type))
	b = xdr.AppendUint32(b, a.FileMode)
	b = xdr.AppendUint32(b, a.Nlink)
	b = xdr.AppendUint32(b, a.UID)
	b = xdr.AppendUint32(b, a.GID)
	b = xdr.AppendUint64(b, a.Filesize)
	b = xdr.AppendUint64(b, a.Used)
	b = xdr.AppendUint32(b, a.SpecData[0])
	b = xdr.AppendUint32(b, a.SpecData[1])
	b = xdr.AppendUint64(b, a.FSID)
	b = xdr.AppendUint64(b, a.Fileid)
	for _, t := range [3]gonfs.FileTime{a.Atime, a.Mtime, a.Ctime} {
		b = xdr.AppendUint32(b, t.Seconds)
		b = xdr.AppendUint32(b, t.Nseconds)
	}
	return b
}

// appendPostOpAttr appends a post_op_attr (RFC 1813 §2.6): a's
// attributes, or none if a is nil.
func appendPostOpAttr(b []byte, a *gonfs.FileAttribute) []byte {
	if a == nil {
		return xdr.AppendBool(b, false)
	}
	return appendFattr3(xdr.AppendBool(b, true), a)
}
