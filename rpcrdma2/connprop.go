package rpcrdma2

import (
	"encoding/binary"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// PropID is rpcrdma2_propid, a transport property's id (draft §4.1): a
// uint32 with const values, so that extensions can add properties.
type PropID uint32

// The properties of the draft (§4.2, Table 1).
const (
	// PropReceiveBufferSize is RDMA2_PROPID_RBSIZ: the sender's
	// pre-posted Receive buffers hold at least this many bytes
	// (rpcrdma2_prop_rbsiz, a uint32; §4.2.1).
	PropReceiveBufferSize PropID = 1
	// PropReverseRequests is RDMA2_PROPID_BRS: the sender's support for
	// reverse-direction RPC (rpcrdma2_prop_brs, an rpcrdma2_rvreqsup;
	// §4.2.2).
	PropReverseRequests PropID = 2
)

// DefaultReceiveBufferSize is RDMA2_PROPID_RBSIZ's default (Table 1): what a
// peer that sent none, or sent it with empty data, is taken to have.
const DefaultReceiveBufferSize = 4096

// ReverseSupport is rpcrdma2_rvreqsup (draft §4.2.2).
type ReverseSupport uint32

// The levels of reverse-direction support.
const (
	// ReverseNone is RDMA2_RVREQSUP_NONE: no reverse-direction requests
	// or replies.
	ReverseNone ReverseSupport = 0
	// ReverseInline is RDMA2_RVREQSUP_INLINE: reverse-direction
	// messages inline only, no chunks. The default (Table 1).
	ReverseInline ReverseSupport = 1
	// ReverseGeneral is RDMA2_RVREQSUP_GENL: reverse-direction messages
	// in every form forward ones take.
	ReverseGeneral ReverseSupport = 2
)

// String returns the draft's name of s.
func (s ReverseSupport) String() string {
	switch s {
	case ReverseNone:
		return "RDMA2_RVREQSUP_NONE"
	case ReverseInline:
		return "RDMA2_RVREQSUP_INLINE"
	case ReverseGeneral:
		return "RDMA2_RVREQSUP_GENL"
	}
	return "RDMA2_RVREQSUP(" + uitoa(uint32(s)) + ")"
}

// MaxProperties bounds the properties of an RDMA2_CONNPROP a parser takes
// (the draft sets none; its two properties and any extension's fit many
// times over). A longer set is RDMA2_ERR_BAD_XDR.
const MaxProperties = 64

// Property is rpcrdma2_propval: a property's id and its value's XDR, empty
// for the property's default (§4.1). After a parse Data aliases the
// received buffer.
type Property struct {
	Which PropID `xdr:"rdma_which"`
	Data  []byte `xdr:"rdma_data"`
}

// ReceiveBufferSize returns the property RDMA2_PROPID_RBSIZ of n bytes.
func ReceiveBufferSize(n uint32) Property {
	return Property{Which: PropReceiveBufferSize, Data: binary.BigEndian.AppendUint32(nil, n)}
}

// ReverseRequests returns the property RDMA2_PROPID_BRS of s.
func ReverseRequests(s ReverseSupport) Property {
	return Property{Which: PropReverseRequests, Data: binary.BigEndian.AppendUint32(nil, uint32(s))}
}

// checkProperty reports whether p's data fits its type: any data for a
// property this package does not know (it is skipped, §4.1), none (the
// default) or exactly one XDR word for a known one, and for
// RDMA2_PROPID_BRS one of the three levels.
func checkProperty(p *Property) error {
	switch p.Which {
	case PropReceiveBufferSize, PropReverseRequests:
	default:
		return nil
	}
	switch len(p.Data) {
	case 0:
		return nil
	case 4:
	default:
		return ErrPropertyData
	}
	if p.Which == PropReverseRequests && binary.BigEndian.Uint32(p.Data) > uint32(ReverseGeneral) {
		return ErrPropertyData
	}
	return nil
}

// Properties is an rpcrdma2_propset, the body of an RDMA2_CONNPROP.
type Properties []Property

// ReceiveBufferSize returns the value of RDMA2_PROPID_RBSIZ in ps, the
// last if there are several, and whether ps has it with a value (absent or
// empty: the peer's is DefaultReceiveBufferSize). ps must have been
// checked (Unmarshal).
func (ps Properties) ReceiveBufferSize() (uint32, bool) {
	v, ok := ps.word(PropReceiveBufferSize)
	return v, ok
}

// ReverseRequests returns the value of RDMA2_PROPID_BRS in ps, as
// ReceiveBufferSize (absent or empty: ReverseInline).
func (ps Properties) ReverseRequests() (ReverseSupport, bool) {
	v, ok := ps.word(PropReverseRequests)
	return ReverseSupport(v), ok
}

// word returns the one-word value of the last property id in ps that has
// data.
func (ps Properties) word(id PropID) (uint32, bool) {
	for i := len(ps) - 1; i >= 0; i-- {
		if ps[i].Which == id && len(ps[i].Data) == 4 {
			return binary.BigEndian.Uint32(ps[i].Data), true
		}
	}
	return 0, false
}

// len returns the encoded size of ps.
func (ps Properties) len() int {
	n := 4
	for i := range ps {
		n += 8 + xdr.RoundUp(len(ps[i].Data))
	}
	return n
}

// append appends ps as an rpcrdma2_propset.
func (ps Properties) append(b []byte) []byte {
	b = xdr.AppendUint32(b, uint32(len(ps)))
	for i := range ps {
		b = xdr.AppendUint32(b, uint32(ps[i].Which))
		b = xdr.AppendOpaque(b, ps[i].Data)
	}
	return b
}

// unmarshal decodes an rpcrdma2_propset into ps's array, checking each
// known property's data; nothing may follow.
func (ps *Properties) unmarshal(r *xdr.Reader) error {
	n, err := r.Uint32()
	switch {
	case err != nil:
		return ErrTruncated
	case n > MaxProperties:
		return ErrTooManyProperties
	case uint64(n)*8 > uint64(r.Len()):
		return ErrTruncated // each holds at least rdma_which and a length
	}
	for range n {
		var p Property
		w, err := r.Uint32()
		if err != nil {
			return ErrTruncated
		}
		p.Which = PropID(w)
		if p.Data, err = r.Opaque(r.Len()); err != nil {
			return ErrTruncated
		}
		if err := checkProperty(&p); err != nil {
			return err
		}
		*ps = append(*ps, p)
	}
	if r.Len() != 0 {
		return ErrTrailingData
	}
	return nil
}
