package capture

import "fmt"

// Opcode is the OpCode field of the InfiniBand Base Transport Header
// (InfiniBand Architecture Specification Volume 1, §9.2.1 and Table 38
// "OpCode Field"): the top three bits select the transport service (RC, UC,
// RD, UD, CNP), the low five the operation.
type Opcode uint8

// Reliable Connected opcodes (transport prefix 000), the ones RPC-over-RDMA
// uses (RFC 8166 §3.2: Send, RDMA Write, RDMA Read; RFC 8797 adds Send With
// Invalidate).
const (
	OpSendFirst          Opcode = 0x00
	OpSendMiddle         Opcode = 0x01
	OpSendLast           Opcode = 0x02
	OpSendLastImm        Opcode = 0x03
	OpSendOnly           Opcode = 0x04
	OpSendOnlyImm        Opcode = 0x05
	OpWriteFirst         Opcode = 0x06
	OpWriteMiddle        Opcode = 0x07
	OpWriteLast          Opcode = 0x08
	OpWriteLastImm       Opcode = 0x09
	OpWriteOnly          Opcode = 0x0a
	OpWriteOnlyImm       Opcode = 0x0b
	OpReadRequest        Opcode = 0x0c
	OpReadResponseFirst  Opcode = 0x0d
	OpReadResponseMiddle Opcode = 0x0e
	OpReadResponseLast   Opcode = 0x0f
	OpReadResponseOnly   Opcode = 0x10
	OpAck                Opcode = 0x11
	OpAtomicAck          Opcode = 0x12
	OpCompareSwap        Opcode = 0x13
	OpFetchAdd           Opcode = 0x14
	OpSendLastInvalidate Opcode = 0x16
	OpSendOnlyInvalidate Opcode = 0x17
	OpUDSendOnly         Opcode = 0x64 // Unreliable Datagram (QP1 carries the CM's MADs)
	OpUDSendOnlyImm      Opcode = 0x65
	OpCNP                Opcode = 0x81 // RoCEv2 Congestion Notification Packet (Annex A17)
)

const (
	opRCReserved     Opcode = 0x15
	opRCLast         Opcode = 0x17
	opUCSendFirst    Opcode = 0x20
	opUCWriteOnlyImm Opcode = 0x2b
	transportMask    Opcode = 0xe0
	transportRC      Opcode = 0x00
	transportUC      Opcode = 0x20
)

// Ext is a set of the extended transport headers that follow the BTH
// (IBA Vol. 1 §9.3); which ones a packet carries depends only on its opcode.
type Ext uint16

// Extended transport headers, in the order they appear on the wire.
const (
	ExtDETH         Ext = 1 << iota // Datagram ETH, 8 bytes: Q_Key, source QP (UD)
	ExtRETH                         // RDMA ETH, 16 bytes: virtual address, R_Key, DMA length
	ExtAtomicETH                    // Atomic ETH, 28 bytes
	ExtAETH                         // ACK ETH, 4 bytes: syndrome, MSN
	ExtAtomicAckETH                 // Atomic ACK ETH, 8 bytes: original remote data
	ExtImmDt                        // Immediate data, 4 bytes
	ExtIETH                         // Invalidate ETH, 4 bytes: the R_Key to invalidate
)

// extSizes gives the size of each extended header, indexed by bit number.
var extSizes = [...]int{8, 16, 28, 4, 8, 4, 4}

// Size returns the total size in bytes of the extended headers in e.
func (e Ext) Size() int {
	n := 0
	for i, s := range extSizes {
		if e&(1<<i) != 0 {
			n += s
		}
	}
	return n
}

// opInfo describes one opcode: its name, its extended headers, and where it
// sits in a multi-packet message.
type opInfo struct {
	name string
	ext  Ext
	pos  position
	kind Kind
}

// position is the place of a packet in a multi-packet message.
type position uint8

const (
	posNone   position = iota // not part of a message (ACKs, CNPs)
	posFirst                  // FIRST
	posMiddle                 // MIDDLE
	posLast                   // LAST
	posOnly                   // ONLY: a whole message in one packet
)

// rcOps describes the RC opcodes 0x00-0x17 (IBA Vol. 1 Table 38). UC uses
// the same layout for its SEND and RDMA WRITE opcodes, 0x20-0x2b.
var rcOps = [...]opInfo{
	OpSendFirst:          {"SEND_FIRST", 0, posFirst, KindSend},
	OpSendMiddle:         {"SEND_MIDDLE", 0, posMiddle, KindSend},
	OpSendLast:           {"SEND_LAST", 0, posLast, KindSend},
	OpSendLastImm:        {"SEND_LAST_WITH_IMMEDIATE", ExtImmDt, posLast, KindSend},
	OpSendOnly:           {"SEND_ONLY", 0, posOnly, KindSend},
	OpSendOnlyImm:        {"SEND_ONLY_WITH_IMMEDIATE", ExtImmDt, posOnly, KindSend},
	OpWriteFirst:         {"RDMA_WRITE_FIRST", ExtRETH, posFirst, KindWrite},
	OpWriteMiddle:        {"RDMA_WRITE_MIDDLE", 0, posMiddle, KindWrite},
	OpWriteLast:          {"RDMA_WRITE_LAST", 0, posLast, KindWrite},
	OpWriteLastImm:       {"RDMA_WRITE_LAST_WITH_IMMEDIATE", ExtImmDt, posLast, KindWrite},
	OpWriteOnly:          {"RDMA_WRITE_ONLY", ExtRETH, posOnly, KindWrite},
	OpWriteOnlyImm:       {"RDMA_WRITE_ONLY_WITH_IMMEDIATE", ExtRETH | ExtImmDt, posOnly, KindWrite},
	OpReadRequest:        {"RDMA_READ_REQUEST", ExtRETH, posOnly, KindReadRequest},
	OpReadResponseFirst:  {"RDMA_READ_RESPONSE_FIRST", ExtAETH, posFirst, KindReadResponse},
	OpReadResponseMiddle: {"RDMA_READ_RESPONSE_MIDDLE", 0, posMiddle, KindReadResponse},
	OpReadResponseLast:   {"RDMA_READ_RESPONSE_LAST", ExtAETH, posLast, KindReadResponse},
	OpReadResponseOnly:   {"RDMA_READ_RESPONSE_ONLY", ExtAETH, posOnly, KindReadResponse},
	OpAck:                {"ACKNOWLEDGE", ExtAETH, posNone, kindNone},
	OpAtomicAck:          {"ATOMIC_ACKNOWLEDGE", ExtAETH | ExtAtomicAckETH, posNone, kindNone},
	OpCompareSwap:        {"COMPARE_SWAP", ExtAtomicETH, posNone, kindNone},
	OpFetchAdd:           {"FETCH_ADD", ExtAtomicETH, posNone, kindNone},
	opRCReserved:         {},
	OpSendLastInvalidate: {"SEND_LAST_WITH_INVALIDATE", ExtIETH, posLast, KindSend},
	OpSendOnlyInvalidate: {"SEND_ONLY_WITH_INVALIDATE", ExtIETH, posOnly, KindSend},
}

// info returns what the decoder knows about op; ok is false for opcodes it
// cannot lay out (reserved ones, RD, manufacturer-specific).
func (op Opcode) info() (opInfo, bool) {
	switch {
	case op&transportMask == transportRC && op <= opRCLast:
		i := rcOps[op]
		return i, i.name != ""
	case op >= opUCSendFirst && op <= opUCWriteOnlyImm:
		i := rcOps[op-transportUC]
		i.name = "UC_" + i.name
		return i, true
	case op == OpUDSendOnly:
		return opInfo{"UD_SEND_ONLY", ExtDETH, posOnly, KindSend}, true
	case op == OpUDSendOnlyImm:
		return opInfo{"UD_SEND_ONLY_WITH_IMMEDIATE", ExtDETH | ExtImmDt, posOnly, KindSend}, true
	case op == OpCNP:
		return opInfo{"CNP", 0, posNone, kindNone}, true
	}
	return opInfo{}, false
}

// String returns the name IBA gives op, such as "SEND_ONLY", or
// "Opcode(0xNN)" for one this package does not know.
func (op Opcode) String() string {
	if i, ok := op.info(); ok {
		return i.name
	}
	return fmt.Sprintf("Opcode(%#02x)", uint8(op))
}

// Ext returns the extended headers that follow the BTH of a packet with
// opcode op, and false for an opcode this package cannot lay out.
func (op Opcode) Ext() (Ext, bool) {
	i, ok := op.info()
	return i.ext, ok
}

// Kind is the kind of operation a packet belongs to.
type Kind uint8

// Kinds of Message.
const (
	kindNone         Kind = iota
	KindSend              // a Send (RC, UC or UD), the carrier of RPC-over-RDMA messages
	KindWrite             // an RDMA Write
	KindReadRequest       // an RDMA Read request (one packet)
	KindReadResponse      // the data of an RDMA Read response
)

// String returns the kind's name.
func (k Kind) String() string {
	switch k {
	case KindSend:
		return "Send"
	case KindWrite:
		return "RDMA Write"
	case KindReadRequest:
		return "RDMA Read request"
	case KindReadResponse:
		return "RDMA Read response"
	}
	return "none"
}
