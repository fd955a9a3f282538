package xdr

import "encoding/binary"

// Mismatch is the range of versions a server supports, sent with
// PROG_MISMATCH (program versions) and RPC_MISMATCH (RPC protocol versions)
// (RFC 5531 §9, mismatch_info).
type Mismatch struct {
	Low  uint32
	High uint32
}

// ReplyHeader is the header of an ONC RPC reply message (RFC 5531 §9): the
// rpc_msg xid and msg_type REPLY followed by the reply_body up to, not
// including, the procedure results:
//
//	union reply_body switch (reply_stat stat) {
//	case MSG_ACCEPTED:
//	    accepted_reply areply;   /* verf, accept_stat, [mismatch_info] */
//	case MSG_DENIED:
//	    rejected_reply rreply;   /* reject_stat, mismatch_info | auth_stat */
//	};
//
// Which fields are meaningful depends on Stat:
//   - MsgAccepted: Verf and AcceptStat; Mismatch when AcceptStat is
//     AcceptProgMismatch. Results follow only when AcceptStat is
//     AcceptSuccess. An AcceptStat outside the RFC's list decodes without
//     error (the union's default arm is void); the caller decides.
//   - MsgDenied: RejectStat; Mismatch when RejectStat is RejectRPCMismatch,
//     AuthStat when it is RejectAuthError. An AuthStat outside the RFC's list
//     decodes without error: the IANA registry may grow.
//
// Unmarshal zeroes the fields that are not on the wire, so a reused
// ReplyHeader never carries stale values; after Unmarshal, Verf.Body aliases
// the decoded buffer.
type ReplyHeader struct {
	XID        uint32
	Stat       ReplyStat
	Verf       OpaqueAuth
	AcceptStat AcceptStat
	Mismatch   Mismatch
	RejectStat RejectStat
	AuthStat   AuthStat
}

// EncodedLen returns the number of bytes Append adds, which is also the
// offset of the procedure results of a SUCCESS reply.
func (h *ReplyHeader) EncodedLen() int {
	n := 3 * 4
	switch h.Stat {
	case MsgAccepted:
		n += h.Verf.EncodedLen() + 4
		if h.AcceptStat == AcceptProgMismatch {
			n += 8
		}
	case MsgDenied:
		n += 4
		switch h.RejectStat {
		case RejectRPCMismatch:
			n += 8
		case RejectAuthError:
			n += 4
		}
	}
	return n
}

// Append appends the XDR encoding of the reply header; for a SUCCESS reply
// the caller appends the procedure results after it. Only the fields that
// Stat, AcceptStat and RejectStat select are written. A Stat or RejectStat
// outside the RFC's values is written as given with nothing after it (no
// conforming peer accepts such a reply).
func (h *ReplyHeader) Append(b []byte) []byte {
	b = AppendUint32(b, h.XID)
	b = AppendUint32(b, uint32(MsgReply))
	b = AppendUint32(b, uint32(h.Stat))
	switch h.Stat {
	case MsgAccepted:
		b = h.Verf.Append(b)
		b = AppendUint32(b, uint32(h.AcceptStat))
		if h.AcceptStat == AcceptProgMismatch {
			b = AppendUint32(b, h.Mismatch.Low)
			b = AppendUint32(b, h.Mismatch.High)
		}
	case MsgDenied:
		b = AppendUint32(b, uint32(h.RejectStat))
		switch h.RejectStat {
		case RejectRPCMismatch:
			b = AppendUint32(b, h.Mismatch.Low)
			b = AppendUint32(b, h.Mismatch.High)
		case RejectAuthError:
			b = AppendUint32(b, uint32(h.AuthStat))
		}
	}
	return b
}

// Unmarshal decodes a reply header from the start of msg, an entire
// rpc_msg, and returns the offset in msg just past the header: where the
// procedure results start when Stat is MsgAccepted and AcceptStat is
// AcceptSuccess (for other replies nothing is expected there). It never
// allocates; Verf.Body aliases msg.
//
// Errors (test with errors.Is):
//   - ErrShortBuffer: msg ends inside the header;
//   - ErrMsgType: msg_type is not REPLY;
//   - ErrReplyStat, ErrRejectStat: a discriminant of a union that has no
//     default arm is unknown (RFC 5531 §9);
//   - ErrTooLong: the verifier body exceeds 400 bytes (RFC 5531 §8.2).
//
// On error the contents of h are unspecified.
func (h *ReplyHeader) Unmarshal(msg []byte) (resultsOffset int, err error) {
	if len(msg) < 12 {
		if len(msg) >= 8 && MsgType(binary.BigEndian.Uint32(msg[4:])) != MsgReply {
			return 0, ErrMsgType
		}
		return 0, errReplyShort
	}
	if MsgType(binary.BigEndian.Uint32(msg[4:])) != MsgReply {
		return 0, ErrMsgType
	}
	*h = ReplyHeader{
		XID:  binary.BigEndian.Uint32(msg),
		Stat: ReplyStat(binary.BigEndian.Uint32(msg[8:])),
	}
	r := Reader{buf: msg, off: 12}
	switch h.Stat {
	case MsgAccepted:
		if err := h.Verf.Decode(&r); err != nil {
			if err == ErrTooLong {
				return 0, errReplyVerfTooLong
			}
			return 0, errReplyShort
		}
		v, err := r.Uint32()
		if err != nil {
			return 0, errReplyShort
		}
		h.AcceptStat = AcceptStat(v)
		if h.AcceptStat == AcceptProgMismatch {
			if h.Mismatch, err = readMismatch(&r); err != nil {
				return 0, errReplyShort
			}
		}
	case MsgDenied:
		v, err := r.Uint32()
		if err != nil {
			return 0, errReplyShort
		}
		h.RejectStat = RejectStat(v)
		switch h.RejectStat {
		case RejectRPCMismatch:
			if h.Mismatch, err = readMismatch(&r); err != nil {
				return 0, errReplyShort
			}
		case RejectAuthError:
			v, err := r.Uint32()
			if err != nil {
				return 0, errReplyShort
			}
			h.AuthStat = AuthStat(v)
		default:
			return 0, ErrRejectStat
		}
	default:
		return 0, ErrReplyStat
	}
	return r.off, nil
}

func readMismatch(r *Reader) (Mismatch, error) {
	if r.Len() < 8 {
		return Mismatch{}, ErrShortBuffer
	}
	lo, _ := r.Uint32()
	hi, _ := r.Uint32()
	return Mismatch{Low: lo, High: hi}, nil
}

var (
	errReplyShort       = &parseError{"rpc reply header", ErrShortBuffer}
	errReplyVerfTooLong = &parseError{"rpc reply header: verifier body over 400 bytes (RFC 5531 §8.2)", ErrTooLong}
)
