package chunks

import "encoding/binary"

// ParseCall parses the transport header of a message received by a responder
// (an RPC Call) and validates it with ValidateCall; b is the whole received
// message. For RDMA_MSG it also checks that the inline RPC message starts
// with rdma_xid. It returns the header length: for RDMA_MSG the RPC message is
// b[hdrLen:]. On error, OutcomeOf(err) tells the responder what to do, and
// h.XID, h.Vers and h.Credits are valid whenever len(b) >= MinHeaderSize, for
// addressing the RDMA_ERROR (see AppendErrVers and AppendErrChunk); the
// body fields are cleared, as after a failed Unmarshal.
//
// An incoming RDMA_ERROR is dropped (ErrUnexpectedError) before its body is
// looked at, as svcrdma does; so is RDMA_DONE (ErrDone).
func (h *Header) ParseCall(b []byte, lim *Limits) (hdrLen int, err error) {
	hdrLen, err = h.Unmarshal(b, lim)
	if len(b) >= MinHeaderSize && h.Vers == Version1 && h.Proc == ProcError {
		h.clearBody()
		return 0, ErrUnexpectedError
	}
	if err != nil {
		return 0, err
	}
	if err = h.ValidateCall(len(b)-hdrLen, lim); err == nil {
		err = h.checkInlineXID(b[hdrLen:])
	}
	if err != nil {
		h.clearBody()
		return 0, err
	}
	return hdrLen, nil
}

// ParseReply parses the transport header of a message received by a
// requester (an RPC Reply) and validates it with ValidateReply; b is the
// whole received message. For RDMA_MSG it also checks that the inline RPC
// message starts with rdma_xid. It returns the header length: for RDMA_MSG
// the RPC message is b[hdrLen:]. On error, ReplyOutcomeOf(err) tells the
// requester what to do; h.XID names the RPC to fail, and the body fields are
// cleared.
//
// A well-formed RDMA_ERROR is not an error of ParseReply: the requester
// fails the RPC named by h.XID because h.Proc is ProcError (Linux fails it
// with EREMOTEIO and does not retransmit).
func (h *Header) ParseReply(b []byte, lim *Limits) (hdrLen int, err error) {
	hdrLen, err = h.Unmarshal(b, lim)
	if err != nil {
		return 0, err
	}
	if err = h.ValidateReply(); err == nil {
		err = h.checkInlineXID(b[hdrLen:])
	}
	if err != nil {
		h.clearBody()
		return 0, err
	}
	return hdrLen, nil
}

// checkInlineXID checks that the inline RPC message of an RDMA_MSG starts
// with the header's XID. RFC 8166 §4.2.1 has rdma_xid repeat the XID of the
// RPC message it travels with, and §4.5.2 names "the value of the rdma_xid
// field does not match the value of the XID field in the accompanying RPC
// message" as an XDR error. An RDMA_MSG too short to hold an XID carries no
// RPC message at all. (Linux sets both from the same value and checks
// neither; a mismatch can only come from a broken peer.) The message of an
// RDMA_NOMSG is in a chunk, out of reach here.
func (h *Header) checkInlineXID(msg []byte) error {
	if h.Proc != ProcMsg {
		return nil
	}
	if len(msg) < 4 || binary.BigEndian.Uint32(msg) != h.XID {
		return ErrXIDMismatch
	}
	return nil
}

// ValidateCall checks h, the header of an RPC Call, as a responder must
// before acting on it; msgLen is the length of the inline RPC message that
// followed the header (len(b) - hdrLen). It repeats the limit checks of
// Unmarshal, so it also validates a Header built in memory. Each check cites
// the rule it enforces; all but the first few answer ERR_CHUNK, because
// RFC 8166 §4.5.2 says: "If the rdma_vers field contains a recognized value,
// but an XDR parsing error occurs, the Responder MUST reply with an
// RDMA_ERROR procedure and set the rdma_err value to ERR_CHUNK."
func (h *Header) ValidateCall(msgLen int, lim *Limits) error {
	lim = lim.orDefault()
	if h.Vers != Version1 {
		// RFC 8166 §4.5.1: ERR_VERS (see Unmarshal).
		return ErrVersion
	}
	switch h.Proc {
	case ProcMsg, ProcNoMsg:
	case ProcError:
		// Errors answer calls; a responder has nothing to answer.
		// svcrdma drops it.
		return ErrUnexpectedError
	case ProcDone:
		return ErrDone
	case ProcMsgp:
		return ErrMsgp
	default:
		return ErrUnknownProc
	}
	if err := h.checkLimits(lim); err != nil {
		return err
	}
	return h.checkReadList(msgLen)
}

// checkLimits checks the chunk counts and lengths of h against lim.
func (h *Header) checkLimits(lim *Limits) error {
	chunks := 0
	for i := 0; i < len(h.ReadList); {
		j := runEnd(h.ReadList, i)
		chunks++
		switch {
		case chunks > lim.MaxReadChunks:
			return ErrTooManyReadChunks
		case j-i > lim.MaxSegments:
			return ErrTooManySegments
		case lim.chunkTooLong(ReadChunk(h.ReadList[i:j]).Length()):
			return ErrChunkTooLong
		}
		i = j
	}
	if len(h.WriteList) > lim.MaxWriteChunks {
		return ErrTooManyWriteChunks
	}
	for _, wc := range h.WriteList {
		if err := checkWriteChunk(wc, lim); err != nil {
			return err
		}
	}
	return checkWriteChunk(h.ReplyChunk, lim)
}

func checkWriteChunk(wc WriteChunk, lim *Limits) error {
	if len(wc) > lim.MaxSegments {
		return ErrTooManySegments
	}
	if lim.chunkTooLong(wc.Length()) {
		return ErrChunkTooLong
	}
	return nil
}

// checkReadList checks the positions of the Read chunks of an RDMA_MSG or
// RDMA_NOMSG call against each other and against the message they are
// inserted into.
//
// Positions are offsets in the unreduced RPC message (RFC 8166 §3.4.5), in
// which a Read chunk of length L occupies L rounded up to a multiple of 4
// (XDR roundup, RFC 8166 §3.4.5.2; since Linux 5.12 the client includes the
// pad in odd-length chunks, older clients do not, and both are accepted
// here). For RDMA_MSG the message to insert into is the inline one, msgLen
// bytes; for RDMA_NOMSG it is the position-zero Read chunk.
func (h *Header) checkReadList(msgLen int) error {
	rl := h.ReadList
	for i := range rl {
		// RFC 8166 §3.4.5 defines Position as the offset of an XDR data
		// item in the unreduced message, and XDR items start on 4-byte
		// boundaries (RFC 4506 §3). The version 2 draft
		// (draft-ietf-nfsv4-rpcrdma-version-two, "Read Chunks") states it
		// outright: "The value in this field MUST be a multiple of
		// four." Linux svcrdma rejects others (xdr_count_read_segments).
		if rl[i].Position%4 != 0 {
			return ErrPositionAlign
		}
		// A Read chunk is the Read segments that share a Position
		// (RFC 8166 §3.4.5); the version 2 draft spells out how they are
		// reassembled: the receiver "concatenates Read segments whose
		// Position field value matches this offset until there are no
		// more Read segments at that Position value", so a chunk's
		// segments are contiguous. This package also requires chunks in
		// increasing position order, which that draft ("The Read List")
		// makes a MUST: a Responder that receives "a Read list whose
		// segment position values do not appear in monotonically
		// increasing order" MUST discard it and reply with an error.
		// svcrdma sorts chunks instead; the Linux client sends at most one
		// chunk, so the stricter rule costs no interoperability with Linux
		// and makes the overlap check below a single pass.
		if i > 0 && rl[i].Position < rl[i-1].Position {
			return ErrReadListOrder
		}
	}
	var inline uint64 // length of the message the chunks go into
	i := 0
	switch {
	case len(rl) > 0 && rl[0].Position == 0:
		// A position-zero Read chunk carries the whole RPC Call: a Long
		// Call, which RFC 8166 §3.5.3 sends as RDMA_NOMSG. In an RDMA_MSG
		// the message is inline and the chunk has nowhere to go.
		if h.Proc == ProcMsg {
			return ErrPositionZeroInMsg
		}
		i = runEnd(rl, 0)
		inline = ReadChunk(rl[:i]).Length()
	case h.Proc == ProcNoMsg:
		// RFC 8166 §4.5.2 cites "an RDMA_NOMSG message where the Read
		// list, Write list, and Reply chunk are marked not present" as
		// an XDR error. A call in RDMA_NOMSG without a position-zero Read
		// chunk has no RPC message whatever its other chunks hold.
		return ErrNoMsgNoCallChunk
	default:
		inline = uint64(max(msgLen, 0))
	}
	var (
		consumed uint64 // bytes of earlier chunks in the unreduced message
		prevEnd  uint64 // end of the previous chunk in the unreduced message
	)
	for i < len(rl) {
		j := runEnd(rl, i)
		pos := uint64(rl[i].Position)
		// Two chunks cannot both hold the bytes at one offset. svcrdma
		// computes the inline gaps between chunks by unsigned
		// subtraction, which overlapping chunks would make wrap.
		if pos < prevEnd {
			return ErrReadChunkOverlap
		}
		// pos >= prevEnd >= consumed: the offset of this chunk in the
		// reduced (inline) message, which must lie within it.
		if pos-consumed > inline {
			return ErrPositionBeyondMessage
		}
		ext := (ReadChunk(rl[i:j]).Length() + 3) &^ 3
		prevEnd = pos + ext
		consumed += ext
		i = j
	}
	return nil
}

// ValidateReply checks h, the header of an RPC Reply, as a requester must
// before using it. The checks follow the Linux client (rpc_rdma.c,
// rpcrdma_decode_msg and rpcrdma_decode_nomsg): a reply never carries a Read
// list, since Read chunks carry data from requester to responder (RFC 8166
// §3.4.5); an RDMA_MSG reply, whose RPC message is inline, reports no bytes
// written to a Reply chunk; an RDMA_NOMSG reply, which has no inline
// message, reports its message in the Reply chunk (RFC 8166 §3.5.3, Long
// Reply).
//
// Linux also refuses more than one Write chunk in a reply and an RDMA_NOMSG
// reply that reports bytes in the Write list; both are legal RFC 8166
// replies (a Long Reply may carry DDP data in Write chunks), and whether they
// answer what the call offered is for the transport to check against the
// call's own header, so ValidateReply accepts them.
func (h *Header) ValidateReply() error {
	if h.Vers != Version1 {
		return ErrVersion
	}
	switch h.Proc {
	case ProcMsg, ProcNoMsg:
	case ProcError:
		if h.ErrCode != CodeVers && h.ErrCode != CodeChunk {
			return ErrUnknownErrorCode
		}
		return nil
	case ProcDone:
		return ErrDone
	case ProcMsgp:
		return ErrMsgp
	default:
		return ErrUnknownProc
	}
	if len(h.ReadList) > 0 {
		return ErrReplyReadList
	}
	replyBytes := h.ReplyChunk.Length()
	if h.Proc == ProcMsg && replyBytes != 0 {
		return ErrReplyMsgReplyChunk
	}
	if h.Proc == ProcNoMsg && replyBytes == 0 {
		return ErrReplyNoMsgNoReplyChunk
	}
	return nil
}
