package cmpriv

import (
	"bytes"
	"encoding/hex"
	"strings"
)

// Wire bytes as Linux sends them, from the RFC 8797 §4 layout and the Linux
// sources: the client (rpcrdma_ep_create) sets R and offers 4096 each way
// (code 3); the server (svc_rdma_accept) clears R and offers 4096 each way.
var (
	linuxClient = hx("f6ab0e18 01 01 03 03")
	linuxServer = hx("f6ab0e18 01 00 03 03")
)

// The private data lengths an InfiniBand CM delivers through rdma_cm:
// 56 bytes with a connect request, 196 with an accept (the IB CM's REQ
// and REP private data less rdma_cm's header).
const (
	connectLen = 56
	acceptLen  = 196
)

// hx decodes hexadecimal test data, ignoring spaces. It panics on bad input,
// which is a bug in the test itself.
func hx(s string) []byte {
	b, err := hex.DecodeString(strings.ReplaceAll(s, " ", ""))
	if err != nil {
		panic(err)
	}
	return b
}

// padded returns a buffer of n bytes holding prefix, then msg, then zeros.
func padded(n int, prefix, msg []byte) []byte {
	b := make([]byte, n)
	copy(b[copy(b, prefix):], msg)
	return b
}

// garbage returns n deterministic non-zero bytes that do not contain the
// format identifier.
func garbage(n int) []byte {
	b := make([]byte, n)
	x := uint32(0x9e3779b9)
	for i := range b {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		b[i] = byte(x) | 1
	}
	if bytes.Contains(b, []byte{0xf6, 0xab, 0x0e, 0x18}) {
		panic("garbage contains the format identifier")
	}
	return b
}

// referenceParse is a deliberately naive, independent implementation of
// RFC 8797 §5.2 as this package documents it: try every offset in order,
// accept the first occurrence of the identifier that has version 1 and 8
// bytes, else report the first occurrence's problem, an all-zero buffer
// being "empty".
func referenceParse(buf []byte) (Message, int, Status) {
	st, seen := StatusNotFound, false
	for i := 0; i+4 <= len(buf); i++ {
		if buf[i] != 0xf6 || buf[i+1] != 0xab || buf[i+2] != 0x0e || buf[i+3] != 0x18 {
			continue
		}
		var s Status
		switch {
		case i+8 > len(buf):
			s = StatusTruncated
		case buf[i+4] != 1:
			s = StatusBadVersion
		default:
			return Message{
				RemoteInvalidate: buf[i+5]&1 == 1,
				SendSize:         int(buf[i+6])*1024 + 1024,
				RecvSize:         int(buf[i+7])*1024 + 1024,
			}, i, StatusFound
		}
		if !seen {
			st, seen = s, true
		}
	}
	if !seen {
		zero := true
		for _, c := range buf {
			zero = zero && c == 0
		}
		if zero {
			st = StatusEmpty
		}
	}
	return Message{SendSize: 1024, RecvSize: 1024}, -1, st
}
