package client

import (
	"context"
	"errors"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
)

// Null calls NFSPROC3_NULL (RFC 1813 §3.3.0), a ping.
func (c *Client) Null(ctx context.Context) error {
	b := getIOBuf(0)
	defer putIOBuf(b)
	b.msg = c.startCall(b.msg, nfs.ProcNull)
	_, reply, err := c.do(ctx, nfs.ProcNull, b.msg, b.reply)
	b.reply = reply
	return err
}

// Getattr calls NFSPROC3_GETATTR (RFC 1813 §3.3.1).
func (c *Client) Getattr(ctx context.Context, fh FH) (*Attr, error) {
	args := nfs3.GetattrArgs{Object: fh}
	b := getIOBuf(0)
	defer putIOBuf(b)
	b.msg = args.Append(c.startCall(b.msg, nfs.ProcGetattr))
	results, reply, err := c.do(ctx, nfs.ProcGetattr, b.msg, b.reply)
	b.reply = reply
	if err != nil {
		return nil, err
	}
	r, err := resultsOK(nfs.ProcGetattr, results)
	if err != nil {
		return nil, err
	}
	var res nfs3.GetattrRes
	if err := res.Decode(&r); err != nil {
		return nil, decodeErr(nfs.ProcGetattr, err)
	}
	a := attrFromFattr(&res.Attr)
	return &a, nil
}

// Setattr calls NFSPROC3_SETATTR (RFC 1813 §3.3.2). With guard set, the
// server changes nothing unless the file's ctime equals *guard
// (NFS3ERR_NOT_SYNC).
func (c *Client) Setattr(ctx context.Context, fh FH, s *SetAttr, guard *time.Time) (WccAttr, error) {
	args := nfs3.SetattrArgs{Object: fh, NewAttr: sattrOf(s), Check: guard != nil}
	if guard != nil {
		args.CtimeGuard = nfs3.TimeOf(*guard)
	}
	r, err := c.call(ctx, nfs.ProcSetattr, args.Append(c.newCall(nfs.ProcSetattr)))
	if err != nil {
		return WccAttr{}, err
	}
	var res nfs3.SetattrRes
	if err := res.Decode(&r); err != nil {
		return WccAttr{}, decodeErr(nfs.ProcSetattr, err)
	}
	return wccOf(&res.Wcc), nil
}

// Lookup calls NFSPROC3_LOOKUP (RFC 1813 §3.3.3): the handle of name in
// dir, and its attributes when the server sent them.
func (c *Client) Lookup(ctx context.Context, dir FH, name string) (FH, *Attr, error) {
	args := nfs3.LookupArgs{What: nfs3.DirOpArgs{Dir: dir, Name: name}}
	r, err := c.call(ctx, nfs.ProcLookup, args.Append(c.newCall(nfs.ProcLookup)))
	if err != nil {
		return nil, nil, err
	}
	var res nfs3.LookupRes
	if err := res.Decode(&r); err != nil {
		return nil, nil, decodeErr(nfs.ProcLookup, err)
	}
	return cloneFH(res.Object), attrOf(&res.ObjAttr), nil
}

// ACCESS bits (RFC 1813 §3.3.4).
const (
	AccessRead    = nfs3.AccessRead
	AccessLookup  = nfs3.AccessLookup
	AccessModify  = nfs3.AccessModify
	AccessExtend  = nfs3.AccessExtend
	AccessDelete  = nfs3.AccessDelete
	AccessExecute = nfs3.AccessExecute
)

// Access calls NFSPROC3_ACCESS (RFC 1813 §3.3.4) and returns the bits of
// mask the server grants.
func (c *Client) Access(ctx context.Context, fh FH, mask uint32) (uint32, error) {
	args := nfs3.AccessArgs{Object: fh, Access: mask}
	r, err := c.call(ctx, nfs.ProcAccess, args.Append(c.newCall(nfs.ProcAccess)))
	if err != nil {
		return 0, err
	}
	var res nfs3.AccessRes
	if err := res.Decode(&r); err != nil {
		return 0, decodeErr(nfs.ProcAccess, err)
	}
	return res.Access, nil
}

// Readlink calls NFSPROC3_READLINK (RFC 1813 §3.3.5); the path arrives in
// the Write chunk (RFC 8267 §4.2).
func (c *Client) Readlink(ctx context.Context, fh FH) (string, error) {
	args := nfs3.ReadlinkArgs{Symlink: fh}
	r, err := c.call(ctx, nfs.ProcReadlink, args.Append(c.newCall(nfs.ProcReadlink)))
	if err != nil {
		return "", err
	}
	var res nfs3.ReadlinkRes
	if err := res.Decode(&r); err != nil {
		return "", decodeErr(nfs.ProcReadlink, err)
	}
	return res.Path, nil
}

// CreateMode is a createmode3 (RFC 1813 §3.3.8).
type CreateMode uint32

// Create modes (RFC 1813 §3.3.8).
const (
	// Unchecked creates the file or truncates (with Attr.Size) an
	// existing one.
	Unchecked = CreateMode(nfs3.Unchecked)
	// Guarded fails with NFS3ERR_EXIST when the name exists.
	Guarded = CreateMode(nfs3.Guarded)
	// Exclusive creates the file once for a given verifier, even when
	// the call is retransmitted; set its attributes with SETATTR after.
	Exclusive = CreateMode(nfs3.Exclusive)
)

// CreateHow is a createhow3 (RFC 1813 §3.3.8).
type CreateHow struct {
	Mode CreateMode
	// Attr are the attributes of Unchecked and Guarded.
	Attr *SetAttr
	// Verf is Exclusive's createverf3.
	Verf [8]byte
}

// Create calls NFSPROC3_CREATE (RFC 1813 §3.3.8) and returns the new
// file's handle (looked up when the server does not return it) and its
// attributes when sent. A server without EXCLUSIVE (NFS3ERR_NOTSUPP, as
// go-nfs) gets a GUARDED CREATE instead, as the Linux client does.
func (c *Client) Create(ctx context.Context, dir FH, name string, how CreateHow) (FH, *Attr, error) {
	fh, a, err := c.create(ctx, dir, name, how)
	var ne *Error
	if how.Mode == Exclusive && errors.As(err, &ne) && ne.Status == StatusNotSupp {
		return c.create(ctx, dir, name, CreateHow{Mode: Guarded})
	}
	return fh, a, err
}

func (c *Client) create(ctx context.Context, dir FH, name string, how CreateHow) (FH, *Attr, error) {
	args := nfs3.CreateArgs{Where: nfs3.DirOpArgs{Dir: dir, Name: name}, Mode: nfs3.CreateMode(how.Mode)}
	if how.Mode == Exclusive {
		args.Verf = how.Verf
	} else {
		args.Attr = sattrOf(how.Attr)
	}
	return c.createLike(ctx, nfs.ProcCreate, dir, name, args.Append(c.newCall(nfs.ProcCreate)))
}

// Mkdir calls NFSPROC3_MKDIR (RFC 1813 §3.3.9).
func (c *Client) Mkdir(ctx context.Context, dir FH, name string, attr *SetAttr) (FH, *Attr, error) {
	args := nfs3.MkdirArgs{Where: nfs3.DirOpArgs{Dir: dir, Name: name}, Attr: sattrOf(attr)}
	return c.createLike(ctx, nfs.ProcMkdir, dir, name, args.Append(c.newCall(nfs.ProcMkdir)))
}

// Symlink calls NFSPROC3_SYMLINK (RFC 1813 §3.3.10): name in dir, pointing
// to target (moved in a Read chunk when the call does not fit inline, RFC
// 8267 §4.1).
func (c *Client) Symlink(ctx context.Context, dir FH, name, target string, attr *SetAttr) (FH, *Attr, error) {
	args := nfs3.SymlinkArgs{Where: nfs3.DirOpArgs{Dir: dir, Name: name}, Attr: sattrOf(attr), Path: target}
	return c.createLike(ctx, nfs.ProcSymlink, dir, name, args.Append(c.newCall(nfs.ProcSymlink)))
}

// createLike makes msg, a CREATE, MKDIR or SYMLINK of name in dir, and
// decodes its result (CREATE3res, MKDIR3res and SYMLINK3res are alike).
func (c *Client) createLike(ctx context.Context, proc uint32, dir FH, name string, msg []byte) (FH, *Attr, error) {
	r, err := c.call(ctx, proc, msg)
	if err != nil {
		return nil, nil, err
	}
	var res nfs3.CreateRes
	if err := res.Decode(&r); err != nil {
		return nil, nil, decodeErr(proc, err)
	}
	fh := cloneFH(res.Obj.FH)
	if fh == nil {
		// RFC 1813 §3.3.8: the handle is optional; look it up.
		return c.Lookup(ctx, dir, name)
	}
	return fh, attrOf(&res.ObjAttr), nil
}

// Remove calls NFSPROC3_REMOVE (RFC 1813 §3.3.12).
func (c *Client) Remove(ctx context.Context, dir FH, name string) error {
	return c.remove(ctx, nfs.ProcRemove, dir, name)
}

// Rmdir calls NFSPROC3_RMDIR (RFC 1813 §3.3.13).
func (c *Client) Rmdir(ctx context.Context, dir FH, name string) error {
	return c.remove(ctx, nfs.ProcRmdir, dir, name)
}

// remove makes a REMOVE or RMDIR, whose arguments and results are alike.
func (c *Client) remove(ctx context.Context, proc uint32, dir FH, name string) error {
	args := nfs3.RemoveArgs{Object: nfs3.DirOpArgs{Dir: dir, Name: name}}
	r, err := c.call(ctx, proc, args.Append(c.newCall(proc)))
	if err != nil {
		return err
	}
	var res nfs3.RemoveRes
	return decodeErr(proc, res.Decode(&r))
}

// Rename calls NFSPROC3_RENAME (RFC 1813 §3.3.14).
func (c *Client) Rename(ctx context.Context, fromDir FH, fromName string, toDir FH, toName string) error {
	args := nfs3.RenameArgs{From: nfs3.DirOpArgs{Dir: fromDir, Name: fromName}, To: nfs3.DirOpArgs{Dir: toDir, Name: toName}}
	r, err := c.call(ctx, nfs.ProcRename, args.Append(c.newCall(nfs.ProcRename)))
	if err != nil {
		return err
	}
	var res nfs3.RenameRes
	return decodeErr(nfs.ProcRename, res.Decode(&r))
}

// Link calls NFSPROC3_LINK (RFC 1813 §3.3.15): a hard link to fh named
// name in dir.
func (c *Client) Link(ctx context.Context, fh, dir FH, name string) error {
	args := nfs3.LinkArgs{File: fh, Link: nfs3.DirOpArgs{Dir: dir, Name: name}}
	r, err := c.call(ctx, nfs.ProcLink, args.Append(c.newCall(nfs.ProcLink)))
	if err != nil {
		return err
	}
	var res nfs3.LinkRes
	return decodeErr(nfs.ProcLink, res.Decode(&r))
}

// FSStat is FSSTAT3resok (RFC 1813 §3.3.18).
type FSStat struct {
	TotalBytes, FreeBytes, AvailBytes uint64
	TotalFiles, FreeFiles, AvailFiles uint64
	Invarsec                          uint32
}

// Fsstat calls NFSPROC3_FSSTAT (RFC 1813 §3.3.18).
func (c *Client) Fsstat(ctx context.Context, fh FH) (*FSStat, error) {
	args := nfs3.FsstatArgs{FSRoot: fh}
	r, err := c.call(ctx, nfs.ProcFsstat, args.Append(c.newCall(nfs.ProcFsstat)))
	if err != nil {
		return nil, err
	}
	var res nfs3.FsstatRes
	if err := res.Decode(&r); err != nil {
		return nil, decodeErr(nfs.ProcFsstat, err)
	}
	return &FSStat{
		TotalBytes: res.Tbytes, FreeBytes: res.Fbytes, AvailBytes: res.Abytes,
		TotalFiles: res.Tfiles, FreeFiles: res.Ffiles, AvailFiles: res.Afiles,
		Invarsec: res.Invarsec,
	}, nil
}

// FSINFO properties (RFC 1813 §3.3.19).
const (
	FSFLink        = nfs3.FSFLink
	FSFSymlink     = nfs3.FSFSymlink
	FSFHomogeneous = nfs3.FSFHomogeneous
	FSFCanSetTime  = nfs3.FSFCanSetTime
)

// FSInfo is FSINFO3resok (RFC 1813 §3.3.19).
type FSInfo struct {
	RTMax, RTPref, RTMult uint32
	WTMax, WTPref, WTMult uint32
	DTPref                uint32
	MaxFileSize           uint64
	TimeDelta             time.Duration
	Properties            uint32
}

// Fsinfo calls NFSPROC3_FSINFO (RFC 1813 §3.3.19).
func (c *Client) Fsinfo(ctx context.Context, fh FH) (*FSInfo, error) {
	args := nfs3.FsinfoArgs{FSRoot: fh}
	r, err := c.call(ctx, nfs.ProcFsinfo, args.Append(c.newCall(nfs.ProcFsinfo)))
	if err != nil {
		return nil, err
	}
	var res nfs3.FsinfoRes
	if err := res.Decode(&r); err != nil {
		return nil, decodeErr(nfs.ProcFsinfo, err)
	}
	return &FSInfo{
		RTMax: res.Rtmax, RTPref: res.Rtpref, RTMult: res.Rtmult,
		WTMax: res.Wtmax, WTPref: res.Wtpref, WTMult: res.Wtmult,
		DTPref:      res.Dtpref,
		MaxFileSize: res.MaxFileSize,
		TimeDelta:   time.Duration(res.TimeDelta.Sec)*time.Second + time.Duration(res.TimeDelta.Nsec),
		Properties:  res.Properties,
	}, nil
}

// PathConf is PATHCONF3resok (RFC 1813 §3.3.20).
type PathConf struct {
	LinkMax, NameMax                                          uint32
	NoTrunc, ChownRestricted, CaseInsensitive, CasePreserving bool
}

// Pathconf calls NFSPROC3_PATHCONF (RFC 1813 §3.3.20).
func (c *Client) Pathconf(ctx context.Context, fh FH) (*PathConf, error) {
	args := nfs3.PathconfArgs{Object: fh}
	r, err := c.call(ctx, nfs.ProcPathconf, args.Append(c.newCall(nfs.ProcPathconf)))
	if err != nil {
		return nil, err
	}
	var res nfs3.PathconfRes
	if err := res.Decode(&r); err != nil {
		return nil, decodeErr(nfs.ProcPathconf, err)
	}
	return &PathConf{
		LinkMax: res.Linkmax, NameMax: res.NameMax,
		NoTrunc: res.NoTrunc, ChownRestricted: res.ChownRestricted,
		CaseInsensitive: res.CaseInsensitive, CasePreserving: res.CasePreserving,
	}, nil
}
