package xdr

import (
	"bufio"
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
)

// frameRandomly frames each record with random fragment sizes, including
// empty non-last fragments, as a reference stream.
func frameRandomly(rng *rand.Rand, records [][]byte) []byte {
	var out []byte
	for _, rec := range records {
		for {
			if rng.IntN(8) == 0 {
				out = AppendFragmentHeader(out, 0, false)
			}
			n := len(rec)
			if n > 0 && rng.IntN(2) == 0 {
				n = 1 + rng.IntN(n)
			}
			out = AppendFragmentHeader(out, n, n == len(rec))
			out = append(out, rec[:n]...)
			rec = rec[n:]
			if len(rec) == 0 { // that fragment was flagged last
				break
			}
		}
	}
	return out
}

func randomRecords(rng *rand.Rand, count, maxLen int) [][]byte {
	recs := make([][]byte, count)
	for i := range recs {
		recs[i] = make([]byte, rng.IntN(maxLen+1))
		for j := range recs[i] {
			recs[i][j] = byte(rng.Uint32())
		}
	}
	return recs
}

// feed writes stream to d in pieces of the given sizes (the last piece takes
// the rest) and collects the records, copying each as Next returns it.
func feed(t *testing.T, d *Deframer, stream []byte, sizes []int) [][]byte {
	t.Helper()
	var got [][]byte
	for len(stream) > 0 {
		n := len(stream)
		if len(sizes) > 0 {
			n, sizes = min(sizes[0], n), sizes[1:]
		}
		w, err := d.Write(stream[:n])
		if err != nil || w != n {
			t.Fatalf("Write(%d bytes) = %d, %v", n, w, err)
		}
		stream = stream[n:]
		for rec, ok := d.Next(); ok; rec, ok = d.Next() {
			got = append(got, bytes.Clone(rec))
		}
	}
	return got
}

func sameRecords(t *testing.T, got, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i], want[i]) {
			t.Fatalf("record %d: got %d bytes %.16x..., want %d bytes %.16x...", i, len(got[i]), got[i], len(want[i]), want[i])
		}
	}
}

func repeat(n, v int) []int {
	s := make([]int, n)
	for i := range s {
		s[i] = v
	}
	return s
}

func TestDeframerSplits(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	records := [][]byte{[]byte("first"), {}, bytes.Repeat([]byte{0xab}, 1000), []byte("x")}
	stream := frameRandomly(rng, records)
	multi := AppendRecord(nil, bytes.Repeat([]byte{7}, 50), 7) // 8 fragments

	t.Run("one write", func(t *testing.T) {
		var d Deframer
		sameRecords(t, feed(t, &d, stream, nil), records)
	})
	t.Run("one-byte writes", func(t *testing.T) {
		var d Deframer
		sameRecords(t, feed(t, &d, stream, repeat(len(stream), 1)), records)
		if d.Partial() || d.Buffered() != 0 {
			t.Fatalf("after the stream: Partial %v Buffered %d", d.Partial(), d.Buffered())
		}
	})
	t.Run("header split at every point", func(t *testing.T) {
		rec := []byte("split header")
		s := AppendRecord(nil, rec, 0)
		for cut := 1; cut < 4; cut++ {
			var d Deframer
			if n, err := d.Write(s[:cut]); n != cut || err != nil {
				t.Fatalf("cut %d: %d, %v", cut, n, err)
			}
			if _, ok := d.Next(); ok || !d.Partial() {
				t.Fatalf("cut %d: record before the header was complete (Partial %v)", cut, d.Partial())
			}
			sameRecords(t, feed(t, &d, s[cut:], nil), [][]byte{rec})
		}
	})
	t.Run("header of the second fragment split", func(t *testing.T) {
		var d Deframer
		// "ab" in fragments of 1: 00000001 61 80000001 62; cut inside 2nd header.
		sameRecords(t, feed(t, &d, AppendRecord(nil, []byte("ab"), 1), []int{7, 3}), [][]byte{[]byte("ab")})
	})
	t.Run("many records in one write", func(t *testing.T) {
		recs := randomRecords(rng, 200, 40)
		var s []byte
		for _, r := range recs {
			s = AppendRecord(s, r, 0)
		}
		var d Deframer
		sameRecords(t, feed(t, &d, s, nil), recs)
	})
	t.Run("multi-fragment", func(t *testing.T) {
		var d Deframer
		sameRecords(t, feed(t, &d, multi, nil), [][]byte{bytes.Repeat([]byte{7}, 50)})
	})
	t.Run("empty writes", func(t *testing.T) {
		var d Deframer
		if n, err := d.Write(nil); n != 0 || err != nil {
			t.Fatalf("Write(nil) = %d, %v", n, err)
		}
		if _, ok := d.Next(); ok || d.Partial() {
			t.Fatal("record or partial state from nothing")
		}
	})
}

// TestDeframerRandom is the property test: random records, random
// fragmentation, random write sizes; the deframer returns exactly the
// records, and its buffer never exceeds what the pending records and the
// limit allow.
func TestDeframerRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for iter := 0; iter < 300; iter++ {
		maxLen := 1 + rng.IntN(3000)
		recs := randomRecords(rng, 1+rng.IntN(20), maxLen)
		stream := frameRandomly(rng, recs)
		d := Deframer{MaxRecord: maxLen}
		var got [][]byte
		peak := 0
		for off := 0; off < len(stream); {
			n := min(len(stream)-off, 1+rng.IntN(600))
			if rng.IntN(4) == 0 {
				n = min(len(stream)-off, 1+rng.IntN(5))
			}
			if w, err := d.Write(stream[off : off+n]); w != n || err != nil {
				t.Fatalf("iter %d: Write = %d, %v", iter, w, err)
			}
			off += n
			// The buffer only grows while the complete records it holds
			// plus one record of the limit need the room.
			peak = max(peak, d.recStart+maxLen, 512)
			if c := cap(d.buf); c > peak {
				t.Fatalf("iter %d: buffer cap %d > %d (complete records held + limit)", iter, c, peak)
			}
			// Take the records only sometimes, so that several pile up.
			if rng.IntN(3) != 0 {
				for rec, ok := d.Next(); ok; rec, ok = d.Next() {
					got = append(got, bytes.Clone(rec))
				}
			}
		}
		for rec, ok := d.Next(); ok; rec, ok = d.Next() {
			got = append(got, bytes.Clone(rec))
		}
		sameRecords(t, got, recs)
		if d.Partial() {
			t.Fatalf("iter %d: Partial after a whole stream", iter)
		}
	}
}

func TestDeframerRecordsStayValidUntilWrite(t *testing.T) {
	var s []byte
	for _, m := range []string{"aaaa", "bbbbbbbb", "cc"} {
		s = AppendRecord(s, []byte(m), 3)
	}
	s = append(s, AppendRecord(nil, []byte("dddd"), 0)[:6]...) // partial record
	var d Deframer
	if _, err := d.Write(s); err != nil {
		t.Fatal(err)
	}
	a, _ := d.Next()
	b, _ := d.Next()
	c, _ := d.Next()
	if _, ok := d.Next(); ok {
		t.Fatal("partial record returned")
	}
	if string(a) != "aaaa" || string(b) != "bbbbbbbb" || string(c) != "cc" {
		t.Fatalf("records %q %q %q", a, b, c)
	}
	if cap(a) != len(a) || cap(b) != len(b) {
		t.Fatal("record capacity not clipped")
	}
	_ = append(a, 'X') // must not overwrite b
	if string(b) != "bbbbbbbb" {
		t.Fatal("appending to a record overwrote the next one")
	}
	if !d.Partial() || d.Buffered() != 2 {
		t.Fatalf("Partial %v Buffered %d, want true 2", d.Partial(), d.Buffered())
	}
}

func TestDeframerTooLarge(t *testing.T) {
	t.Run("header claiming 2^31-1", func(t *testing.T) {
		var d Deframer // DefaultMaxRecord
		good := AppendRecord(nil, []byte("ok"), 0)
		stream := append(good, 0xff, 0xff, 0xff, 0xff, 1, 2, 3)
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		n, err := d.Write(stream)
		runtime.ReadMemStats(&ms1)
		if !errors.Is(err, ErrRecordTooLarge) || n != len(good)+4 {
			t.Fatalf("Write = %d, %v; want %d, ErrRecordTooLarge", n, err, len(good)+4)
		}
		if alloc := ms1.TotalAlloc - ms0.TotalAlloc; alloc > 64<<10 {
			t.Fatalf("Write allocated %d bytes for a hostile header", alloc)
		}
		if cap(d.buf) > 512 {
			t.Fatalf("buffer grew to %d", cap(d.buf))
		}
		// The record before the bad header is still there; the error sticks.
		if rec, ok := d.Next(); !ok || string(rec) != "ok" {
			t.Fatalf("record before the error: %q %v", rec, ok)
		}
		if n, err2 := d.Write([]byte{0x80, 0, 0, 0}); n != 0 || err2 != err || d.Err() != err {
			t.Fatalf("Write after failure = %d, %v", n, err2)
		}
		d.Reset()
		if d.Err() != nil {
			t.Fatal("Reset kept the error")
		}
		sameRecords(t, feed(t, &d, good, nil), [][]byte{[]byte("ok")})
	})
	t.Run("fragments summing over the limit", func(t *testing.T) {
		d := Deframer{MaxRecord: 10}
		s := AppendFragmentHeader(nil, 6, false)
		s = append(s, "123456"...)
		s = AppendFragmentHeader(s, 5, true) // 11 > 10
		n, err := d.Write(s)
		if !errors.Is(err, ErrRecordTooLarge) || n != len(s) {
			t.Fatalf("Write = %d, %v", n, err)
		}
	})
	t.Run("exactly the limit", func(t *testing.T) {
		d := Deframer{MaxRecord: 10}
		s := AppendRecord(nil, []byte("0123456789"), 3)
		sameRecords(t, feed(t, &d, s, repeat(len(s), 2)), [][]byte{[]byte("0123456789")})
	})
	t.Run("claim within a huge limit grows with the data only", func(t *testing.T) {
		d := Deframer{MaxRecord: math.MaxInt}
		s := AppendFragmentHeader(nil, MaxFragmentLen, true)
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		for i := 0; i < 100; i++ {
			s = append(s, byte(i))
			if _, err := d.Write(s); err != nil {
				t.Fatal(err)
			}
			s = s[:0]
		}
		runtime.ReadMemStats(&ms1)
		if cap(d.buf) > 512 || ms1.TotalAlloc-ms0.TotalAlloc > 64<<10 {
			t.Fatalf("cap %d, allocated %d bytes for 100 bytes of data", cap(d.buf), ms1.TotalAlloc-ms0.TotalAlloc)
		}
		if d.Buffered() != 100 || !d.Partial() {
			t.Fatalf("Buffered %d Partial %v", d.Buffered(), d.Partial())
		}
	})
}

// writerFunc adapts a function to io.Writer.
type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// TestDeframerGoNFSReplyPath reproduces how go-nfs writes a reply: one
// record, single fragment, through a 4096-byte bufio.Writer, so a 10 KB
// reply reaches the connection's Write in several calls.
func TestDeframerGoNFSReplyPath(t *testing.T) {
	var d Deframer
	var got [][]byte
	writes := 0
	conn := writerFunc(func(p []byte) (int, error) {
		writes++
		n, err := d.Write(p)
		for rec, ok := d.Next(); ok; rec, ok = d.Next() {
			got = append(got, bytes.Clone(rec))
		}
		return n, err
	})
	bw := bufio.NewWriterSize(conn, 4096)
	replies := [][]byte{bytes.Repeat([]byte{1}, 10<<10), bytes.Repeat([]byte{2}, 100)}
	for _, r := range replies {
		var hdr [4]byte
		h := AppendFragmentHeader(hdr[:0], len(r), true)
		bw.Write(h)
		bw.Write(r)
		if err := bw.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	if writes < 3 {
		t.Fatalf("only %d writes: the test does not split records", writes)
	}
	sameRecords(t, got, replies)
}

// TestDeframerPartialAfterEmptyFragment: an empty non-last fragment starts
// a record even though it carries no data (found by FuzzDeframer).
func TestDeframerPartialAfterEmptyFragment(t *testing.T) {
	var d Deframer
	if _, err := d.Write(AppendFragmentHeader(nil, 0, false)); err != nil {
		t.Fatal(err)
	}
	if !d.Partial() || d.Buffered() != 0 {
		t.Fatalf("Partial %v Buffered %d, want true 0", d.Partial(), d.Buffered())
	}
	if _, err := d.Write(AppendFragmentHeader(nil, 0, true)); err != nil {
		t.Fatal(err)
	}
	if rec, ok := d.Next(); !ok || len(rec) != 0 || d.Partial() {
		t.Fatalf("empty record: %x %v, Partial %v", rec, ok, d.Partial())
	}
}
