package xdr

import (
	"errors"
	"io"
)

// Record marking (RFC 5531 §11). On a byte-stream transport each RPC
// message is one record, sent as one or more fragments. A fragment is a
// four-byte big-endian header followed by 0 to 2^31-1 bytes of data; the
// header's highest bit is set on the last fragment of a record and its 31
// low bits give the fragment's length.
const (
	// LastFragment is the last-fragment bit of a fragment header.
	LastFragment uint32 = 1 << 31
	// MaxFragmentLen is the largest fragment length a header can express.
	MaxFragmentLen = 1<<31 - 1
	// DefaultMaxRecord is the record size limit used when a Deframer's
	// MaxRecord or ReadRecord's max is zero: a 1 MiB NFS READ or WRITE
	// payload plus one 4 KiB page for the RPC and NFS headers. It is the
	// bound Linux's server applies to TCP records by default (sv_max_mesg =
	// max payload + PAGE_SIZE, with a 1 MiB max payload).
	DefaultMaxRecord = 1<<20 + 4096
)

// ErrRecordTooLarge means a fragment header announced a record larger than
// the configured maximum. The stream cannot be resynchronised after it: the
// connection must be closed.
var ErrRecordTooLarge = errors.New("xdr: record marking: record exceeds maximum size")

// AppendFragmentHeader appends a record-marking fragment header (RFC 5531
// §11) for a fragment of n bytes, with the last-fragment bit if last is
// true. It panics if n is outside [0, MaxFragmentLen], which is a
// programming error.
func AppendFragmentHeader(b []byte, n int, last bool) []byte {
	if n < 0 || n > MaxFragmentLen {
		panic("xdr: fragment length out of range")
	}
	v := uint32(n)
	if last {
		v |= LastFragment
	}
	return AppendUint32(b, v)
}

// AppendRecord appends msg as one record-marked record (RFC 5531 §11):
// fragments of at most maxFragment bytes, the last one flagged. A
// maxFragment that is not positive or exceeds MaxFragmentLen means
// MaxFragmentLen, so that any message up to 2 GiB goes as a single
// fragment, the only form some peers accept (go-nfs rejects non-final
// fragments). An empty msg is one empty last fragment.
func AppendRecord(dst, msg []byte, maxFragment int) []byte {
	if maxFragment <= 0 || maxFragment > MaxFragmentLen {
		maxFragment = MaxFragmentLen
	}
	for {
		n := min(len(msg), maxFragment)
		dst = AppendFragmentHeader(dst, n, n == len(msg))
		dst = append(dst, msg[:n]...)
		msg = msg[n:]
		if len(msg) == 0 {
			return dst
		}
	}
}

// RecordLen returns the number of bytes AppendRecord appends for a message
// of n bytes: n plus four bytes per fragment.
func RecordLen(n, maxFragment int) int {
	if maxFragment <= 0 || maxFragment > MaxFragmentLen {
		maxFragment = MaxFragmentLen
	}
	frags := n / maxFragment // without n+maxFragment-1, which overflows a 32-bit int
	if n%maxFragment != 0 || n == 0 {
		frags++
	}
	return n + 4*frags
}

// RecordWriter frames each Write as one complete record (RFC 5531 §11)
// and writes it to W with a single W.Write call, so that one message makes
// one write on the underlying stream. It keeps the framed bytes in a buffer
// that is reused: after the first write of the largest message, Write
// allocates nothing. A RecordWriter is not safe for concurrent use.
type RecordWriter struct {
	W io.Writer
	// MaxFragment bounds each fragment's length; zero means MaxFragmentLen.
	MaxFragment int

	buf []byte
}

// Write writes p as one record. It returns len(p) on success; if W fails
// part way it returns how many bytes of p W accepted (fragment headers are
// not counted) with W's error, or io.ErrShortWrite if W returned none.
func (w *RecordWriter) Write(p []byte) (int, error) {
	w.buf = AppendRecord(w.buf[:0], p, w.MaxFragment)
	n, err := w.W.Write(w.buf)
	if err == nil && n < len(w.buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return payloadWritten(n, len(p), w.MaxFragment), err
	}
	return len(p), nil
}

// payloadWritten maps n bytes of a framed record of a size-byte message back
// to the number of message bytes among them.
func payloadWritten(n, size, maxFragment int) int {
	if maxFragment <= 0 || maxFragment > MaxFragmentLen {
		maxFragment = MaxFragmentLen
	}
	done := 0
	for n > 0 {
		n -= 4 // header
		frag := min(size-done, maxFragment)
		if n <= 0 {
			break
		}
		k := min(n, frag)
		done += k
		n -= k
		if done == size {
			break
		}
	}
	return done
}
