package server

// transportCounter names one counter of transport.Stats (a uint64
// field) as a Prometheus metric and says what it counts, for an operator.
type transportCounter struct {
	field string // the field of transport.Stats
	name  string // the metric, rpcrdma_..._total
	help  string
	// server: an RPC-over-RDMA responder counts it, so the Server reports
	// it; the others only a requester (a client) counts.
	server bool
}

// transportCounters are the counters of transport.Stats, in its order.
// TestTransportCounters checks that every uint64 field has one.
var transportCounters = []transportCounter{
	{"Sends", "rpcrdma_sends_total", "RDMA Send operations posted: replies, and messages carrying only a transport header.", true},
	{"Recvs", "rpcrdma_recvs_total", "RDMA Receives completed (recvs): calls and other messages that arrived.", true},
	{"BadXIDs", "rpcrdma_bad_xids_total", "Replies whose transaction ID (bad XIDs) matched no call in progress.", false},
	{"ReadChunks", "rpcrdma_read_chunks_total", "Read chunks served: call data the server pulled from clients by RDMA Read.", true},
	{"WriteChunks", "rpcrdma_write_chunks_total", "Write chunks served: reply data (a READ's) the server pushed into clients' memory by RDMA Write.", true},
	{"ReplyChunks", "rpcrdma_reply_chunks_total", "Reply chunks served: whole replies too large to send inline, pushed by RDMA Write.", true},
	{"InlineCalls", "rpcrdma_inline_calls_total", "Calls sent inline, whole in one RDMA Send.", false},
	{"ReadChunkCalls", "rpcrdma_read_chunk_calls_total", "Calls sent with their data in read chunks.", false},
	{"LongCalls", "rpcrdma_long_calls_total", "Long calls: calls sent entirely in a read chunk (RDMA_NOMSG).", false},
	{"RDMAReadBytes", "rpcrdma_rdma_read_bytes_total", "Bytes the server pulled from clients by RDMA Read.", true},
	{"RDMAWriteBytes", "rpcrdma_rdma_write_bytes_total", "Bytes the server pushed into clients' memory by RDMA Write.", true},
	{"RDMAReads", "rpcrdma_rdma_reads_total", "RDMA Read operations posted, one per chunk segment read.", true},
	{"RDMAWrites", "rpcrdma_rdma_writes_total", "RDMA Write operations posted, one per chunk segment written.", true},
	{"SendPosts", "rpcrdma_send_posts_total", "Posts of send work requests (ibv_post_send calls), each carrying one or more Sends, RDMA Reads and RDMA Writes.", true},
	{"ChunkBytesOffered", "rpcrdma_chunk_bytes_offered_total", "Bytes offered to the peer in chunks, for it to read or write.", false},
	{"RemoteInvalidations", "rpcrdma_remote_invalidations_total", "Replies sent with Send With Invalidate, which invalidates the client's memory registration (remote invalidations).", true},
	{"LocalInvalidations", "rpcrdma_local_invalidations_total", "Memory registrations the client had to invalidate itself (local invalidations).", false},
	{"BadReplies", "rpcrdma_bad_replies_total", "Replies that failed validation (bad replies).", false},
	{"RemoteErrors", "rpcrdma_remote_errors_total", "RDMA_ERROR messages received from the peer (remote errors).", false},
	{"ErrVersSent", "rpcrdma_err_vers_sent_total", "RDMA_ERROR ERR_VERS messages sent (err vers): calls of an RPC-over-RDMA version other than 1.", true},
	{"ErrChunkSent", "rpcrdma_err_chunk_sent_total", "RDMA_ERROR ERR_CHUNK messages sent (err chunk): calls whose chunks the server could not use, or whose reply did not fit the chunks given.", true},
	{"Dropped", "rpcrdma_dropped_total", "Messages dropped without an answer: transport headers the server could not use or answer.", true},
	{"CreditStalls", "rpcrdma_credit_stalls_total", "Calls that waited for a credit before they could be sent (credit stalls).", false},
	{"Reconnects", "rpcrdma_reconnects_total", "Connections re-established after one was lost (reconnects).", false},
	{"CallTimeouts", "rpcrdma_call_timeouts_total", "Connections dropped because a call had no reply in time (call timeouts).", false},
	{"SlowReplies", "rpcrdma_slow_replies_total", "Calls whose reply was posted (or which were dropped) more than the slow reply threshold (1 second by default) after they arrived (slow replies).", true},
	{"Unanswered", "rpcrdma_unanswered_total", "Calls whose connection closed before their reply was posted (unanswered).", true},
	{"DirectPlacements", "rpcrdma_direct_placements_total", "Results written by RDMA Write straight from the buffer they were read into, without a copy (direct placements).", true},
	{"DirectRegistrations", "rpcrdma_direct_registrations_total", "Memory registrations made to place data directly, without a copy (direct registrations).", true},
	{"PlacementCopies", "rpcrdma_placement_copies_total", "Results copied into the caller's buffer instead of placed there directly (placement copies).", false},
	{"DirectPlacementErrors", "rpcrdma_direct_placement_errors_total", "Memory registrations for direct placement that failed; the data was copied instead (direct placement errors).", true},
	{"ReadChunksInPlace", "rpcrdma_read_chunks_in_place_total", "Read chunks pulled straight into the buffer the call is executed from, without a copy (read chunks in place).", true},
	{"RegisterLimited", "rpcrdma_register_limited_total", "Memory registrations not made because they would have exceeded the registered memory limit; the data was copied instead (register limited).", true},
	{"ReverseCalls", "rpcrdma_reverse_calls_total", "Reverse-direction calls (RPC-over-RDMA version 2) served by the client or made by the server; NFSv3 makes none.", false},
	{"ReverseDropped", "rpcrdma_reverse_dropped_total", "Reverse-direction messages dropped: answers from clients to no reverse call in flight (RPC-over-RDMA version 2).", true},
}
