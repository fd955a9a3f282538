package chunks

// Encoded sizes of transport headers and their parts, in bytes (RFC 8166
// §4.1.2: every item is one or more 32-bit XDR words).
const (
	// MinHeaderSize is the fixed part: rdma_xid, rdma_vers, rdma_credit,
	// rdma_proc. A shorter message cannot be answered (see ErrShortHeader).
	MinHeaderSize = 16
	// EmptyMsgHeaderSize is an RDMA_MSG or RDMA_NOMSG header with an empty
	// Read list, an empty Write list and no Reply chunk: the fixed part and
	// three zero words (RFC 8166 §4.7).
	EmptyMsgHeaderSize = MinHeaderSize + 3*4
	// ErrVersSize is an RDMA_ERROR header with ERR_VERS: the fixed part,
	// rdma_err, rdma_vers_low and rdma_vers_high.
	ErrVersSize = MinHeaderSize + 3*4
	// ErrChunkSize is an RDMA_ERROR header with ERR_CHUNK: the fixed part
	// and rdma_err.
	ErrChunkSize = MinHeaderSize + 4
	// SegmentSize is one encoded segment: handle, length, 64-bit offset.
	SegmentSize = 16
	// ReadSegmentSize is one Read list entry: the discriminator word, the
	// position and a segment.
	ReadSegmentSize = 4 + 4 + SegmentSize
	// WriteChunkOverhead is what a Write chunk costs in the Write list
	// besides its segments: the discriminator word and the segment count.
	WriteChunkOverhead = 8
)

// Counts gives the shape of an RDMA_MSG or RDMA_NOMSG header: how many
// segments each chunk list holds. The encoded size depends only on these
// counts, not on how segments are grouped into Read chunks or how Write
// segments are spread over Write chunks.
type Counts struct {
	// ReadSegments is the number of Read list entries, over all Read
	// chunks.
	ReadSegments int
	// WriteChunks is the number of Write chunks in the Write list.
	WriteChunks int
	// WriteSegments is the number of segments over all Write chunks.
	WriteSegments int
	// ReplySegments is the number of segments in the Reply chunk.
	ReplySegments int
	// HasReplyChunk says whether a Reply chunk is present. A Reply chunk
	// with segments is present whatever this field says.
	HasReplyChunk bool
}

// Size returns the exact encoded size in bytes of an RDMA_MSG or RDMA_NOMSG
// header with the given counts (RFC 8166 §4.1.2, §4.7): the fixed part, each
// Read segment with its discriminator, the Read list terminator, each Write
// chunk with its discriminator and count, the Write list terminator, and the
// Reply chunk's discriminator, count and segments. Size(Counts{}) is
// EmptyMsgHeaderSize.
func Size(c Counts) int {
	n := MinHeaderSize +
		c.ReadSegments*ReadSegmentSize + 4 +
		c.WriteChunks*WriteChunkOverhead + c.WriteSegments*SegmentSize + 4 +
		4
	if c.HasReplyChunk || c.ReplySegments > 0 {
		n += 4 + c.ReplySegments*SegmentSize
	}
	return n
}

// MaxHeaderSize returns the largest transport header a sender configured with
// lim can produce: every Read chunk, every Write chunk and the Reply chunk
// present with lim.MaxSegments segments each, and never less than the
// largest RDMA_ERROR header. A transport subtracts it from its inline
// threshold to learn how much of an RPC message always fits in a Send
// alongside the header. Pass the limits the sender actually uses (for
// example, Linux's client uses at most one chunk per list); DefaultLimits
// describes what a receiver accepts and gives a size far beyond any inline
// buffer. Negative fields count as zero.
func MaxHeaderSize(lim Limits) int {
	segs := max(lim.MaxSegments, 0)
	reads := max(lim.MaxReadChunks, 0)
	writes := max(lim.MaxWriteChunks, 0)
	n := Size(Counts{
		ReadSegments:  reads * segs,
		WriteChunks:   writes,
		WriteSegments: writes * segs,
		ReplySegments: segs,
		HasReplyChunk: true,
	})
	return max(n, ErrVersSize)
}
