package nfs

import "encoding/binary"

// maxDtpref is the largest dtpref FSINFO offers: 1 MiB, knfsd's usual
// max_blocksize and the Linux client's NFS_MAX_FILE_IO_SIZE.
const maxDtpref = 1 << 20

// dtpref is the preferred READDIR request size (RFC 1813 §3.3.19, dtpref)
// the Server's FSINFO replies give: what one message can carry, in whole
// 4 KiB pages, up to maxDtpref. knfsd gives its max_blocksize; go-nfs
// v0.0.4 gives 8192, and since the Linux client sizes its READDIR and
// READDIRPLUS calls by dtpref (and rsize), it then lists a directory in
// 8 KiB replies.
func (s *Server) dtpref() uint32 {
	n := (s.maxMsg - replyHeaderMax - readdirResokFixed - statusSize) &^ 4095
	return uint32(min(max(n, 4096), maxDtpref))
}

// finishFsinfo sets the dtpref of go-nfs's FSINFO reply to s.dtpref().
//
//	FSINFO3resok (RFC 1813 §3.3.19): post_op_attr obj_attributes; uint32
//	rtmax, rtpref, rtmult, wtmax, wtpref, wtmult, dtpref; size3
//	maxfilesize; nfstime3 time_delta; uint32 properties;
func (s *Server) finishFsinfo(reply []byte) []byte {
	r, off, ok := successResults(reply)
	if !ok {
		return reply
	}
	if status, err := r.Uint32(); err != nil || status != nfs3OK {
		return reply
	}
	follows, err := r.Bool()
	if err != nil {
		return reply
	}
	if follows {
		if err := r.Skip(fattr3Size); err != nil {
			return reply
		}
	}
	if err := r.Skip(6 * 4); err != nil || r.Len() < 4 {
		return reply
	}
	binary.BigEndian.PutUint32(reply[off+r.Offset():], s.dtpref())
	return reply
}
