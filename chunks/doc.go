// Package chunks encodes, parses and validates the RPC-over-RDMA version 1
// transport header of RFC 8166 §4: the fixed part (rdma_xid, rdma_vers,
// rdma_credit, rdma_proc) and the body of each procedure, namely the Read
// list, Write list and Reply chunk of RDMA_MSG and RDMA_NOMSG, and the error
// of RDMA_ERROR.
//
// # Wire format
//
// Every item is a 32-bit big-endian XDR word, or two for an offset:
//
//	fixed part   xid vers credits proc
//	Read list    { 1 position handle length offset(64) } ... 0
//	Write list   { 1 nsegs { handle length offset(64) } x nsegs } ... 0
//	Reply chunk  0 | 1 nsegs { handle length offset(64) } x nsegs
//	RDMA_ERROR   ERR_VERS(1) low high | ERR_CHUNK(2)
//
// Read list entries with the same position form one Read chunk; position
// zero carries a whole RPC Call (a Long Call, sent as RDMA_NOMSG). A Write
// list may hold several Write chunks of several segments, and this package
// handles any number within its Limits, although Linux only ever sends one
// chunk per list.
//
// # Parsing
//
// Header.Unmarshal is the structural parser shared by both roles. A
// responder calls Header.ParseCall, which adds the checks of
// Header.ValidateCall; a requester calls Header.ParseReply, which adds those
// of Header.ValidateReply. Parsing is zero-copy: the header is decoded into
// a caller-owned Header whose slices are reused from one parse to the next,
// so a steady stream of headers is parsed without allocating, and the RPC
// message of an RDMA_MSG is the rest of the received buffer. Every count in
// the header is checked against the Limits and against the bytes actually
// received before anything is read or allocated for it.
//
// # Errors and outcomes
//
// Every parse error is a sentinel *ProtocolError (errors.Is works; none
// allocates) carrying the Outcome a responder must act on (RFC 8166 §4.5):
//
//	OutcomeErrVers   rdma_vers is not 1: reply with AppendErrVers
//	OutcomeErrChunk  the header or its chunks are unusable: AppendErrChunk
//	OutcomeDrop      nothing can or need be answered: drop silently
//
// OutcomeOf maps an error to the responder's outcome, ReplyOutcomeOf to the
// requester's (drop, or fail the RPC with the header's XID).
//
// # Encoding and sizes
//
// Header.Append encodes a header in the manner of strconv.AppendInt and
// allocates nothing when the buffer has room; Header.Len and Size give the
// exact encoded size for given chunk counts, and MaxHeaderSize the largest
// header a sender configuration can produce, from which a transport decides
// how much of an RPC message fits inline.
//
// # Linux
//
// Where RFC 8166 leaves room, this package follows the Linux implementation
// (net/sunrpc/xprtrdma): svcrdma's order of checks and its choice between
// ERR_CHUNK and a silent drop, and the client's checks of replies. The
// doc comment of each check says where the two differ and why.
package chunks
