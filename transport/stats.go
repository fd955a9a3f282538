package transport

import (
	"sync/atomic"

	"github.com/go-rpcrdma/rpcrdma/cmpriv"
)

// Stats are a connection's counters, after the `xprt: rdma` line of Linux's
// /proc/self/mountstats where one applies (names in brackets), plus the
// responder's and the negotiated settings.
type Stats struct {
	// Sends and Recvs count RDMA Sends posted and Receives completed. Work
	// requests count as posted once queued for posting: a batch whose
	// post fails, which ends the connection, stays counted.
	Sends, Recvs uint64
	// BadXIDs counts replies whose XID matched no call [bad_xids].
	BadXIDs uint64
	// ReadChunks, WriteChunks and ReplyChunks count chunks offered
	// (requester) or served (responder) [read_chunk_count,
	// write_chunk_count, reply_chunk_count].
	ReadChunks, WriteChunks, ReplyChunks uint64
	// InlineCalls, ReadChunkCalls and LongCalls count calls by form;
	// LongCalls matches Linux's nomsg_call_count.
	InlineCalls, ReadChunkCalls, LongCalls uint64
	// RDMAReadBytes and RDMAWriteBytes count payload moved by RDMA Read
	// and RDMA Write by this side (responder) [total_rdma_request and
	// total_rdma_reply count what the peer moved for us].
	RDMAReadBytes, RDMAWriteBytes uint64
	// RDMAReads and RDMAWrites count the RDMA Read and RDMA Write work
	// requests this side posted (one per chunk segment moved): with Sends,
	// the operations an RPC costs (an inline RPC is 2 Sends, an NFS READ
	// with a Write chunk 1 RDMA Write and 2 Sends, an NFS WRITE with a
	// Read chunk 1 RDMA Read and 2 Sends).
	RDMAReads, RDMAWrites uint64
	// SendPosts counts the posts of send work requests (ibv_post_send
	// calls): the doorbells rung for the Sends, RDMA Reads and RDMA
	// Writes above, several of which can share one. With Soft-RoCE each
	// is a system call.
	SendPosts uint64
	// ChunkBytesOffered counts bytes a requester exposed in chunks.
	ChunkBytesOffered uint64
	// RemoteInvalidations counts replies that arrived by Send With
	// Invalidate (requester) or were sent that way (responder);
	// LocalInvalidations counts rkeys the requester had to invalidate
	// itself [local_inv_needed].
	RemoteInvalidations, LocalInvalidations uint64
	// BadReplies counts replies that failed validation [bad_reply_count];
	// RemoteErrors counts RDMA_ERROR replies received.
	BadReplies, RemoteErrors uint64
	// ErrVersSent, ErrChunkSent and Dropped count a responder's answers to
	// headers it could not use.
	ErrVersSent, ErrChunkSent, Dropped uint64
	// CreditStalls counts calls that had to wait for a credit.
	CreditStalls uint64
	// Reconnects counts successful reconnections [connect_count - 1].
	Reconnects uint64
	// CallTimeouts counts connections dropped because a call had no reply
	// within ReconnectPolicy.CallTimeout.
	CallTimeouts uint64
	// SlowReplies counts a responder's calls whose reply was posted (or
	// that were dropped) later than Config.SlowReply after the call
	// arrived; Unanswered counts calls the connection closed on before
	// their reply was posted. Both are logged (see Config.SlowReply).
	SlowReplies, Unanswered uint64
	// DirectPlacements counts Write chunks a requester exposed in the
	// caller's own buffer (CallInto, Config.DirectPlacementMin), and
	// DirectRegistrations how many of those registered the buffer anew
	// (the others reused a cached registration:
	// Config.DirectPlacementCache); PlacementCopies counts the
	// DDP-eligible results CallInto copied into the caller's buffer
	// instead (from the slot's chunk memory or from an inline reply);
	// DirectPlacementErrors counts registrations of the caller's buffer
	// that failed (the call then used its slot memory). A responder
	// counts in DirectPlacements the results WriteMsgDirect wrote from
	// the caller's buffer, in DirectRegistrations the registrations that
	// took, and in DirectPlacementErrors the registrations that failed
	// (the result was then copied).
	DirectPlacements, DirectRegistrations, PlacementCopies, DirectPlacementErrors uint64
	// ReadChunksInPlace counts Read chunks a requester exposed where
	// their bytes were, in the message of a Call or CallInto (registered
	// like DirectPlacements' buffers, counted in DirectRegistrations when
	// new), rather than copied into its chunk memory; a responder counts
	// the Read chunks it pulled straight into a buffer of
	// Config.CallBuffers (registrations counted in DirectRegistrations and
	// DirectPlacementErrors as for WriteMsgDirect).
	ReadChunksInPlace uint64
	// Registered is the bytes of callers' buffers the connection holds
	// registered now, in use by calls or cached for reuse (regCache):
	// CallInto's buffers on a requester; on a responder, the buffers of
	// Config.CallBuffers and WriteMsgDirect, within
	// MemoryLimits.Registered. RegisterLimited counts the registrations
	// a responder did not make because they would have exceeded
	// MemoryLimits.Registered or ListenerRegistered (the data was copied
	// through the connection's pool memory instead).
	Registered      int64
	RegisterLimited uint64
	// ReverseCalls counts reverse-direction calls on a version 2
	// connection (docs/v2.md): served by a requester's
	// Config.ReverseHandler, or made by a responder's ReverseCall.
	// ReverseDropped counts the reverse-direction messages dropped: calls
	// to a requester that takes none, answers to no call in flight.
	ReverseCalls, ReverseDropped uint64

	// Negotiated holds the settings of the current connection.
	Negotiated Negotiated
}

// Negotiated is the outcome of the RFC 8797 exchange of one connection and
// the credit state that followed it.
type Negotiated struct {
	// PeerPrivateData says what was found in the peer's private data
	// ("found", "empty", "not-found", "bad-version", "truncated").
	PeerPrivateData string
	// SendInline and RecvInline are the thresholds each way.
	SendInline, RecvInline int
	// LocalR and PeerR are the R bits each side sent.
	LocalR, PeerR bool
	// SendWithInvalidate: we are a responder and may reply with Send With
	// Invalidate. ExpectRemoteInvalidate: we are a requester that accepts
	// it.
	SendWithInvalidate, ExpectRemoteInvalidate bool
	// Credits is the requester's current credit limit or the responder's
	// last grant.
	Credits uint32
	// Version is the RPC-over-RDMA version the connection runs: 1, or 2
	// on a responder with Config.AcceptVersion2 whose peer's first
	// message was version 2 (0 on such a responder until that message).
	Version uint32
	// Reverse: reverse-direction calls flow on the connection (version 2,
	// both sides said so in their RDMA2_CONNPROP; docs/v2.md).
	Reverse bool
}

// counters is the atomic form of Stats.
type counters struct {
	sends, recvs, badXIDs                        atomic.Uint64
	readChunks, writeChunks, replyChunks         atomic.Uint64
	inlineCalls, readChunkCalls, longCalls       atomic.Uint64
	rdmaReadBytes, rdmaWriteBytes, chunksOffered atomic.Uint64
	rdmaReads, rdmaWrites, sendPosts             atomic.Uint64
	remoteInv, localInv                          atomic.Uint64
	badReplies, remoteErrors                     atomic.Uint64
	errVers, errChunk, dropped                   atomic.Uint64
	slowReplies, unanswered                      atomic.Uint64
	creditStalls, reconnects, callTimeouts       atomic.Uint64
	directPlacements, placementCopies, directErr atomic.Uint64
	directRegs, readChunksInPlace                atomic.Uint64
	registerLimited                              atomic.Uint64
	reverseCalls, reverseDropped                 atomic.Uint64
}

func (c *counters) snapshot() Stats {
	return Stats{
		Sends: c.sends.Load(), Recvs: c.recvs.Load(), BadXIDs: c.badXIDs.Load(),
		ReadChunks: c.readChunks.Load(), WriteChunks: c.writeChunks.Load(), ReplyChunks: c.replyChunks.Load(),
		InlineCalls: c.inlineCalls.Load(), ReadChunkCalls: c.readChunkCalls.Load(), LongCalls: c.longCalls.Load(),
		RDMAReadBytes: c.rdmaReadBytes.Load(), RDMAWriteBytes: c.rdmaWriteBytes.Load(), ChunkBytesOffered: c.chunksOffered.Load(),
		RDMAReads: c.rdmaReads.Load(), RDMAWrites: c.rdmaWrites.Load(), SendPosts: c.sendPosts.Load(),
		RemoteInvalidations: c.remoteInv.Load(), LocalInvalidations: c.localInv.Load(),
		BadReplies: c.badReplies.Load(), RemoteErrors: c.remoteErrors.Load(),
		ErrVersSent: c.errVers.Load(), ErrChunkSent: c.errChunk.Load(), Dropped: c.dropped.Load(),
		SlowReplies: c.slowReplies.Load(), Unanswered: c.unanswered.Load(),
		CreditStalls: c.creditStalls.Load(), Reconnects: c.reconnects.Load(), CallTimeouts: c.callTimeouts.Load(),
		DirectPlacements: c.directPlacements.Load(), DirectRegistrations: c.directRegs.Load(), ReadChunksInPlace: c.readChunksInPlace.Load(), PlacementCopies: c.placementCopies.Load(), DirectPlacementErrors: c.directErr.Load(),
		RegisterLimited: c.registerLimited.Load(),
		ReverseCalls:    c.reverseCalls.Load(), ReverseDropped: c.reverseDropped.Load(),
	}
}

func negotiated(s cmpriv.Settings) Negotiated {
	return Negotiated{
		PeerPrivateData: s.PeerStatus.String(),
		SendInline:      s.SendInline, RecvInline: s.RecvInline,
		LocalR: s.Local.RemoteInvalidate, PeerR: s.Peer.RemoteInvalidate,
		SendWithInvalidate: s.SendWithInvalidate, ExpectRemoteInvalidate: s.ExpectRemoteInvalidate,
	}
}
