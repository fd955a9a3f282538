package xdr

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Deframer reassembles record-marked RPC messages (RFC 5531 §11) from a byte
// stream pushed into it in pieces of any size: one byte at a time, a
// fragment header split across two writes, many records in one write, and
// records made of many fragments all give the same records.
//
// It is the receiving half of a transport that presents a stream interface
// to existing ONC RPC code. go-nfs, for instance, writes each reply as one
// record through a 4096-byte bufio.Writer, so a 10 KB reply reaches
// net.Conn.Write in several calls; the transport's Write hands every byte to a
// Deframer and sends each record Next returns as one RPC message:
//
//	if _, err := d.Write(p); err != nil {
//		return 0, err // stream is broken: close the connection
//	}
//	for rec, ok := d.Next(); ok; rec, ok = d.Next() {
//		send(rec) // rec is valid until the next Write
//	}
//
// Memory is bounded by what was received, never by what a header claims: a
// fragment header is checked against MaxRecord before any byte of its
// fragment is buffered (as Linux's server does with sv_max_mesg), and the
// buffer grows with the data that actually arrives, to at most the records
// not yet returned by Next plus MaxRecord. Fragment headers are not stored.
// Buffers are kept and reused (Reset keeps them too), so once they have
// grown to the working size Write and Next allocate nothing.
//
// A Deframer is not safe for concurrent use. Its zero value is ready to use,
// with a limit of DefaultMaxRecord.
type Deframer struct {
	// MaxRecord bounds the size of a reassembled record (the sum of its
	// fragments' lengths, headers excluded). Zero or negative means
	// DefaultMaxRecord. It may be changed between Writes; it applies to
	// fragment headers that arrive afterwards.
	MaxRecord int
	// SkipOversized makes a record that exceeds MaxRecord a recoverable
	// event instead of an error: its bytes are consumed and discarded as
	// they arrive, and once its last fragment has passed, NextSkipped
	// reports the record's first bytes (an RPC message's XID), so that the
	// transport can fail that one message and keep the stream.
	SkipOversized bool

	buf      []byte // buf[head:] = complete records not yet returned, then the partial record
	head     int    // start of the first record not yet returned by Next
	ends     []int  // ends[next:] = end offsets in buf of complete records not yet returned
	next     int
	recStart int // start in buf of the record being assembled

	hdr      [4]byte // fragment header being collected
	hdrN     int     // bytes of hdr collected
	inFrag   bool    // the header is complete and fragLeft data bytes are due
	fragLeft int
	last     bool // the current fragment is the last of its record
	inRecord bool // a header of the record being assembled has been read

	skipping  bool    // the record being assembled is oversized: discard it
	skipHead  [4]byte // its first bytes
	skipHeadN int
	skipLen   int64
	skipped   []Skipped // oversized records passed, not yet taken
	nextSkip  int

	err error
}

// Skipped describes an oversized record a Deframer with SkipOversized
// discarded: its first (up to four) bytes and its total length.
type Skipped struct {
	Head  [4]byte
	HeadN int
	Len   int64
}

// NextSkipped returns the next oversized record discarded under
// SkipOversized, in stream order, or false if there is none. Like Next, it
// reports what the Writes so far completed.
func (d *Deframer) NextSkipped() (Skipped, bool) {
	if d.nextSkip == len(d.skipped) {
		if d.nextSkip > 0 {
			d.skipped, d.nextSkip = d.skipped[:0], 0
		}
		return Skipped{}, false
	}
	s := d.skipped[d.nextSkip]
	d.nextSkip++
	return s, true
}

func (d *Deframer) limit() int {
	if d.MaxRecord <= 0 {
		return DefaultMaxRecord
	}
	return d.MaxRecord
}

// Write consumes p, a piece of the record-marked stream. It never fails for
// a valid stream, whatever the split. If a fragment header makes its record
// exceed MaxRecord, Write returns the number of bytes consumed up to and
// including that header and an error wrapping ErrRecordTooLarge; the
// Deframer then stays failed (every later Write returns the same error)
// because the stream cannot be resynchronised, but records completed before
// the bad header can still be taken with Next.
//
// Write invalidates the records previously returned by Next.
func (d *Deframer) Write(p []byte) (int, error) {
	if d.err != nil {
		return 0, d.err
	}
	d.compact()
	limit := d.limit()
	n := 0
	for n < len(p) {
		if !d.inFrag {
			k := copy(d.hdr[d.hdrN:], p[n:])
			d.hdrN += k
			n += k
			if d.hdrN < len(d.hdr) {
				break // p ended inside the header
			}
			d.hdrN = 0
			v := binary.BigEndian.Uint32(d.hdr[:])
			size := int(v &^ LastFragment)
			have := len(d.buf) - d.recStart
			// RFC 5531 §11 allows fragments of up to 2^31-1 bytes and
			// records of any number of fragments; the limit is ours and is
			// enforced before anything of this fragment is stored.
			if d.skipping {
				d.inFrag, d.fragLeft, d.last = true, size, v&LastFragment != 0
				d.skipLen += int64(size)
				goto data
			}
			if size > limit-have && d.SkipOversized {
				d.skipHeadN = copy(d.skipHead[:], d.buf[d.recStart:])
				d.skipLen = int64(have) + int64(size)
				d.buf = d.buf[:d.recStart]
				d.skipping = true
				d.inFrag, d.fragLeft, d.last, d.inRecord = true, size, v&LastFragment != 0, true
				goto data
			}
			if size > limit-have {
				d.err = fmt.Errorf("%w: fragment of %d bytes after %d bytes of the record, limit %d",
					ErrRecordTooLarge, size, have, limit)
				return n, d.err
			}
			d.inFrag, d.fragLeft, d.last, d.inRecord = true, size, v&LastFragment != 0, true
		}
	data:
		if k := min(d.fragLeft, len(p)-n); k > 0 && d.skipping {
			d.skipHeadN += copy(d.skipHead[d.skipHeadN:], p[n:n+k])
			n += k
			d.fragLeft -= k
		} else if k > 0 {
			d.reserve(k, limit)
			d.buf = append(d.buf, p[n:n+k]...)
			n += k
			d.fragLeft -= k
		}
		if d.fragLeft == 0 {
			d.inFrag = false
			if d.last && d.skipping {
				d.skipped = append(d.skipped, Skipped{Head: d.skipHead, HeadN: d.skipHeadN, Len: d.skipLen})
				d.skipping, d.skipHeadN, d.inRecord = false, 0, false
			} else if d.last {
				d.ends = append(d.ends, len(d.buf))
				d.recStart = len(d.buf)
				d.inRecord = false
			}
		}
	}
	return n, nil
}

// Next returns the next complete record, in stream order, with ok true, or
// nil and false if no complete record is buffered. The record's fragments
// are concatenated without their headers. The slice aliases the Deframer's
// buffer and is valid until the next Write or Reset; its capacity is
// clipped, so appending to it never overwrites another record.
func (d *Deframer) Next() (record []byte, ok bool) {
	if d.next == len(d.ends) {
		return nil, false
	}
	end := d.ends[d.next]
	record = d.buf[d.head:end:end]
	d.next++
	d.head = end
	return record, true
}

// Buffered returns the number of record bytes held: complete records not
// yet returned by Next plus the data received so far of the record being
// assembled.
func (d *Deframer) Buffered() int { return len(d.buf) - d.head }

// Partial reports whether the stream is in the middle of a record: a
// fragment header (or part of one) has been received but not the end of the
// record's last fragment. A transport that sees the stream end while
// Partial is true has lost a message.
func (d *Deframer) Partial() bool { return d.hdrN > 0 || d.inRecord }

// Err returns the error that failed the Deframer, or nil.
func (d *Deframer) Err() error { return d.err }

// Reset discards all buffered data and any error, keeping the buffers for
// reuse, so that the Deframer can serve a new stream.
func (d *Deframer) Reset() {
	*d = Deframer{MaxRecord: d.MaxRecord, SkipOversized: d.SkipOversized, buf: d.buf[:0], ends: d.ends[:0], skipped: d.skipped[:0]}
}

// compact drops the records already returned by Next, moving what remains
// to the front of the buffer. Each byte moves at most once per record
// returned before it, so compaction costs O(1) per byte amortised.
func (d *Deframer) compact() {
	if d.head == 0 {
		return
	}
	d.buf = d.buf[:copy(d.buf, d.buf[d.head:])]
	d.ends = d.ends[:copy(d.ends, d.ends[d.next:])]
	for i := range d.ends {
		d.ends[i] -= d.head
	}
	d.recStart -= d.head
	d.head, d.next = 0, 0
}

// reserve makes room for k more bytes. It grows geometrically, for
// amortised O(1) appends, but never beyond the complete records held plus
// the record limit: Write has checked that the current record, data still
// due included, fits in limit.
func (d *Deframer) reserve(k, limit int) {
	need := len(d.buf) + k
	if need <= cap(d.buf) {
		return
	}
	upper := d.recStart + limit
	if limit > math.MaxInt-d.recStart {
		upper = math.MaxInt
	}
	c := min(max(2*cap(d.buf), need, 512), upper)
	nb := make([]byte, len(d.buf), c)
	copy(nb, d.buf)
	d.buf = nb
}
