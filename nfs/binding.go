package nfs

import (
	"errors"

	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Binding is the NFS version 3 upper-layer binding of RPC-over-RDMA version
// 1 (RFC 8267 §4, RFC 8166 §6), for requesters and responders alike; pass it
// in transport.Config{Binding: nfs.Binding{}}.
//
// DDP-eligible items (RFC 8267 §4.1, §4.2): in calls, the data of WRITE
// arguments and the pathname of SYMLINK arguments (a requester sends them
// in a Read chunk when the call does not fit inline); in replies, the data
// of READ results and the pathname of READLINK results (a responder writes
// them into the Write chunk the requester offered). Nothing else is
// DDP-eligible, in NFSv3 or in MOUNT and NFSACL.
//
// Reply bounds (RFC 8166 §3.5.3): for every NFSv3 procedure the largest
// reply RFC 1813 §3.3 allows, with handles of NFS3_FHSIZE bytes and the
// reply verifier replyHeader plans for the call's credential flavor: fixed for most, from the count of READ and
// READDIR and the maxcount of READDIRPLUS, and from MaxPathLen for
// READLINK; MOUNT version 3 (RFC 1813 §5.2) MNT, UMNT and UMNTALL; NFSACL
// version 3 SETACL. A requester offers a Reply chunk exactly when that bound
// may not fit its inline threshold, and for READ and READLINK a Write chunk
// as large as the largest result. Replies of unbounded size (MOUNT DUMP and
// EXPORT, NFSACL GETACL) and every other program, version and procedure are
// handled as transport.NullBinding handles them: NULL has the empty-reply
// bound, the rest an unknown size.
//
// Binding is stateless and safe for concurrent use. It never allocates,
// never panics and never reads outside the message it is given; arguments
// it cannot decode yield no data item and, when the bound depends on them,
// an unknown reply size.
type Binding struct{}

var _ transport.Binding = Binding{}

// Call implements transport.Binding: the DDP-eligible argument of an NFSv3
// WRITE or SYMLINK (RFC 8267 §4.1), the largest reply, and the largest
// DDP-eligible result (the count of a READ, MaxPathLen for READLINK).
func (Binding) Call(h *xdr.CallHeader, msg []byte, args int) transport.CallInfo {
	if h == nil {
		return transport.CallInfo{}
	}
	if h.Proc == ProcNull || h.Vers != 3 || args < 0 || args > len(msg) || args&3 != 0 {
		return transport.NullBinding{}.Call(h, msg, args)
	}
	switch h.Prog {
	case ProgNFS:
		return nfs3Call(replyHeader(h), h.Proc, msg, args)
	case ProgMount:
		if h.Proc < uint32(len(mount3ResultMax)) && mount3ResultMax[h.Proc] >= 0 {
			return transport.CallInfo{MaxReply: replyMax(replyHeader(h), mount3ResultMax[h.Proc])}
		}
	case ProgNFSACL:
		if h.Proc == aclProcSetacl {
			return transport.CallInfo{MaxReply: replyMax(replyHeader(h), setacl3ResultMax)}
		}
	}
	return transport.NullBinding{}.Call(h, msg, args)
}

// replyHeader is the largest reply header (RFC 5531 §9: xid, msg_type,
// reply_stat, verifier, accept_stat) the binding plans for a call with
// header h. To AUTH_NONE and AUTH_SYS credentials servers answer with an
// AUTH_NONE verifier (knfsd, go-nfs, NFS-Ganesha), and the Linux client
// plans for exactly that: the au_rslack of its auth_null and auth_unix is
// the verifier's flavor and length words alone, raised only once a reply
// has carried a larger verifier (unx_validate). We plan the same, so that
// the same calls go inline as Linux's (a 3.5 KiB READ at a 4096-byte
// threshold, a 512-byte one at 1024). The risk is Linux's too: a server
// that answers AUTH_SYS with a long AUTH_SHORT verifier, in a reply that
// then no longer fits inline and was offered no chunk, fails that call
// (RDMA_ERROR, ERR_CHUNK). Any other flavor (RPCSEC_GSS, whose verifier is
// a MIC) gets the largest verifier RFC 5531 §8.2 allows.
func replyHeader(h *xdr.CallHeader) int {
	switch h.Cred.Flavor {
	case xdr.FlavorNone, xdr.FlavorSys:
		return replyHeaderMin
	}
	return ReplyHeaderMax
}

// nfs3Call is Call for an NFSv3 procedure other than NULL whose arguments
// start at args, a multiple of 4 within msg; hdr is the reply header
// planned (replyHeader).
func nfs3Call(hdr int, proc uint32, msg []byte, args int) transport.CallInfo {
	r := xdr.NewReader(msg[args:])
	switch proc {
	case ProcRead:
		// READ3args (RFC 1813 §3.3.6): file, offset, count.
		if skipFH(&r) != nil || r.Skip(8) != nil {
			return transport.CallInfo{}
		}
		count, err := r.Uint32()
		if err != nil {
			return transport.CallInfo{}
		}
		// READ3resok: file_attributes, count, eof, data<count>.
		return sizedReply(hdr, StatusSize+PostOpAttrMax+4+4+4, count, true)
	case ProcWrite:
		// WRITE3args (§3.3.7): file, offset, count, stable, data.
		info := transport.CallInfo{MaxReply: replyMax(hdr, nfs3ResultMax[ProcWrite])}
		if skipFH(&r) != nil || r.Skip(8+4+4) != nil {
			return info
		}
		info.Arg = opaqueItem(&r, args)
		return info
	case ProcSymlink:
		// SYMLINK3args (§3.3.10): where (dir, name), symlink
		// (symlink_attributes, symlink_data).
		info := transport.CallInfo{MaxReply: replyMax(hdr, nfs3ResultMax[ProcSymlink])}
		if skipFH(&r) != nil || skipOpaque(&r) != nil || skipSattr3(&r) != nil {
			return info
		}
		info.Arg = opaqueItem(&r, args)
		return info
	case ProcReadlink:
		return transport.CallInfo{MaxReply: replyMax(hdr, nfs3ResultMax[ProcReadlink]), ReplyData: MaxPathLen}
	case ProcReaddir, ProcReaddirplus:
		// READDIR3args (§3.3.16): dir, cookie, cookieverf, count;
		// READDIRPLUS3args (§3.3.17): dir, cookie, cookieverf,
		// dircount, maxcount. Both counts bound the READDIR3resok or
		// READDIRPLUS3resok "including all XDR overhead"; knfsd and the
		// Linux client's receive buffer take them as the bound of the
		// entries alone, so the bound here adds every other word of the
		// reply to count.
		skip := 8 + VerfSize
		if proc == ProcReaddirplus {
			skip += 4
		}
		if skipFH(&r) != nil || r.Skip(skip) != nil {
			return transport.CallInfo{}
		}
		count, err := r.Uint32()
		if err != nil {
			return transport.CallInfo{}
		}
		return sizedReply(hdr, readdirExtra, count, false)
	}
	if proc < uint32(len(nfs3ResultMax)) {
		return transport.CallInfo{MaxReply: replyMax(hdr, nfs3ResultMax[proc])}
	}
	return transport.CallInfo{}
}

// sizedReply is the CallInfo of a reply with a header of hdr bytes, fixed
// bytes of results and at most count more, rounded up to XDR words; data
// says whether those count bytes are a DDP-eligible result. A bound that
// overflows int is unknown.
func sizedReply(hdr, fixed int, count uint32, data bool) transport.CallInfo {
	total := uint64(hdr+fixed) + (uint64(count)+3)&^3
	if total > uint64(maxInt) {
		return transport.CallInfo{}
	}
	info := transport.CallInfo{MaxReply: int(total)}
	if data {
		info.ReplyData = int(count)
	}
	return info
}

// ReplyData implements transport.Binding: in a successful NFSv3 READ reply
// (READ3resok, RFC 1813 §3.3.6: status, file_attributes, count, eof, data)
// the data, and in a successful READLINK reply (READLINK3resok, §3.3.5:
// status, symlink_attributes, data) the pathname (RFC 8267 §4.2): the
// offset of its bytes, just after their length word, and the length that
// word claims. The bytes themselves need not be present (a requester asks
// about a reply whose result was placed in a Write chunk); the transport
// checks the item against the message. Any other reply, an error status,
// or a reply that ends before the length word has no item.
func (Binding) ReplyData(h *xdr.CallHeader, reply []byte, results int) transport.DataItem {
	if h == nil || h.Prog != ProgNFS || h.Vers != 3 || (h.Proc != ProcRead && h.Proc != ProcReadlink) ||
		results < 0 || results > len(reply) {
		return transport.DataItem{}
	}
	r := xdr.NewReader(reply[results:])
	if status, err := r.Uint32(); err != nil || status != 0 { // NFS3_OK
		return transport.DataItem{}
	}
	if skipPostOpAttr(&r) != nil {
		return transport.DataItem{}
	}
	if h.Proc == ProcRead {
		if r.Skip(4) != nil { // count
			return transport.DataItem{}
		}
		if _, err := r.Bool(); err != nil { // eof
			return transport.DataItem{}
		}
	}
	n, err := r.Uint32()
	if err != nil || uint64(n) > uint64(maxInt) {
		return transport.DataItem{}
	}
	return transport.DataItem{Present: true, Off: results + r.Offset(), N: int(n)}
}

const maxInt = int(^uint(0) >> 1)

// errBadEnum: an enum discriminant outside its declared values (RFC 4506
// §4.3). A sentinel, so that decoding never allocates.
var errBadEnum = errors.New("nfs: enum value out of range")

// opaqueItem decodes variable-length opaque data (RFC 4506 §4.10) at r,
// which reads msg from args, and returns it as a DDP-eligible item: its
// bytes after the length word, present with their XDR pad. Data cut short
// is no item.
func opaqueItem(r *xdr.Reader, args int) transport.DataItem {
	lenWord := args + r.Offset()
	data, err := r.Opaque(maxInt)
	if err != nil {
		return transport.DataItem{}
	}
	return transport.DataItem{Present: true, Off: lenWord + 4, N: len(data)}
}

// skipFH skips an nfs_fh3 (RFC 1813 §2.5); a handle longer than
// NFS3_FHSIZE is an error.
func skipFH(r *xdr.Reader) error {
	_, err := r.Opaque(fhSize3)
	return err
}

// skipOpaque skips variable-length opaque data or a string of any length
// (a filename3, RFC 1813 §2.5), padding included.
func skipOpaque(r *xdr.Reader) error {
	_, err := r.Opaque(maxInt)
	return err
}

// skipPostOpAttr skips a post_op_attr (RFC 1813 §2.6).
func skipPostOpAttr(r *xdr.Reader) error {
	follows, err := r.Bool()
	if err != nil || !follows {
		return err
	}
	return r.Skip(fattr3Size)
}

// skipSattr3 skips a sattr3 (RFC 1813 §2.6): set_mode3, set_uid3 and
// set_gid3 (a bool and a uint32), set_size3 (a bool and a size3), and
// set_atime and set_mtime (a time_how and, for SET_TO_CLIENT_TIME, an
// nfstime3). A discriminant outside its enum is an error.
func skipSattr3(r *xdr.Reader) error {
	for _, n := range [...]int{4, 4, 4, 8} {
		set, err := r.Bool()
		if err != nil {
			return err
		}
		if set {
			if err := r.Skip(n); err != nil {
				return err
			}
		}
	}
	for range 2 {
		how, err := r.Uint32()
		if err != nil {
			return err
		}
		switch how {
		case 0, 1: // DONT_CHANGE, SET_TO_SERVER_TIME
		case 2: // SET_TO_CLIENT_TIME
			if err := r.Skip(8); err != nil {
				return err
			}
		default:
			return errBadEnum
		}
	}
	return nil
}
