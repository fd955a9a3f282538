package nfs3

import (
	"strconv"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Bounds of MOUNT version 3 (RFC 1813 §5.1.4).
const (
	// MntPathLen is MNTPATHLEN, the longest dirpath.
	MntPathLen = 1024
	// MntNameLen is MNTNAMLEN, the longest name.
	MntNameLen = 255
	// MaxAuthFlavors is the longest auth_flavors list of a mountres3_ok
	// decoded. RFC 1813 §5.2.1 leaves it unbounded; the Linux client
	// takes up to 12 (NFS_MAX_SECFLAVORS).
	MaxAuthFlavors = 16
)

// MountStatus is a mountstat3 (RFC 1813 §5.1.5), the status of MNT. A
// MountStatus is an error so that it can be returned as one; MntOK is not
// an error and must not be returned as one.
type MountStatus uint32

// MountStatus values (RFC 1813 §5.1.5, mountstat3).
const (
	MntOK             MountStatus = 0
	MntErrPerm        MountStatus = 1
	MntErrNoEnt       MountStatus = 2
	MntErrIO          MountStatus = 5
	MntErrAcces       MountStatus = 13
	MntErrNotDir      MountStatus = 20
	MntErrInval       MountStatus = 22
	MntErrNameTooLong MountStatus = 63
	MntErrNotSupp     MountStatus = 10004
	MntErrServerFault MountStatus = 10006
)

// String returns the status's name in RFC 1813 (as "MNT3_OK",
// "MNT3ERR_NOENT"), or "mountstat3(N)" for a value RFC 1813 does not
// define.
func (s MountStatus) String() string {
	switch s {
	case MntOK:
		return "MNT3_OK"
	case MntErrPerm:
		return "MNT3ERR_PERM"
	case MntErrNoEnt:
		return "MNT3ERR_NOENT"
	case MntErrIO:
		return "MNT3ERR_IO"
	case MntErrAcces:
		return "MNT3ERR_ACCES"
	case MntErrNotDir:
		return "MNT3ERR_NOTDIR"
	case MntErrInval:
		return "MNT3ERR_INVAL"
	case MntErrNameTooLong:
		return "MNT3ERR_NAMETOOLONG"
	case MntErrNotSupp:
		return "MNT3ERR_NOTSUPP"
	case MntErrServerFault:
		return "MNT3ERR_SERVERFAULT"
	}
	return "mountstat3(" + strconv.FormatUint(uint64(s), 10) + ")"
}

// Error returns s.String().
func (s MountStatus) Error() string { return s.String() }

// MntArgs are the argument of MOUNTPROC3_MNT (RFC 1813 §5.2.1), a dirpath.
type MntArgs struct {
	Path string
}

// Append appends the dirpath.
func (x *MntArgs) Append(b []byte) []byte { return xdr.AppendString(b, x.Path) }

// Decode decodes the dirpath; one longer than MntPathLen fails with
// xdr.ErrTooLong.
func (x *MntArgs) Decode(r *xdr.Reader) error {
	var err error
	x.Path, err = decodeString(r, MntPathLen)
	return err
}

// MntRes is mountres3 (RFC 1813 §5.2.1): on MntOK the export's file handle
// (fhandle3) and the RPC authentication flavors the server accepts for it;
// on failure nothing but the status. After Decode, FH aliases the input.
type MntRes struct {
	Status      MountStatus
	FH          []byte   // when MntOK
	AuthFlavors []uint32 // when MntOK
}

// Append appends the mountres3.
func (x *MntRes) Append(b []byte) []byte {
	b = xdr.AppendUint32(b, uint32(x.Status))
	if x.Status == MntOK {
		b = xdr.AppendOpaque(b, x.FH)
		b = xdr.AppendUint32(b, uint32(len(x.AuthFlavors)))
		for _, f := range x.AuthFlavors {
			b = xdr.AppendUint32(b, f)
		}
	}
	return b
}

// Decode decodes mountres3: a handle longer than FHSize or more than
// MaxAuthFlavors flavors fail with xdr.ErrTooLong. The flavor count is
// checked against that bound and the bytes present before AuthFlavors is
// allocated.
func (x *MntRes) Decode(r *xdr.Reader) error {
	*x = MntRes{}
	s, err := r.Uint32()
	if err != nil {
		return err
	}
	if x.Status = MountStatus(s); x.Status != MntOK {
		return nil
	}
	if x.FH, err = decodeFH(r); err != nil {
		return err
	}
	n, err := r.Uint32()
	if err != nil {
		return err
	}
	if n > MaxAuthFlavors {
		return xdr.ErrTooLong
	}
	if r.Len() < 4*int(n) {
		return xdr.ErrShortBuffer
	}
	if n > 0 {
		x.AuthFlavors = make([]uint32, n)
		for i := range x.AuthFlavors {
			x.AuthFlavors[i], _ = r.Uint32()
		}
	}
	return nil
}

// UmntArgs are the argument of MOUNTPROC3_UMNT (RFC 1813 §5.2.3), a
// dirpath.
type UmntArgs struct {
	Path string
}

// Append appends the dirpath.
func (x *UmntArgs) Append(b []byte) []byte { return xdr.AppendString(b, x.Path) }

// Decode decodes the dirpath; one longer than MntPathLen fails with
// xdr.ErrTooLong.
func (x *UmntArgs) Decode(r *xdr.Reader) error {
	var err error
	x.Path, err = decodeString(r, MntPathLen)
	return err
}

// MountEntry is a mountbody (RFC 1813 §5.2.2) without its link: a client
// and the path it mounted.
type MountEntry struct {
	Hostname  string // ml_hostname
	Directory string // ml_directory
}

// DumpRes is the result of MOUNTPROC3_DUMP (RFC 1813 §5.2.2), a mountlist.
type DumpRes struct {
	Mounts []MountEntry
}

// Append appends the mountlist: each entry preceded by value_follows TRUE,
// then FALSE.
func (x *DumpRes) Append(b []byte) []byte {
	for i := range x.Mounts {
		b = xdr.AppendBool(b, true)
		b = xdr.AppendString(b, x.Mounts[i].Hostname)
		b = xdr.AppendString(b, x.Mounts[i].Directory)
	}
	return xdr.AppendBool(b, false)
}

// Decode decodes a mountlist: a hostname longer than MntNameLen or a
// directory longer than MntPathLen fails with xdr.ErrTooLong. Mounts is
// allocated as entries are decoded.
func (x *DumpRes) Decode(r *xdr.Reader) error {
	*x = DumpRes{}
	for {
		more, err := r.Bool()
		if err != nil || !more {
			return err
		}
		var m MountEntry
		if m.Hostname, err = decodeString(r, MntNameLen); err != nil {
			return err
		}
		if m.Directory, err = decodeString(r, MntPathLen); err != nil {
			return err
		}
		x.Mounts = append(x.Mounts, m)
	}
}

// ExportNode is an exportnode (RFC 1813 §5.2.5) without its link: an
// exported path and the groups (host names or netgroups) allowed to mount
// it.
type ExportNode struct {
	Dir    string   // ex_dir
	Groups []string // ex_groups
}

// ExportRes is the result of MOUNTPROC3_EXPORT (RFC 1813 §5.2.5), an
// exports list.
type ExportRes struct {
	Exports []ExportNode
}

// Append appends the exports list: each node preceded by value_follows
// TRUE, its groups as a list of the same form, then FALSE.
func (x *ExportRes) Append(b []byte) []byte {
	for i := range x.Exports {
		e := &x.Exports[i]
		b = xdr.AppendBool(b, true)
		b = xdr.AppendString(b, e.Dir)
		for _, g := range e.Groups {
			b = xdr.AppendBool(b, true)
			b = xdr.AppendString(b, g)
		}
		b = xdr.AppendBool(b, false)
	}
	return xdr.AppendBool(b, false)
}

// Decode decodes an exports list: a directory longer than MntPathLen or a
// group longer than MntNameLen fails with xdr.ErrTooLong. The lists are
// allocated as items are decoded.
func (x *ExportRes) Decode(r *xdr.Reader) error {
	*x = ExportRes{}
	for {
		more, err := r.Bool()
		if err != nil || !more {
			return err
		}
		var e ExportNode
		if e.Dir, err = decodeString(r, MntPathLen); err != nil {
			return err
		}
		for {
			more, err := r.Bool()
			if err != nil {
				return err
			}
			if !more {
				break
			}
			g, err := decodeString(r, MntNameLen)
			if err != nil {
				return err
			}
			e.Groups = append(e.Groups, g)
		}
		x.Exports = append(x.Exports, e)
	}
}
