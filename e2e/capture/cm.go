package capture

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// MADSize is the size of a Management Datagram on the wire (IBA Vol. 1
// §13.4.2); the Communication Manager's messages are MADs sent on QP1.
const MADSize = 256

// mgmtClassCM is the Management Class of the Communication Manager (IBA
// Vol. 1 §13.4.4).
const mgmtClassCM = 0x07

// CMAttr is the Attribute ID of a Communication Manager message (IBA Vol. 1
// §12.6, Table 101).
type CMAttr uint16

// CM messages of connection set-up and tear-down.
const (
	CMREQ  CMAttr = 0x0010
	CMMRA  CMAttr = 0x0011
	CMREJ  CMAttr = 0x0012
	CMREP  CMAttr = 0x0013
	CMRTU  CMAttr = 0x0014
	CMDREQ CMAttr = 0x0015
	CMDREP CMAttr = 0x0016
)

// String returns the CM message's name.
func (a CMAttr) String() string {
	switch a {
	case CMREQ:
		return "REQ"
	case CMMRA:
		return "MRA"
	case CMREJ:
		return "REJ"
	case CMREP:
		return "REP"
	case CMRTU:
		return "RTU"
	case CMDREQ:
		return "DREQ"
	case CMDREP:
		return "DREP"
	}
	return fmt.Sprintf("CMAttr(%#04x)", uint16(a))
}

// cmPrivateData gives where each CM message's PrivateData field lies in the
// MAD (IBA Vol. 1 §12.6.5-§12.6.11): it ends the message, so its offset is
// MADSize minus its length.
var cmPrivateData = map[CMAttr]int{
	CMREQ:  92,
	CMREJ:  148,
	CMREP:  196,
	CMRTU:  224,
	CMDREQ: 220,
	CMDREP: 224,
}

// CMMessage is a Communication Manager message found in a MAD.
type CMMessage struct {
	Attr CMAttr
	// PrivateData is the message's PrivateData field (nil for MRA). The
	// RDMA CM puts its own 36-byte header at the start of a REQ's (the IP
	// addresses and ports), then the consumer's data; RPC-over-RDMA's
	// (RFC 8797) follows it. It aliases the MAD.
	PrivateData []byte
}

// ParseCM reads a MAD carried by a Send to QP1 as a Communication Manager
// message; ok is false for a MAD of another class or a short one.
func ParseCM(mad []byte) (m CMMessage, ok bool) {
	if len(mad) < MADSize || mad[1] != mgmtClassCM {
		return m, false
	}
	m.Attr = CMAttr(binary.BigEndian.Uint16(mad[16:]))
	if n, ok := cmPrivateData[m.Attr]; ok {
		m.PrivateData = mad[MADSize-n : MADSize]
	}
	return m, true
}

// RPCRDMAPrivateData finds the RPC-over-RDMA private data (RFC 8797 §4)
// in a CM message's private data: eight bytes that start with the format
// identifier 0xf6ab0e18, wherever they are (RFC 8797 §5.2 has a receiver
// search for it at any alignment, since the RDMA CM and others may put
// headers first).
func RPCRDMAPrivateData(pd []byte) ([]byte, bool) {
	i := bytes.Index(pd, []byte{0xf6, 0xab, 0x0e, 0x18})
	if i < 0 || len(pd)-i < 8 {
		return nil, false
	}
	return pd[i : i+8 : i+8], true
}
