package server

import (
	"golang.org/x/sys/unix"

	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// remove executes an NFSv3 REMOVE (RFC 1813 §3.3.12), or RMDIR
// (§3.3.13) when dirs, as the caller: the kernel's rules decide (write
// and search permission on the directory, the sticky bit, NFS3ERR_ISDIR
// or NFS3ERR_NOTDIR for the wrong type, NFS3ERR_NOTEMPTY), "." and ".."
// are NFS3ERR_ACCES as from knfsd.
func (s *Server) remove(c *call, r *xdr.Reader, b []byte, dirs bool) ([]byte, bool) {
	var a nfs3.RemoveArgs
	if a.Decode(r) != nil || !validName(a.Object.Name) {
		return nil, false
	}
	res := nfs3.RemoveRes{}
	dir, err := c.dh.openDir(a.Object.Dir)
	if err != nil {
		res.Status = statusOf(err)
		return res.Append(b), true
	}
	defer dir.close()
	name := a.Object.Name
	switch {
	case c.readOnly():
		err = nfs3.ErrROFS
	case isDot(name):
		err = nfs3.ErrAcces
	default:
		gone, known := entryInode(dir, name)
		flags := 0
		if dirs {
			flags = unix.AT_REMOVEDIR
		}
		err = s.as(c, func() error { return unix.Unlinkat(dir.fd, name, flags) })
		if err == nil {
			c.dh.dir.idx.removed(dir.child(name))
			if known {
				c.dh.files.forgetInode(gone) // its space is freed now
			}
		}
	}
	res.Status = statusOf(err)
	res.DirWcc = dir.wcc()
	return res.Append(b), true
}

// entryInode returns the inode number of the entry name of dir, if it
// has one: the file a REMOVE or RENAME is about to unlink, whose
// descriptors the open-file cache then drops.
func entryInode(dir *object, name string) (uint64, bool) {
	var st unix.Stat_t
	if unix.Fstatat(dir.fd, name, &st, unix.AT_SYMLINK_NOFOLLOW) != nil {
		return 0, false
	}
	return st.Ino, true
}

// rename executes an NFSv3 RENAME (RFC 1813 §3.3.14) as the caller: the
// kernel's rules decide (a directory over a non-empty one is
// NFS3ERR_NOTEMPTY or NFS3ERR_EXIST, a directory into itself
// NFS3ERR_INVAL, the sticky bit); "." and ".." are NFS3ERR_PERM as from
// knfsd.
func (s *Server) rename(c *call, r *xdr.Reader, b []byte) ([]byte, bool) {
	var a nfs3.RenameArgs
	if a.Decode(r) != nil || !validName(a.From.Name) || !validName(a.To.Name) {
		return nil, false
	}
	res := nfs3.RenameRes{}
	from, err := c.dh.openDir(a.From.Dir)
	if err != nil {
		res.Status = statusOf(err)
		return res.Append(b), true
	}
	defer from.close()
	to, err := c.dh.openDir(a.To.Dir)
	if err != nil {
		res.Status = statusOf(err)
		res.FromDirWcc = from.wcc()
		return res.Append(b), true
	}
	defer to.close()
	switch {
	case c.readOnly():
		err = nfs3.ErrROFS
	case isDot(a.From.Name) || isDot(a.To.Name):
		err = nfs3.ErrPerm
	default:
		replaced, known := entryInode(to, a.To.Name)
		err = s.as(c, func() error { return unix.Renameat(from.fd, a.From.Name, to.fd, a.To.Name) })
		if err == nil {
			c.dh.dir.idx.renamed(from.child(a.From.Name), to.child(a.To.Name))
			if known {
				c.dh.files.forgetInode(replaced)
			}
		}
	}
	res.Status = statusOf(err)
	res.FromDirWcc = from.wcc()
	res.ToDirWcc = to.wcc()
	return res.Append(b), true
}

// link executes an NFSv3 LINK (RFC 1813 §3.3.15). As knfsd, it asks of
// the caller only what creating in the directory needs (write and
// search permission, checked as the caller), and links as the server:
// the local protected_hardlinks policy of link(2) is not NFS's.
func (s *Server) link(c *call, r *xdr.Reader, b []byte) ([]byte, bool) {
	var a nfs3.LinkArgs
	if a.Decode(r) != nil || !validName(a.Link.Name) {
		return nil, false
	}
	res := nfs3.LinkRes{}
	o, err := c.dh.openObject(a.File)
	if err != nil {
		res.Status = statusOf(err)
		return res.Append(b), true
	}
	defer o.close()
	dir, err := c.dh.openDir(a.Link.Dir)
	if err != nil {
		res.Status = statusOf(err)
		res.FileAttr = o.attr()
		return res.Append(b), true
	}
	defer dir.close()
	switch {
	case c.readOnly():
		err = nfs3.ErrROFS
	case isDot(a.Link.Name):
		err = nfs3.ErrExist
	case o.isDir():
		err = nfs3.ErrIsDir
	default:
		err = s.as(c, func() error {
			return unix.Faccessat2(dir.fd, "", unix.W_OK|unix.X_OK, unix.AT_EACCESS|unix.AT_EMPTY_PATH)
		})
		if err == nil {
			err = unix.Linkat(o.fd, "", dir.fd, a.Link.Name, unix.AT_EMPTY_PATH)
		}
		if err == nil {
			c.dh.dir.idx.add(o.st.Ino, dir.child(a.Link.Name), false)
		}
	}
	res.Status = statusOf(err)
	res.FileAttr = o.fresh()
	res.LinkDirWcc = dir.wcc()
	return res.Append(b), true
}
