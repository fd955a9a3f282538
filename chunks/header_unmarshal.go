package chunks

import (
	"slices"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Unmarshal parses the transport header at the start of b into h (RFC 8166
// §4.1.2) and returns its length. For RDMA_MSG the RPC message is
// b[hdrLen:]; nothing is copied out of it. Unmarshal checks the structure of
// the header and lim (nil means DefaultLimits), not its meaning to a
// requester or a responder: use ParseCall or ParseReply for that.
//
// Checks come in the order Linux makes them: the length of the fixed part,
// then rdma_vers, then rdma_proc, then the body. Every count is checked
// against lim and against the bytes left in b before anything is read or
// allocated for it, so a header that claims 2^32 segments fails after
// reading only the bytes present. On error, hdrLen is 0 and the error is one
// of the package's sentinel *ProtocolError values; if len(b) >= 16, h.XID,
// h.Vers, h.Credits and h.Proc hold the fixed part, so a responder can
// address an RDMA_ERROR to the sender.
//
// h's slices are reused (see Header), so the previous contents of h are
// lost. Unmarshal allocates only when a header holds more segments or chunks
// than any header h parsed before.
func (h *Header) Unmarshal(b []byte, lim *Limits) (hdrLen int, err error) {
	lim = lim.orDefault()
	h.Reset()
	r := xdr.NewReader(b)
	if !h.unmarshalFixed(&r) {
		return 0, ErrShortHeader
	}
	// RFC 8166 §4.5.1: "When a Responder detects an RPC-over-RDMA header
	// version that it does not support (currently this document defines
	// only version 1), it MUST reply with an RDMA_ERROR procedure and set
	// the rdma_err value to ERR_VERS". The version decides how to read
	// everything after it, so it is checked before rdma_proc.
	if h.Vers != Version1 {
		return 0, ErrVersion
	}
	switch h.Proc {
	case ProcMsg, ProcNoMsg:
		err = h.unmarshalChunkLists(&r, lim)
	case ProcError:
		err = h.unmarshalError(&r)
	case ProcDone:
		// RFC 8166 §4.6.2 retires RDMA_DONE; svcrdma drops it.
		err = ErrDone
	case ProcMsgp:
		// RFC 8166 §4.6.1 retires RDMA_MSGP; svcrdma rejects it as it
		// rejects an unknown procedure.
		err = ErrMsgp
	default:
		// RFC 8166 §4.5.2 lists "an invalid value in the rdma_proc
		// field" first among the XDR errors a responder answers with
		// ERR_CHUNK.
		err = ErrUnknownProc
	}
	if err != nil {
		h.clearBody()
		return 0, err
	}
	return r.Offset(), nil
}

// clearBody empties everything but the fixed part, keeping the capacity of
// the slices, so that a failed parse leaves no partial lists behind.
func (h *Header) clearBody() {
	h.ReadList = h.ReadList[:0]
	h.WriteList = h.WriteList[:0]
	h.ReplyChunk, h.HasReplyChunk = nil, false
	h.ErrCode, h.VersLow, h.VersHigh = 0, 0, 0
}

// unmarshalFixed decodes the four fixed words, reporting false if b holds
// fewer than 16 bytes.
func (h *Header) unmarshalFixed(r *xdr.Reader) bool {
	if r.Len() < MinHeaderSize {
		return false
	}
	// The length was checked: these reads cannot fail.
	h.XID, _ = r.Uint32()
	h.Vers, _ = r.Uint32()
	h.Credits, _ = r.Uint32()
	p, _ := r.Uint32()
	h.Proc = Proc(p)
	return true
}

// unmarshalError decodes the body of an RDMA_ERROR (RFC 8166 §4.1.2,
// rpcrdma1_error).
func (h *Header) unmarshalError(r *xdr.Reader) error {
	code, err := r.Uint32()
	if err != nil {
		return ErrTruncated
	}
	h.ErrCode = ErrorCode(code)
	switch h.ErrCode {
	case CodeVers:
		if h.VersLow, err = r.Uint32(); err != nil {
			return ErrTruncated
		}
		if h.VersHigh, err = r.Uint32(); err != nil {
			return ErrTruncated
		}
	case CodeChunk:
	default:
		return ErrUnknownErrorCode
	}
	// RDMA_ERROR has no chunk lists and no RPC message: anything after its
	// body (a Write list or Reply chunk, say) is malformed.
	if r.Len() != 0 {
		return ErrTrailingData
	}
	return nil
}

// present decodes an optional-data discriminator (RFC 4506 §4.19), which
// XDR encodes as a boolean: 0 or 1, nothing else.
func present(r *xdr.Reader) (bool, error) {
	v, err := r.Uint32()
	switch {
	case err != nil:
		return false, ErrTruncated
	case v > 1:
		return false, ErrBadDiscriminator
	}
	return v == 1, nil
}

// unmarshalChunkLists decodes the Read list, Write list and Reply chunk of an
// RDMA_MSG or RDMA_NOMSG (RFC 8166 §4.3).
func (h *Header) unmarshalChunkLists(r *xdr.Reader, lim *Limits) error {
	if err := h.unmarshalReadList(r, lim); err != nil {
		return err
	}
	segs, err := h.unmarshalWriteList(r, lim, h.segs[:0])
	// Keep whatever capacity segs gained, even on error, so that a
	// stream of bad headers does not allocate again and again.
	h.segs = segs
	if err != nil {
		return err
	}
	more, err := present(r)
	if err != nil {
		return err
	}
	replyStart := len(segs)
	if more {
		h.HasReplyChunk = true
		segs, err = unmarshalWriteChunk(r, lim, segs)
		h.segs = segs
		if err != nil {
			return err
		}
	}
	// The Write chunks and the Reply chunk were sliced from segs as it grew;
	// a chunk sliced before segs moved to a larger array still points at the
	// old one. Re-slice all of them from the final array.
	off := 0
	for i, wc := range h.WriteList {
		n := off + len(wc)
		h.WriteList[i] = WriteChunk(segs[off:n:n])
		off = n
	}
	if h.HasReplyChunk {
		h.ReplyChunk = WriteChunk(segs[replyStart:len(segs):len(segs)])
	}
	return nil
}

// unmarshalReadList decodes the Read list: entries "1, position, segment",
// then 0 (RFC 8166 §4.3.1). It counts Read chunks (runs of one Position)
// and their segments and lengths against lim as it goes.
func (h *Header) unmarshalReadList(r *xdr.Reader, lim *Limits) error {
	var (
		chunks  int
		nsegs   int    // segments in the current Read chunk
		length  uint64 // bytes in the current Read chunk
		lastPos uint32
	)
	for {
		more, err := present(r)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
		// The entry is read whole from bytes already received before the
		// list grows, so the list never outgrows the message.
		if r.Len() < ReadSegmentSize-4 {
			return ErrTruncated
		}
		var rs ReadSegment
		rs.Position, _ = r.Uint32()
		readSegment(r, &rs.Segment)
		if chunks == 0 || rs.Position != lastPos {
			chunks++
			nsegs, length, lastPos = 0, 0, rs.Position
			if chunks > lim.MaxReadChunks {
				return ErrTooManyReadChunks
			}
		}
		nsegs++
		length += uint64(rs.Length)
		if nsegs > lim.MaxSegments {
			return ErrTooManySegments
		}
		if lim.chunkTooLong(length) {
			return ErrChunkTooLong
		}
		h.ReadList = append(h.ReadList, rs)
	}
}

// unmarshalWriteList decodes the Write list: chunks "1, count, segments",
// then 0 (RFC 8166 §4.3.2), appending their segments to segs.
func (h *Header) unmarshalWriteList(r *xdr.Reader, lim *Limits, segs []Segment) ([]Segment, error) {
	for {
		more, err := present(r)
		if err != nil {
			return segs, err
		}
		if !more {
			return segs, nil
		}
		if len(h.WriteList) >= lim.MaxWriteChunks {
			return segs, ErrTooManyWriteChunks
		}
		start := len(segs)
		if segs, err = unmarshalWriteChunk(r, lim, segs); err != nil {
			return segs, err
		}
		// Provisional: unmarshalChunkLists re-slices it from the final
		// backing array.
		h.WriteList = append(h.WriteList, WriteChunk(segs[start:]))
	}
}

// unmarshalWriteChunk decodes one counted array of segments (RFC 8166
// §4.1.2, rpcrdma1_write_chunk) and appends it to segs.
func unmarshalWriteChunk(r *xdr.Reader, lim *Limits, segs []Segment) ([]Segment, error) {
	n, err := r.Uint32()
	if err != nil {
		return segs, ErrTruncated
	}
	// The count is checked against the limit and against the bytes
	// actually received before segs grows by a single element.
	if uint64(n) > uint64(max(lim.MaxSegments, 0)) {
		return segs, ErrTooManySegments
	}
	if uint64(n)*SegmentSize > uint64(r.Len()) {
		return segs, ErrTruncated
	}
	start := len(segs)
	segs = slices.Grow(segs, int(n))[:start+int(n)]
	var length uint64
	for i := range segs[start:] {
		s := &segs[start+i]
		readSegment(r, s)
		length += uint64(s.Length)
	}
	if lim.chunkTooLong(length) {
		return segs, ErrChunkTooLong
	}
	return segs, nil
}

// readSegment decodes a segment (RFC 8166 §4.1.2, rpcrdma1_segment). The
// caller has checked that SegmentSize bytes remain.
func readSegment(r *xdr.Reader, s *Segment) {
	s.Handle, _ = r.Uint32()
	s.Length, _ = r.Uint32()
	s.Offset, _ = r.Uint64()
}
