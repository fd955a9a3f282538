package chunks

import "github.com/go-rpcrdma/rpcrdma/xdr"

// The three chunk lists of RDMA_MSG and RDMA_NOMSG (RFC 8166 §4.3) are
// encoded alike in RPC-over-RDMA version 2, where they follow
// rdma_inv_handle in rpcrdma2_chunk_lists: the version 2 codec (package
// rpcrdma2) keeps them in a Header's list fields and uses these two
// methods, and v1's validation, for them.

// UnmarshalChunkLists decodes a Read list, a Write list and a Reply chunk
// from r (RFC 8166 §4.3) into h's ReadList, WriteList, ReplyChunk and
// HasReplyChunk, with Unmarshal's checks against lim (nil means
// DefaultLimits) and against the bytes r holds, and the same reuse of h's
// slices. The fixed part of h is left as it is; its error fields are
// cleared. On error the lists are empty and r's position is undefined.
func (h *Header) UnmarshalChunkLists(r *xdr.Reader, lim *Limits) error {
	h.clearBody()
	if err := h.unmarshalChunkLists(r, lim.orDefault()); err != nil {
		h.clearBody()
		return err
	}
	return nil
}

// AppendChunkLists appends the XDR encoding of h's Read list, Write list
// and Reply chunk to b (RFC 8166 §4.3): ChunkListsSize(h.Counts()) bytes.
func (h *Header) AppendChunkLists(b []byte) []byte { return h.appendChunkLists(b) }

// ChunkListsSize returns the encoded size in bytes of the three chunk
// lists of the given counts: Size(c) without the fixed part.
func ChunkListsSize(c Counts) int { return Size(c) - MinHeaderSize }
