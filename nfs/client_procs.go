package nfs

import (
	"context"
	"errors"
	"time"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Null calls NFSPROC3_NULL (RFC 1813 §3.3.0), a ping.
func (c *Client) Null(ctx context.Context) error {
	_, _, err := c.do(ctx, ProcNull, c.startCall(nil, ProcNull), nil)
	return err
}

// Getattr calls NFSPROC3_GETATTR (RFC 1813 §3.3.1).
func (c *Client) Getattr(ctx context.Context, fh FH) (*Attr, error) {
	r, err := c.simpleCall(ctx, ProcGetattr, func(b []byte) []byte { return appendFH(b, fh) })
	if err != nil {
		return nil, err
	}
	var a Attr
	return &a, decodeErr(ProcGetattr, decodeFattr(r, &a))
}

// Setattr calls NFSPROC3_SETATTR (RFC 1813 §3.3.2). With guard set, the
// server changes nothing unless the file's ctime equals *guard
// (NFS3ERR_NOT_SYNC).
func (c *Client) Setattr(ctx context.Context, fh FH, s *SetAttr, guard *time.Time) (WccAttr, error) {
	r, err := c.simpleCall(ctx, ProcSetattr, func(b []byte) []byte {
		b = appendSattr(appendFH(b, fh), s)
		b = xdr.AppendBool(b, guard != nil)
		if guard != nil {
			b = appendTime(b, *guard)
		}
		return b
	})
	if err != nil {
		return WccAttr{}, err
	}
	w, err := decodeWcc(r)
	return w, decodeErr(ProcSetattr, err)
}

// Lookup calls NFSPROC3_LOOKUP (RFC 1813 §3.3.3): the handle of name in
// dir, and its attributes when the server sent them.
func (c *Client) Lookup(ctx context.Context, dir FH, name string) (FH, *Attr, error) {
	r, err := c.simpleCall(ctx, ProcLookup, func(b []byte) []byte { return xdr.AppendString(appendFH(b, dir), name) })
	if err != nil {
		return nil, nil, err
	}
	fh, err := r.Opaque(fhSize3)
	if err != nil {
		return nil, nil, decodeErr(ProcLookup, err)
	}
	fh = append([]byte(nil), fh...)
	a, err := postOpAttr(r)
	return fh, a, decodeErr(ProcLookup, err)
}

// ACCESS bits (RFC 1813 §3.3.4).
const (
	AccessRead    = 0x01
	AccessLookup  = 0x02
	AccessModify  = 0x04
	AccessExtend  = 0x08
	AccessDelete  = 0x10
	AccessExecute = 0x20
)

// Access calls NFSPROC3_ACCESS (RFC 1813 §3.3.4) and returns the bits of
// mask the server grants.
func (c *Client) Access(ctx context.Context, fh FH, mask uint32) (uint32, error) {
	r, err := c.simpleCall(ctx, ProcAccess, func(b []byte) []byte { return xdr.AppendUint32(appendFH(b, fh), mask) })
	if err != nil {
		return 0, err
	}
	if _, err := decodePostOpAttr(r, nil); err != nil {
		return 0, decodeErr(ProcAccess, err)
	}
	granted, err := r.Uint32()
	return granted, decodeErr(ProcAccess, err)
}

// Readlink calls NFSPROC3_READLINK (RFC 1813 §3.3.5); the path arrives in
// the Write chunk (RFC 8267 §4.2).
func (c *Client) Readlink(ctx context.Context, fh FH) (string, error) {
	r, err := c.simpleCall(ctx, ProcReadlink, func(b []byte) []byte { return appendFH(b, fh) })
	if err != nil {
		return "", err
	}
	if _, err := decodePostOpAttr(r, nil); err != nil {
		return "", decodeErr(ProcReadlink, err)
	}
	p, err := r.String(MaxPathLen)
	return string(p), decodeErr(ProcReadlink, err)
}

// CreateMode is a createmode3 (RFC 1813 §3.3.8).
type CreateMode uint32

// Create modes (RFC 1813 §3.3.8).
const (
	// Unchecked creates the file or truncates (with Attr.Size) an
	// existing one.
	Unchecked CreateMode = 0
	// Guarded fails with NFS3ERR_EXIST when the name exists.
	Guarded CreateMode = 1
	// Exclusive creates the file once for a given verifier, even when
	// the call is retransmitted; set its attributes with SETATTR after.
	Exclusive CreateMode = 2
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
	return c.createLike(ctx, ProcCreate, dir, name, func(b []byte) []byte {
		b = xdr.AppendUint32(b, uint32(how.Mode))
		if how.Mode == Exclusive {
			return append(b, how.Verf[:]...)
		}
		return appendSattr(b, how.Attr)
	})
}

// Mkdir calls NFSPROC3_MKDIR (RFC 1813 §3.3.9).
func (c *Client) Mkdir(ctx context.Context, dir FH, name string, attr *SetAttr) (FH, *Attr, error) {
	return c.createLike(ctx, ProcMkdir, dir, name, func(b []byte) []byte { return appendSattr(b, attr) })
}

// Symlink calls NFSPROC3_SYMLINK (RFC 1813 §3.3.10): name in dir, pointing
// to target (moved in a Read chunk when the call does not fit inline, RFC
// 8267 §4.1).
func (c *Client) Symlink(ctx context.Context, dir FH, name, target string, attr *SetAttr) (FH, *Attr, error) {
	return c.createLike(ctx, ProcSymlink, dir, name, func(b []byte) []byte {
		return xdr.AppendString(appendSattr(b, attr), target)
	})
}

// createLike makes a CREATE, MKDIR or SYMLINK of name in dir, whose
// arguments after diropargs3 rest appends, and decodes the result (post_op_fh3,
// post_op_attr, wcc_data).
func (c *Client) createLike(ctx context.Context, proc uint32, dir FH, name string, rest func([]byte) []byte) (FH, *Attr, error) {
	r, err := c.simpleCall(ctx, proc, func(b []byte) []byte { return rest(xdr.AppendString(appendFH(b, dir), name)) })
	if err != nil {
		return nil, nil, err
	}
	fh, err := decodePostOpFH(r)
	if err != nil {
		return nil, nil, decodeErr(proc, err)
	}
	a, err := postOpAttr(r)
	if err != nil {
		return nil, nil, decodeErr(proc, err)
	}
	if fh == nil {
		// RFC 1813 §3.3.8: the handle is optional; look it up.
		return c.Lookup(ctx, dir, name)
	}
	return fh, a, nil
}

// Remove calls NFSPROC3_REMOVE (RFC 1813 §3.3.12).
func (c *Client) Remove(ctx context.Context, dir FH, name string) error {
	_, err := c.simpleCall(ctx, ProcRemove, func(b []byte) []byte { return xdr.AppendString(appendFH(b, dir), name) })
	return err
}

// Rmdir calls NFSPROC3_RMDIR (RFC 1813 §3.3.13).
func (c *Client) Rmdir(ctx context.Context, dir FH, name string) error {
	_, err := c.simpleCall(ctx, ProcRmdir, func(b []byte) []byte { return xdr.AppendString(appendFH(b, dir), name) })
	return err
}

// Rename calls NFSPROC3_RENAME (RFC 1813 §3.3.14).
func (c *Client) Rename(ctx context.Context, fromDir FH, fromName string, toDir FH, toName string) error {
	_, err := c.simpleCall(ctx, ProcRename, func(b []byte) []byte {
		b = xdr.AppendString(appendFH(b, fromDir), fromName)
		return xdr.AppendString(appendFH(b, toDir), toName)
	})
	return err
}

// Link calls NFSPROC3_LINK (RFC 1813 §3.3.15): a hard link to fh named
// name in dir.
func (c *Client) Link(ctx context.Context, fh, dir FH, name string) error {
	_, err := c.simpleCall(ctx, ProcLink, func(b []byte) []byte {
		return xdr.AppendString(appendFH(appendFH(b, fh), dir), name)
	})
	return err
}

// FSStat is FSSTAT3resok (RFC 1813 §3.3.18).
type FSStat struct {
	TotalBytes, FreeBytes, AvailBytes uint64
	TotalFiles, FreeFiles, AvailFiles uint64
	Invarsec                          uint32
}

// Fsstat calls NFSPROC3_FSSTAT (RFC 1813 §3.3.18).
func (c *Client) Fsstat(ctx context.Context, fh FH) (*FSStat, error) {
	r, err := c.simpleCall(ctx, ProcFsstat, func(b []byte) []byte { return appendFH(b, fh) })
	if err != nil {
		return nil, err
	}
	if _, err := decodePostOpAttr(r, nil); err != nil {
		return nil, decodeErr(ProcFsstat, err)
	}
	var s FSStat
	for _, v := range []*uint64{&s.TotalBytes, &s.FreeBytes, &s.AvailBytes, &s.TotalFiles, &s.FreeFiles, &s.AvailFiles} {
		if *v, err = r.Uint64(); err != nil {
			return nil, decodeErr(ProcFsstat, err)
		}
	}
	s.Invarsec, err = r.Uint32()
	return &s, decodeErr(ProcFsstat, err)
}

// FSINFO properties (RFC 1813 §3.3.19).
const (
	FSFLink        = 0x01
	FSFSymlink     = 0x02
	FSFHomogeneous = 0x08
	FSFCanSetTime  = 0x10
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
	r, err := c.simpleCall(ctx, ProcFsinfo, func(b []byte) []byte { return appendFH(b, fh) })
	if err != nil {
		return nil, err
	}
	if _, err := decodePostOpAttr(r, nil); err != nil {
		return nil, decodeErr(ProcFsinfo, err)
	}
	var fi FSInfo
	for _, v := range []*uint32{&fi.RTMax, &fi.RTPref, &fi.RTMult, &fi.WTMax, &fi.WTPref, &fi.WTMult, &fi.DTPref} {
		if *v, err = r.Uint32(); err != nil {
			return nil, decodeErr(ProcFsinfo, err)
		}
	}
	if fi.MaxFileSize, err = r.Uint64(); err != nil {
		return nil, decodeErr(ProcFsinfo, err)
	}
	sec, err := r.Uint32()
	if err != nil {
		return nil, decodeErr(ProcFsinfo, err)
	}
	nsec, err := r.Uint32()
	if err != nil {
		return nil, decodeErr(ProcFsinfo, err)
	}
	fi.TimeDelta = time.Duration(sec)*time.Second + time.Duration(nsec)
	fi.Properties, err = r.Uint32()
	return &fi, decodeErr(ProcFsinfo, err)
}

// PathConf is PATHCONF3resok (RFC 1813 §3.3.20).
type PathConf struct {
	LinkMax, NameMax                                          uint32
	NoTrunc, ChownRestricted, CaseInsensitive, CasePreserving bool
}

// Pathconf calls NFSPROC3_PATHCONF (RFC 1813 §3.3.20).
func (c *Client) Pathconf(ctx context.Context, fh FH) (*PathConf, error) {
	r, err := c.simpleCall(ctx, ProcPathconf, func(b []byte) []byte { return appendFH(b, fh) })
	if err != nil {
		return nil, err
	}
	if _, err := decodePostOpAttr(r, nil); err != nil {
		return nil, decodeErr(ProcPathconf, err)
	}
	var pc PathConf
	if pc.LinkMax, err = r.Uint32(); err != nil {
		return nil, decodeErr(ProcPathconf, err)
	}
	if pc.NameMax, err = r.Uint32(); err != nil {
		return nil, decodeErr(ProcPathconf, err)
	}
	for _, v := range []*bool{&pc.NoTrunc, &pc.ChownRestricted, &pc.CaseInsensitive, &pc.CasePreserving} {
		if *v, err = r.Bool(); err != nil {
			return nil, decodeErr(ProcPathconf, err)
		}
	}
	return &pc, nil
}
