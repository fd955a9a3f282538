package gonfsd

import (
	"encoding/binary"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// CallID names an RPC procedure: program, version, procedure.
type CallID struct {
	Prog, Vers, Proc uint32
}

// callHeaderPrefix is the part of an RPC call the scanner reads: xid,
// msg_type, rpcvers, prog, vers, proc (RFC 5531 §9).
const callHeaderPrefix = 6 * 4

// CallScanner follows an RFC 5531 record-marked byte stream (§11) fed to it
// in pieces of any size and reports the procedure of every call message in
// it. It keeps only a record mark and the first 24 bytes of each record,
// whatever the records' lengths, and never allocates. A record that is not
// a version-2 CALL, or ends before its procedure number, is counted in
// Other and otherwise ignored: the scanner observes a stream someone else
// parses and never fails.
type CallScanner struct {
	mark  [4]byte
	markN int
	left  uint64 // bytes left in the current fragment
	last  bool   // the current fragment is the record's last
	hdr   [callHeaderPrefix]byte
	hdrN  int // header bytes of the current record kept so far
	// Calls counts the call messages seen; Other the records that were not
	// calls.
	Calls, Other uint64
}

// Scan scans the next bytes of the stream, p, and calls fn (if not nil)
// with the procedure of every call whose header is complete in them.
func (s *CallScanner) Scan(p []byte, fn func(CallID)) {
	for len(p) > 0 {
		if s.left == 0 && s.markN < 4 {
			// Record mark (RFC 5531 §11): last-fragment bit, 31-bit length.
			k := copy(s.mark[s.markN:], p)
			s.markN += k
			p = p[k:]
			if s.markN < 4 {
				return
			}
			m := binary.BigEndian.Uint32(s.mark[:])
			s.left = uint64(m &^ xdr.LastFragment)
			s.last = m&xdr.LastFragment != 0
			if s.left == 0 {
				s.fragmentEnd(fn)
			}
			continue
		}
		k := uint64(len(p))
		if k > s.left {
			k = s.left
		}
		if s.hdrN < callHeaderPrefix {
			c := copy(s.hdr[s.hdrN:], p[:k])
			s.hdrN += c
			if s.hdrN == callHeaderPrefix {
				s.header(fn)
			}
		}
		s.left -= k
		p = p[k:]
		if s.left == 0 {
			s.fragmentEnd(fn)
		}
	}
}

// header decodes the first 24 bytes of a record.
func (s *CallScanner) header(fn func(CallID)) {
	h := s.hdr[:]
	if xdr.MsgType(binary.BigEndian.Uint32(h[4:])) != xdr.MsgCall || binary.BigEndian.Uint32(h[8:]) != xdr.RPCVersion {
		s.Other++
		return
	}
	s.Calls++
	if fn != nil {
		fn(CallID{Prog: binary.BigEndian.Uint32(h[12:]), Vers: binary.BigEndian.Uint32(h[16:]), Proc: binary.BigEndian.Uint32(h[20:])})
	}
}

// fragmentEnd: the current fragment is complete.
func (s *CallScanner) fragmentEnd(fn func(CallID)) {
	s.markN = 0
	if !s.last {
		return
	}
	if s.hdrN < callHeaderPrefix {
		s.Other++ // a record too short to be a call
	}
	s.hdrN = 0
}
