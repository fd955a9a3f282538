package gonfsd

import (
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// ONC RPC programs and procedures the binding and the counters know (RFC
// 1813 §3 and appendix I; the NFSACL side program is Linux's).
const (
	ProgNFS    = 100003
	ProgMount  = 100005
	ProgNLM    = 100021
	ProgNFSACL = 100227

	ProcNull  = 0
	ProcRead  = 6 // NFSPROC3_READ
	ProcWrite = 7 // NFSPROC3_WRITE
)

// Sizes of NFSv3 XDR items (RFC 1813 §2.5, §2.6).
const (
	fhSize3    = 64     // NFS3_FHSIZE: the largest nfs_fh3
	fattr3Size = 21 * 4 // fattr3: 5 words, 8 hypers (size, used, rdev, fsid, fileid, 3 nfstime3)
	wccAttr    = 6 * 4  // wcc_attr: size, mtime, ctime
	// replyHeaderMax is the largest accepted-reply header: xid, msg_type,
	// reply_stat, a verifier of the largest size (RFC 5531 §8.2) and
	// accept_stat.
	replyHeaderMax = 5*4 + 4 + xdr.MaxAuthBytes
	// read3ResOKFixed is READ3resok without its data bytes: status,
	// post_op_attr, count, eof and the data's length word.
	read3ResOKFixed = 4 + 4 + fattr3Size + 4 + 4 + 4
	// write3ResMax is the largest WRITE3res: status, wcc_data
	// (pre_op_attr, post_op_attr), count, committed, writeverf3.
	write3ResMax = 4 + (4 + wccAttr) + (4 + fattr3Size) + 4 + 4 + 8
)

// Binding is a minimal NFSv3 upper-layer binding for RPC-over-RDMA version 1
// (RFC 8267 §4; RFC 8166 §6): of the DDP-eligible items of RFC 8267 §4.1 it
// knows the two that carry file data, the data of WRITE arguments and of
// READ results. SYMLINK and READLINK paths are left to Long Calls and the
// Reply chunk (the Linux client never offers a Write chunk for READLINK).
// Every other program, version and procedure is handled as
// transport.NullBinding handles it.
//
// On a responder only ReplyData matters: it lets the transport put the data
// of a READ reply into the Write chunk the requester offered (RFC 8166
// §3.5.5), which the Linux client does for every READ whose reply could
// exceed its 4096-byte receive buffers. Without it the reply does not fit
// inline, the Linux client offers no Reply chunk for READ, and the
// responder can only answer ERR_CHUNK.
//
// Binding is stateless and safe for concurrent use; it never allocates and
// never reads outside the message it is given.
type Binding struct{}

var _ transport.Binding = Binding{}

// isNFS3 reports whether h calls NFS version 3.
func isNFS3(h *xdr.CallHeader) bool { return h.Prog == ProgNFS && h.Vers == 3 }

// Call implements transport.Binding: for NFSv3 WRITE the data<> argument
// (RFC 8267 §4.1) and the bound of WRITE3res; for NFSv3 READ the requested
// count as the largest DDP-eligible result and the bound of READ3res; for a
// NULL procedure of any program, the bound of an empty reply.
func (Binding) Call(h *xdr.CallHeader, msg []byte, args int) transport.CallInfo {
	if h.Proc == ProcNull {
		return transport.CallInfo{MaxReply: replyHeaderMax}
	}
	if !isNFS3(h) || args < 0 || args > len(msg) {
		return transport.CallInfo{}
	}
	r := xdr.NewReader(msg[args:])
	// file: nfs_fh3 (opaque<NFS3_FHSIZE>), then offset.
	if _, err := r.Opaque(fhSize3); err != nil {
		return transport.CallInfo{}
	}
	if _, err := r.Uint64(); err != nil {
		return transport.CallInfo{}
	}
	count, err := r.Uint32()
	if err != nil {
		return transport.CallInfo{}
	}
	switch h.Proc {
	case ProcRead:
		return transport.CallInfo{
			MaxReply:  replyHeaderMax + read3ResOKFixed + xdr.RoundUp(int(count)),
			ReplyData: int(count),
		}
	case ProcWrite:
		// stable_how, then data<>.
		if _, err := r.Uint32(); err != nil {
			return transport.CallInfo{}
		}
		lenOff := args + r.Offset()
		data, err := r.Opaque(len(msg))
		if err != nil {
			return transport.CallInfo{MaxReply: replyHeaderMax + write3ResMax}
		}
		return transport.CallInfo{
			Arg:      transport.DataItem{Present: true, Off: lenOff + 4, N: len(data)},
			MaxReply: replyHeaderMax + write3ResMax,
		}
	}
	return transport.CallInfo{}
}

// ReplyData implements transport.Binding: in a successful NFSv3 READ reply
// (READ3resok: status, post_op_attr, count, eof, data<>) it locates the
// data bytes, after their length word, with the length that word claims.
// The data bytes themselves need not be present (a requester asks about a
// reply whose data was placed in a Write chunk); the caller checks the
// item against the message before using it. Any other reply, an error
// status, or a reply that ends before the length word has no item.
func (Binding) ReplyData(h *xdr.CallHeader, reply []byte, results int) transport.DataItem {
	if !isNFS3(h) || h.Proc != ProcRead || results < 0 || results > len(reply) {
		return transport.DataItem{}
	}
	r := xdr.NewReader(reply[results:])
	if status, err := r.Uint32(); err != nil || status != 0 { // NFS3_OK
		return transport.DataItem{}
	}
	attrs, err := r.Bool() // post_op_attr: attributes_follow
	if err != nil {
		return transport.DataItem{}
	}
	if attrs {
		if err := r.Skip(fattr3Size); err != nil {
			return transport.DataItem{}
		}
	}
	// count, eof, then the length word of data<>.
	if err := r.Skip(4); err != nil {
		return transport.DataItem{}
	}
	if _, err := r.Bool(); err != nil {
		return transport.DataItem{}
	}
	n, err := r.Uint32()
	if err != nil || uint64(n) > uint64(maxInt) {
		return transport.DataItem{}
	}
	return transport.DataItem{Present: true, Off: results + r.Offset(), N: int(n)}
}

const maxInt = int(^uint(0) >> 1)
