package server

import (
	"math"

	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// openQueried opens the object whose attributes FSSTAT, FSINFO and
// PATHCONF return with their answer (RFC 1813 §3.3.18-20), setting attr;
// if fh does not open, it sets status and returns nil.
func (s *Server) openQueried(c *call, fh []byte, status *nfs3.Status, attr *nfs3.PostOpAttr) *object {
	o, err := c.dh.openObject(fh)
	if err != nil {
		*status = statusOf(err)
		return nil
	}
	*attr = o.attr()
	return o
}

// fsstat executes an NFSv3 FSSTAT (RFC 1813 §3.3.18) from statfs(2) of
// the export's file system; abytes and afiles are what an unprivileged
// user may still take.
func (s *Server) fsstat(c *call, r *xdr.Reader, b []byte) ([]byte, bool) {
	var a nfs3.FsstatArgs
	if a.Decode(r) != nil {
		return nil, false
	}
	res := nfs3.FsstatRes{}
	o := s.openQueried(c, a.FSRoot, &res.Status, &res.ObjAttr)
	if o == nil {
		return res.Append(b), true
	}
	defer o.close()
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(o.fd, &sfs); err != nil {
		res.Status = statusOf(err)
		return res.Append(b), true
	}
	bs := uint64(sfs.Bsize)
	res.Tbytes, res.Fbytes, res.Abytes = sfs.Blocks*bs, sfs.Bfree*bs, sfs.Bavail*bs
	res.Tfiles, res.Ffiles, res.Afiles = sfs.Files, sfs.Ffree, sfs.Ffree
	return res.Append(b), true
}

// fsinfo executes an NFSv3 FSINFO (RFC 1813 §3.3.19): the largest READ
// and WRITE the server's messages carry (rtmax, wtmax, which the client's
// rsize and wsize may not exceed), a dtpref one message holds, files as
// large as the kernel allows, nanosecond times, hard and symbolic links,
// and times the client may set.
func (s *Server) fsinfo(c *call, r *xdr.Reader, b []byte) ([]byte, bool) {
	var a nfs3.FsinfoArgs
	if a.Decode(r) != nil {
		return nil, false
	}
	res := nfs3.FsinfoRes{}
	o := s.openQueried(c, a.FSRoot, &res.Status, &res.ObjAttr)
	if o == nil {
		return res.Append(b), true
	}
	defer o.close()
	io := s.maxIO()
	res.Rtmax, res.Rtpref, res.Rtmult = io, io, 4096
	res.Wtmax, res.Wtpref, res.Wtmult = io, io, 4096
	res.Dtpref = s.dtpref()
	res.MaxFileSize = math.MaxInt64
	res.TimeDelta = nfs3.Time{Nsec: 1}
	res.Properties = nfs3.FSFLink | nfs3.FSFSymlink | nfs3.FSFHomogeneous | nfs3.FSFCanSetTime
	return res.Append(b), true
}

// maxIO is the largest READ or WRITE count the server serves: what one
// message carries besides the reply's header and attributes, in whole
// 4 KiB pages, at least 4 KiB.
func (s *Server) maxIO() uint32 {
	n := (s.maxMsg - nfs.ReplyHeaderMax - nfs.StatusSize - nfs.WccDataMax - 64) &^ 4095
	return uint32(max(n, 4096))
}

// pathconf executes an NFSv3 PATHCONF (RFC 1813 §3.3.20) as knfsd
// answers it: at least 255 links, names of up to 255 bytes never
// truncated, chown restricted to root, case kept.
func (s *Server) pathconf(c *call, r *xdr.Reader, b []byte) ([]byte, bool) {
	var a nfs3.PathconfArgs
	if a.Decode(r) != nil {
		return nil, false
	}
	res := nfs3.PathconfRes{}
	o := s.openQueried(c, a.Object, &res.Status, &res.ObjAttr)
	if o == nil {
		return res.Append(b), true
	}
	defer o.close()
	res.Linkmax, res.NameMax = 255, nfs3.NameMax
	res.NoTrunc, res.ChownRestricted, res.CasePreserving = true, true, true
	return res.Append(b), true
}
