package server

import "github.com/go-rpcrdma/rpcrdma/xdr"

// decodeFileRange decodes what READ3args, WRITE3args and COMMIT3args
// begin with (RFC 1813 §3.3.6, §3.3.7, §3.3.21): the file's handle, an
// offset and a count. fh aliases r's buffer.
//
//	nfs_fh3 file; offset3 offset; count3 count;
func decodeFileRange(r *xdr.Reader) (fh []byte, offset uint64, count uint32, err error) {
	if fh, err = r.Opaque(nfs3FHSize); err != nil {
		return nil, 0, 0, err
	}
	if offset, err = r.Uint64(); err != nil {
		return nil, 0, 0, err
	}
	if count, err = r.Uint32(); err != nil {
		return nil, 0, 0, err
	}
	return fh, offset, count, nil
}
