package server

import "github.com/go-rpcrdma/rpcrdma/nfs"

// maxDtpref is the largest dtpref FSINFO offers: 1 MiB, knfsd's usual
// max_blocksize and the Linux client's NFS_MAX_FILE_IO_SIZE.
const maxDtpref = 1 << 20

// dtpref is the preferred READDIR request size (RFC 1813 §3.3.19, dtpref)
// the Server's FSINFO replies give: what one message can carry, in whole
// 4 KiB pages, up to maxDtpref, as knfsd gives its max_blocksize. The Linux
// client sizes its READDIR and READDIRPLUS calls by dtpref (and rsize).
func (s *Server) dtpref() uint32 {
	n := (s.maxMsg - nfs.ReplyHeaderMax - readdirResokFixed - nfs.StatusSize) &^ 4095
	return uint32(min(max(n, 4096), maxDtpref))
}
