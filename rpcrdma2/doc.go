// Package rpcrdma2 encodes and parses the transport header of
// RPC-over-RDMA version 2 (draft-cel-nfsv4-rpcrdma-version-two-09, "the
// draft" below): the header prefix of §3.2 (rpcrdma2_hdr_prefix, with
// rdma_flags), the chunk lists of §3.3 (rpcrdma2_chunk_lists, with
// rdma_inv_handle), and the bodies of the four header types of §5.3:
// RDMA2_MSG, RDMA2_NOMSG, RDMA2_ERROR with every error code of the draft,
// and RDMA2_CONNPROP with its transport properties (§4: Receive Buffer
// Size and Reverse Request Support).
//
// It sits beside package chunks, the version 1 codec, and shares its
// chunk-list encoding (the draft keeps version 1's, §5.3): the Read list,
// Write list and Reply chunk of a version 2 header are held in a
// chunks.Header (Header.Chunks) and coded by chunks.Header's
// UnmarshalChunkLists and AppendChunkLists, so version 1's limits and
// validation apply to them unchanged.
//
// # Wire format
//
//	prefix      xid vers credit htype flags
//	MSG, NOMSG  inv_handle, then the chunk lists of RFC 8166 §4.3
//	ERROR       err, then its arm: VERS low high | READ_CHUNKS max |
//	            WRITE_CHUNKS max | SEGMENTS max | WRITE_RESOURCE index
//	            length | REPLY_RESOURCE length | nothing (the others)
//	CONNPROP    count { which, opaque data<> } x count
//
// The draft's XDR, extracted as its §6.2 says, is in testdata/rpcrdma-v2.x;
// a test checks every constant and the field order of every structure of
// it against this package, so that the codec cannot drift from the
// document.
//
// # Parsing
//
// Header.Unmarshal is zero-copy and allocates nothing in steady state, as
// chunks.Header.Unmarshal: a Header's slices are reused from one parse to
// the next, property data alias the received buffer, and every count is
// checked against the package's limits and the bytes received before
// anything is read or allocated for it. Every parse error is a sentinel
// *ProtocolError naming the Outcome the draft prescribes for a responder:
// answer RDMA2_ERROR with RDMA2_ERR_VERS, RDMA2_ERR_INVAL_HTYPE or
// RDMA2_ERR_BAD_XDR, or drop a message too short to answer.
//
// The receiver rules of the draft that a codec can apply are applied here:
// an unknown header type is RDMA2_ERR_INVAL_HTYPE (§5.2), a property whose
// data does not fit its type is RDMA2_ERR_BAD_XDR and a property of an
// unknown id is skipped (§4.1), an RDMA2_ERROR without RPCRDMA2_F_RESPONSE
// is malformed (§3.2). Reserved flag bits are kept and reported
// (Prefix.Reserved): the draft (§9.4) leaves their meaning to extensions,
// so a receiver decides. The rules that depend on a role (an RDMA2_ERROR
// never comes from a requester; RPCRDMA2_F_RESPONSE decides whether
// rdma_credit is a request or a grant and whose XID rdma_xid is) are the
// transport's, on the fields this package decodes.
//
// # Encoding
//
// Header.Append encodes a header in the manner of strconv.AppendInt,
// growing its buffer at most once (Header.Len is the exact size); the
// AppendErr* helpers build the errors a responder sends.
package rpcrdma2
