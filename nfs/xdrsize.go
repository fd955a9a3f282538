package nfs

import (
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Sizes of NFS version 3 and MOUNT version 3 XDR items (RFC 1813 §2.5,
// §2.6, §5.1), at their largest: the bounds a requester needs to know
// whether a reply can fit its inline threshold (RFC 8166 §3.5.3).
const (
	// fhSize3 is NFS3_FHSIZE, the largest nfs_fh3 and fhandle3 (RFC 1813
	// §2.4, §5.1.3).
	fhSize3 = 64
	// nfsFH3Max is an nfs_fh3 of NFS3_FHSIZE bytes with its length word.
	nfsFH3Max = 4 + fhSize3
	// fattr3Size is fattr3 (RFC 1813 §2.6): type, mode, nlink, uid, gid
	// (5 words), size, used, rdev (specdata3), fsid, fileid (5 hypers),
	// atime, mtime, ctime (3 nfstime3).
	fattr3Size = 5*4 + 5*8 + 3*8
	// PostOpAttrMax is post_op_attr with the attributes (RFC 1813 §2.6).
	PostOpAttrMax = 4 + fattr3Size
	// wccAttrSize is wcc_attr: size, mtime, ctime (RFC 1813 §2.6).
	wccAttrSize = 8 + 8 + 8
	// preOpAttrMax is pre_op_attr with the attributes.
	preOpAttrMax = 4 + wccAttrSize
	// WccDataMax is wcc_data with both pre- and post-operation attributes.
	WccDataMax = preOpAttrMax + PostOpAttrMax
	// postOpFH3Max is post_op_fh3 with the handle.
	postOpFH3Max = 4 + nfsFH3Max
	// VerfSize is cookieverf3, createverf3 and writeverf3
	// (NFS3_COOKIEVERFSIZE, NFS3_CREATEVERFSIZE, NFS3_WRITEVERFSIZE).
	VerfSize = 8
	// StatusSize is nfsstat3 and mountstat3.
	StatusSize = 4

	// MaxPathLen is the longest nfspath3 the binding expects in a
	// READLINK reply. RFC 1813 §2.5 leaves nfspath3 unbounded; the Linux
	// client and knfsd both use NFS3_MAXPATHLEN, which is PATH_MAX (4096),
	// and so does this binding.
	MaxPathLen = 4096
	// maxSecFlavors is the longest auth_flavors list the binding expects
	// in a MOUNT MNT reply (RFC 1813 §5.2.1 leaves it unbounded); the
	// Linux client's receive buffer holds NFS_MAX_SECFLAVORS (12).
	maxSecFlavors = 12

	// ReplyHeaderMax is the largest accepted reply header (RFC 5531 §9):
	// xid, msg_type, reply_stat, a verifier of the largest size RFC 5531
	// §8.2 allows, and accept_stat.
	ReplyHeaderMax = 6*4 + xdr.MaxAuthBytes
	// replyHeaderMin is an accepted reply header with an AUTH_NONE
	// verifier (no body).
	replyHeaderMin = 6 * 4
	// mismatchInfo is what follows the accept_stat of a PROG_MISMATCH
	// reply (RFC 5531 §9): the bound of a procedure whose results are
	// smaller.
	mismatchInfo = 2 * 4

	// readdirExtra is the part of a READDIR or READDIRPLUS reply outside
	// the entries: status, post_op_attr, cookieverf, the value_follows
	// word that ends the entry list and eof.
	readdirExtra = StatusSize + PostOpAttrMax + VerfSize + 4 + 4
)

// nfs3ResultMax holds, by NFSv3 procedure, the largest results (RFC 1813
// §3.3), without the RPC reply header; 0 when the size depends on the
// arguments (READ, READDIR, READDIRPLUS) or for NULL, which has none.
var nfs3ResultMax = [...]int{
	ProcNull:        0,
	ProcGetattr:     StatusSize + fattr3Size,                     // GETATTR3resok: obj_attributes
	ProcSetattr:     StatusSize + WccDataMax,                     // obj_wcc, on success and failure
	ProcLookup:      StatusSize + nfsFH3Max + 2*PostOpAttrMax,    // object, obj_attributes, dir_attributes
	ProcAccess:      StatusSize + PostOpAttrMax + 4,              // obj_attributes, access
	ProcReadlink:    StatusSize + PostOpAttrMax + 4 + MaxPathLen, // symlink_attributes, data
	ProcRead:        0,                                           // by count
	ProcWrite:       StatusSize + WccDataMax + 4 + 4 + VerfSize,  // file_wcc, count, committed, verf
	ProcCreate:      StatusSize + postOpFH3Max + PostOpAttrMax + WccDataMax,
	ProcMkdir:       StatusSize + postOpFH3Max + PostOpAttrMax + WccDataMax,
	ProcSymlink:     StatusSize + postOpFH3Max + PostOpAttrMax + WccDataMax,
	ProcMknod:       StatusSize + postOpFH3Max + PostOpAttrMax + WccDataMax,
	ProcRemove:      StatusSize + WccDataMax,                      // dir_wcc
	ProcRmdir:       StatusSize + WccDataMax,                      // dir_wcc
	ProcRename:      StatusSize + 2*WccDataMax,                    // fromdir_wcc, todir_wcc
	ProcLink:        StatusSize + PostOpAttrMax + WccDataMax,      // file_attributes, linkdir_wcc
	ProcReaddir:     0,                                            // by count
	ProcReaddirplus: 0,                                            // by maxcount
	ProcFsstat:      StatusSize + PostOpAttrMax + 6*8 + 4,         // obj_attributes, 6 size3, invarsec
	ProcFsinfo:      StatusSize + PostOpAttrMax + 7*4 + 8 + 8 + 4, // 7 uint32, maxfilesize, time_delta, properties
	ProcPathconf:    StatusSize + PostOpAttrMax + 2*4 + 4*4,       // linkmax, name_max, 4 bools
	ProcCommit:      StatusSize + WccDataMax + VerfSize,           // file_wcc, verf
}

// mount3ResultMax holds, by MOUNT version 3 procedure (RFC 1813 §5.2), the
// largest results; -1 when unbounded (DUMP's mountlist, EXPORT's exports).
var mount3ResultMax = [...]int{
	MountProcNull:    0,
	MountProcMnt:     StatusSize + nfsFH3Max + 4 + 4*maxSecFlavors, // fhs_status, fhandle, auth_flavors
	MountProcDump:    -1,
	MountProcUmnt:    0,
	MountProcUmntall: 0,
	MountProcExport:  -1,
}

// NFSACL version 3 procedures (Linux's side program, which has no RFC):
// GETACL returns ACLs of any length, SETACL a status and post_op_attr.
const (
	aclProcGetacl = 1
	aclProcSetacl = 2
	// setacl3ResultMax is SETACL's results: status, post_op_attr.
	setacl3ResultMax = StatusSize + PostOpAttrMax
)

// replyMax is the largest reply whose results are at most res bytes: an
// accepted header of hdr bytes (replyHeader), and the results or the mismatch_info of
// PROG_MISMATCH, whichever is larger. Rejected replies (RFC 5531 §9) are
// shorter than any of these.
func replyMax(hdr, res int) int { return hdr + max(res, mismatchInfo) }
