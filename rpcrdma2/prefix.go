package rpcrdma2

import (
	"encoding/binary"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Version2 is the rdma_vers of every header of this package (draft §3.1).
const Version2 = 2

// HType is rdma_htype, a header's type (draft §5.2, Table 2). It is a
// uint32, not an enum, so that extensions can add types.
type HType uint32

// The header types of the draft (§5.3, §6.4).
const (
	// HTypeMsg is RDMA2_MSG: the RPC message follows the header
	// (§5.3.1).
	HTypeMsg HType = 0
	// HTypeNoMsg is RDMA2_NOMSG: the RPC message travels in a
	// position-zero Read chunk or the Reply chunk (§5.3.2).
	HTypeNoMsg HType = 1
	// HTypeError is RDMA2_ERROR: a transport error (§5.3.3).
	HTypeError HType = 4
	// HTypeConnProp is RDMA2_CONNPROP: the sender's transport
	// properties (§5.3.4).
	HTypeConnProp HType = 5
)

// String returns the draft's name of t.
func (t HType) String() string {
	switch t {
	case HTypeMsg:
		return "RDMA2_MSG"
	case HTypeNoMsg:
		return "RDMA2_NOMSG"
	case HTypeError:
		return "RDMA2_ERROR"
	case HTypeConnProp:
		return "RDMA2_CONNPROP"
	}
	return "RDMA2_HTYPE(" + uitoa(uint32(t)) + ")"
}

// FlagResponse is RPCRDMA2_F_RESPONSE (draft §3.2): set when rdma_xid is an
// XID its receiver generated (the message answers the receiver's call), so
// rdma_credit is a grant; clear when the sender is the requester, so
// rdma_credit is a request. Every RDMA2_ERROR carries it.
const FlagResponse uint32 = 0x00000001

// Encoded sizes, in bytes.
const (
	// CommonSize is rpcrdma_common: rdma_xid, rdma_vers, rdma_credit,
	// rdma_htype, the four words every version shares (RFC 8166 §4.2).
	CommonSize = 16
	// PrefixSize is rpcrdma2_hdr_prefix: rpcrdma_common and rdma_flags.
	PrefixSize = CommonSize + 4
	// EmptyMsgSize is an RDMA2_MSG or RDMA2_NOMSG header with no chunks:
	// the prefix, rdma_inv_handle and three empty lists.
	EmptyMsgSize = PrefixSize + 4 + 3*4
)

// Prefix is rpcrdma2_hdr_prefix (draft §3.2): rpcrdma_common (rdma_start)
// and rdma_flags.
type Prefix struct {
	// XID is rdma_xid: the XID of the RPC message the header travels
	// with, or of the call an RDMA2_ERROR answers.
	XID uint32 `xdr:"rdma_xid"`
	// Vers is rdma_vers: Version2.
	Vers uint32 `xdr:"rdma_vers"`
	// Credit is rdma_credit: a request (FlagResponse clear) or a grant
	// (FlagResponse set); its receiver ignores it in an RDMA2_ERROR
	// (§5.3.3).
	Credit uint32 `xdr:"rdma_credit"`
	// Type is rdma_htype.
	Type HType `xdr:"rdma_htype"`
	// Flags is rdma_flags: FlagResponse, the other bits reserved (zero
	// when sent, §3.2).
	Flags uint32 `xdr:"rdma_flags"`
}

// Response reports whether FlagResponse is set.
func (p *Prefix) Response() bool { return p.Flags&FlagResponse != 0 }

// Reserved returns the flag bits the draft reserves that are set (zero in
// a header from a conforming sender).
func (p *Prefix) Reserved() uint32 { return p.Flags &^ FlagResponse }

// appendPrefix appends p's five words.
func appendPrefix(b []byte, p *Prefix) []byte {
	b = xdr.AppendUint32(b, p.XID)
	b = xdr.AppendUint32(b, p.Vers)
	b = xdr.AppendUint32(b, p.Credit)
	b = xdr.AppendUint32(b, uint32(p.Type))
	return xdr.AppendUint32(b, p.Flags)
}

// uitoa formats v in decimal without allocating more than the result.
func uitoa(v uint32) string {
	var buf [10]byte
	i := len(buf)
	for {
		i--
		buf[i] = byte('0' + v%10)
		v /= 10
		if v == 0 {
			return string(buf[i:])
		}
	}
}

// IsResponse reports whether b starts with a version 2 prefix whose
// FlagResponse is set: a message that answers a call its receiver made
// (§3.2), which an endpoint playing both roles (reverse-direction
// operation, §4.2.2) routes to its requester side before any other check.
// It looks at rdma_vers and rdma_flags only; the header is not validated.
func IsResponse(b []byte) bool {
	return len(b) >= PrefixSize && binary.BigEndian.Uint32(b[4:]) == Version2 &&
		binary.BigEndian.Uint32(b[16:])&FlagResponse != 0
}
