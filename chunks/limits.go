package chunks

// Limits bounds the chunk lists a parser accepts, and describes the chunk
// lists a sender produces when passed to MaxHeaderSize. RFC 8166 sets no
// limit on chunk counts or sizes; a receiver sets its own so that a hostile
// header cannot make it allocate or transfer without bound (the counts are
// also bounded by the bytes actually received, whatever the Limits say).
//
// A zero field means zero: Limits{} accepts no chunks at all. Start from
// DefaultLimits and adjust. Parsers take a *Limits; nil means DefaultLimits.
type Limits struct {
	// MaxReadChunks is the largest number of Read chunks in a Read list,
	// the position-zero Read chunk included.
	MaxReadChunks int
	// MaxWriteChunks is the largest number of Write chunks in a Write list.
	MaxWriteChunks int
	// MaxSegments is the largest number of segments in one chunk: a Read
	// chunk, a Write chunk or the Reply chunk.
	MaxSegments int
	// MaxChunkLength is the largest total length, in bytes, of one chunk
	// (the sum of its segment lengths).
	MaxChunkLength int
}

// DefaultLimits are the limits used when a parser is given a nil *Limits.
// They accept everything a Linux peer sends, with room for other
// implementations, and nothing that a Linux server would itself refuse:
//
//   - MaxReadChunks 16, MaxWriteChunks 16: the Linux client sends at most one
//     chunk per list (xprtrdma's rpcrdma_marshal_req), but NFSv4 COMPOUNDs from
//     other requesters may carry several DDP-eligible items; svcrdma parses any
//     number of chunks into its chunk lists (svc_rdma_pcl.c).
//   - MaxSegments 260: the Linux client never registers more than
//     RPCRDMA_MAX_SEGS segments for one RPC: RPCRDMA_MAX_DATA_SEGS (1 MiB of
//     4 KiB pages, 256) plus head and tail iovecs (xprt_rdma.h). A 4 KiB
//     receive buffer holds at most 254 segments anyway.
//   - MaxChunkLength 4 MiB + 64 KiB: svcrdma refuses chunks beyond its page
//     budget for one RPC, RPCSVC_MAXPAYLOAD (1 MiB, raised to 4 MiB in recent
//     kernels) plus a few pages of RPC and NFS headers for a position-zero
//     Read chunk or Reply chunk (svc_rdma_recvfrom.c, rc_maxpages).
var DefaultLimits = Limits{
	MaxReadChunks:  16,
	MaxWriteChunks: 16,
	MaxSegments:    260,
	MaxChunkLength: 4<<20 + 64<<10,
}

// orDefault returns lim, or &DefaultLimits if lim is nil.
func (lim *Limits) orDefault() *Limits {
	if lim == nil {
		return &DefaultLimits
	}
	return lim
}

// chunkTooLong reports whether n bytes exceed lim.MaxChunkLength.
func (lim *Limits) chunkTooLong(n uint64) bool {
	return lim.MaxChunkLength < 0 || n > uint64(lim.MaxChunkLength)
}
