//go:build e2eguest

package knfsdclient_test

import (
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Bounds of NFSv3 items (RFC 1813 §2.5, §2.6) the binding needs.
const (
	nfs3FHSize = 64     // NFS3_FHSIZE
	fattr3Len  = 21 * 4 // fattr3
	// acceptedReplyMax is the largest accepted-reply header: xid,
	// msg_type, reply_stat, the largest verifier (RFC 5531 §8.2),
	// accept_stat.
	acceptedReplyMax = 3*4 + 8 + xdr.MaxAuthBytes + 4
	// read3resFixed is READ3resok without the data bytes: status,
	// post_op_attr with attributes, count, eof, the data's length word.
	read3resFixed = 4 + 4 + fattr3Len + 3*4
	// write3resMax is the largest WRITE3res: status, wcc_data with both
	// attributes, count, committed, verifier.
	write3resMax = 4 + (4 + 6*4) + (4 + fattr3Len) + 2*4 + 8
)

// readWriteBinding is the part of the NFSv3 upper-layer binding (RFC 8267
// §4.1) that carries file data: WRITE data as a DDP-eligible argument (a
// Read chunk at its position), READ data as a DDP-eligible result (a Write
// chunk), with reply bounds for both. Everything else is handled as
// transport.NullBinding handles it. It is the test's own, so that the test
// depends on nothing but the transport.
type readWriteBinding struct{ transport.NullBinding }

// Call implements transport.Binding.
func (b readWriteBinding) Call(h *xdr.CallHeader, msg []byte, args int) transport.CallInfo {
	if h.Prog != nfsProg || h.Vers != nfsVers || (h.Proc != nfsProcRead && h.Proc != nfsProcWrite) || args > len(msg) {
		return b.NullBinding.Call(h, msg, args)
	}
	// READ3args and WRITE3args both begin: file, offset, count.
	r := xdr.NewReader(msg[args:])
	if _, err := r.Opaque(nfs3FHSize); err != nil {
		return transport.CallInfo{}
	}
	if _, err := r.Uint64(); err != nil {
		return transport.CallInfo{}
	}
	count, err := r.Uint32()
	if err != nil {
		return transport.CallInfo{}
	}
	if h.Proc == nfsProcRead {
		return transport.CallInfo{MaxReply: acceptedReplyMax + read3resFixed + xdr.RoundUp(int(count)), ReplyData: int(count)}
	}
	if _, err := r.Uint32(); err != nil { // stable
		return transport.CallInfo{}
	}
	lenWord := args + r.Offset()
	data, err := r.Opaque(len(msg))
	if err != nil {
		return transport.CallInfo{}
	}
	return transport.CallInfo{
		Arg:      transport.DataItem{Present: true, Off: lenWord + 4, N: len(data)},
		MaxReply: acceptedReplyMax + write3resMax,
	}
}

// ReplyData implements transport.Binding: the data of a successful READ
// reply (READ3resok: status, post_op_attr, count, eof, data<>).
func (readWriteBinding) ReplyData(h *xdr.CallHeader, reply []byte, results int) transport.DataItem {
	if h.Prog != nfsProg || h.Vers != nfsVers || h.Proc != nfsProcRead || results > len(reply) {
		return transport.DataItem{}
	}
	r := xdr.NewReader(reply[results:])
	if status, err := r.Uint32(); err != nil || status != 0 {
		return transport.DataItem{}
	}
	if follows, err := r.Bool(); err != nil || (follows && r.Skip(fattr3Len) != nil) {
		return transport.DataItem{}
	}
	if err := r.Skip(4); err != nil { // count
		return transport.DataItem{}
	}
	if _, err := r.Bool(); err != nil { // eof
		return transport.DataItem{}
	}
	n, err := r.Uint32()
	if err != nil || n > 1<<30 {
		return transport.DataItem{}
	}
	return transport.DataItem{Present: true, Off: results + r.Offset(), N: int(n)}
}

// understatingBinding claims that every reply fits in 1024 bytes, so the
// requester offers no chunk for it: a reply that is in fact larger than
// the inline threshold has no way back but RDMA_ERROR.
type understatingBinding struct{ transport.NullBinding }

// Call implements transport.Binding.
func (understatingBinding) Call(*xdr.CallHeader, []byte, int) transport.CallInfo {
	return transport.CallInfo{MaxReply: 1024}
}
