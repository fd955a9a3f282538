package gonfsd_test

import (
	"encoding/binary"
	"math/rand/v2"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/gonfsd"
	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
	"github.com/stretchr/testify/require"
)

// scanAll scans stream in pieces of the given sizes (cycled; nil: at once)
// and returns the procedures reported and the scanner.
func scanAll(stream []byte, pieces []int) ([]gonfsd.CallID, *gonfsd.CallScanner) {
	var s gonfsd.CallScanner
	var got []gonfsd.CallID
	fn := func(id gonfsd.CallID) { got = append(got, id) }
	if len(pieces) == 0 {
		s.Scan(stream, fn)
		return got, &s
	}
	for i := 0; len(stream) > 0; i++ {
		n := min(pieces[i%len(pieces)], len(stream))
		s.Scan(stream[:n], fn)
		stream = stream[n:]
	}
	return got, &s
}

// scanReference is the scanner's specification, written plainly: join the
// fragments of each record; once 24 bytes of a record are known, it is a
// call (reported) if its msg_type is CALL and rpcvers 2, else counted as
// other; a record that ends before 24 bytes is other too.
func scanReference(stream []byte) (calls []gonfsd.CallID, other uint64) {
	var rec []byte
	decided := false
	for len(stream) >= 4 {
		m := binary.BigEndian.Uint32(stream)
		n := int(m &^ xdr.LastFragment)
		stream = stream[4:]
		take := min(n, len(stream))
		rec = append(rec, stream[:take]...)
		stream = stream[take:]
		if !decided && len(rec) >= 24 {
			decided = true
			if binary.BigEndian.Uint32(rec[4:]) == 0 && binary.BigEndian.Uint32(rec[8:]) == 2 {
				calls = append(calls, gonfsd.CallID{Prog: binary.BigEndian.Uint32(rec[12:]),
					Vers: binary.BigEndian.Uint32(rec[16:]), Proc: binary.BigEndian.Uint32(rec[20:])})
			} else {
				other++
			}
		}
		if take < n {
			break // the stream ends inside the fragment
		}
		if m&xdr.LastFragment != 0 {
			if !decided {
				other++
			}
			rec, decided = rec[:0], false
		}
	}
	return calls, other
}

func call(xid, prog, vers, proc uint32) []byte {
	h := xdr.CallHeader{XID: xid, Prog: prog, Vers: vers, Proc: proc}
	return h.Append(nil)
}

func TestCallScanner(t *testing.T) {
	nfsRead := gonfsd.CallID{Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcRead}
	mnt := gonfsd.CallID{Prog: nfs.ProgMount, Vers: 3, Proc: 1}
	reply := (&xdr.ReplyHeader{XID: 5, Stat: xdr.MsgAccepted}).Append(nil)
	big := append(call(1, nfs.ProgNFS, 3, nfs.ProcRead), make([]byte, 70000)...)

	var stream []byte
	stream = xdr.AppendRecord(stream, big, 0)                                   // one fragment
	stream = xdr.AppendRecord(stream, reply, 0)                                 // not a call
	stream = xdr.AppendRecord(stream, call(2, nfs.ProgMount, 3, 1), 10)         // header across 3 fragments
	stream = xdr.AppendRecord(stream, []byte{1, 2, 3, 4}, 0)                    // too short
	stream = xdr.AppendFragmentHeader(stream, 0, false)                         // an empty fragment...
	stream = xdr.AppendRecord(stream, call(3, nfs.ProgNFS, 3, nfs.ProcRead), 0) // ...then a call
	rpcv3 := call(4, nfs.ProgNFS, 3, 1)
	binary.BigEndian.PutUint32(rpcv3[8:], 3) // rpcvers 3: not a call we count
	stream = xdr.AppendRecord(stream, rpcv3, 0)

	want := []gonfsd.CallID{nfsRead, mnt, nfsRead}
	for _, pieces := range [][]int{nil, {1}, {3}, {4, 1}, {7, 13, 4096}, {25}} {
		got, s := scanAll(stream, pieces)
		require.Equal(t, want, got, "pieces %v", pieces)
		require.EqualValues(t, 3, s.Calls, "pieces %v", pieces)
		require.EqualValues(t, 3, s.Other, "reply, short record, rpcvers 3; pieces %v", pieces)
	}
}

// The scanner never keeps more than a header: a record declared 2 GiB long
// is followed to its end without growing anything.
func TestCallScannerHugeRecord(t *testing.T) {
	var s gonfsd.CallScanner
	var got []gonfsd.CallID
	fn := func(id gonfsd.CallID) { got = append(got, id) }
	s.Scan(xdr.AppendFragmentHeader(nil, xdr.MaxFragmentLen, true), fn)
	s.Scan(call(1, nfs.ProgNFS, 3, 7), fn)
	chunk := make([]byte, 1<<20)
	allocs := testing.AllocsPerRun(10, func() { s.Scan(chunk, fn) })
	require.Zero(t, allocs)
	require.Equal(t, []gonfsd.CallID{{Prog: nfs.ProgNFS, Vers: 3, Proc: 7}}, got)
}

// Random streams of records, scanned in random pieces, give what the plain
// reference gives.
func TestCallScannerRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		var stream []byte
		var want []gonfsd.CallID
		for range r.IntN(8) {
			id := gonfsd.CallID{Prog: r.Uint32N(3) + nfs.ProgNFS, Vers: 3, Proc: r.Uint32N(22)}
			msg := append(call(r.Uint32(), id.Prog, id.Vers, id.Proc), make([]byte, r.IntN(100))...)
			if r.IntN(4) == 0 {
				msg = msg[:r.IntN(len(msg))] // maybe too short to be a call
			}
			if len(msg) >= 24 {
				want = append(want, id)
			}
			stream = xdr.AppendRecord(stream, msg, 1+r.IntN(40))
		}
		pieces := []int{1 + r.IntN(50), 1 + r.IntN(5)}
		got, s := scanAll(stream, pieces)
		require.Equal(t, want, got)
		require.Equal(t, uint64(len(want)), s.Calls)
		refCalls, refOther := scanReference(stream)
		require.Equal(t, refCalls, got)
		require.Equal(t, refOther, s.Other)
	}
}

func TestCallScannerNoAllocs(t *testing.T) {
	var stream []byte
	for i := range 10 {
		stream = xdr.AppendRecord(stream, call(uint32(i), nfs.ProgNFS, 3, uint32(i)), 16)
	}
	var s gonfsd.CallScanner
	n := 0
	fn := func(gonfsd.CallID) { n++ }
	require.Zero(t, testing.AllocsPerRun(100, func() { s.Scan(stream, fn) }))
	require.Equal(t, 10*101, n)
}

func BenchmarkCallScanner(b *testing.B) {
	var stream []byte
	for i := range 16 {
		stream = xdr.AppendRecord(stream, append(call(uint32(i), nfs.ProgNFS, 3, 6), make([]byte, 100)...), 0)
	}
	var s gonfsd.CallScanner
	fn := func(gonfsd.CallID) {}
	b.SetBytes(int64(len(stream)))
	b.ReportAllocs()
	for b.Loop() {
		s.Scan(stream, fn)
	}
}

// appendCallRecord appends a record holding an NFSv3 call of procedure proc,
// in fragments of fragment bytes.
func appendCallRecord(dst []byte, proc uint32, fragment int) []byte {
	return xdr.AppendRecord(dst, call(proc, nfs.ProgNFS, 3, proc), fragment)
}
