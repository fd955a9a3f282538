package xdr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"testing"
)

// overMaxFragment is MaxFragmentLen+1, computed at run time so that the
// tests build where int is 32 bits (there it wraps to a negative value,
// which is just as invalid).
var overMaxFragment = func() int { n := MaxFragmentLen; n++; return n }()

func TestAppendFragmentHeader(t *testing.T) {
	tests := []struct {
		n    int
		last bool
		want string
	}{
		{0, false, "00000000"},
		{0, true, "80000000"},
		{1, true, "80000001"},
		{0x1234, false, "00001234"},
		{MaxFragmentLen, false, "7fffffff"},
		{MaxFragmentLen, true, "ffffffff"},
	}
	for _, tt := range tests {
		if got := AppendFragmentHeader(nil, tt.n, tt.last); !bytes.Equal(got, unhex(t, tt.want)) {
			t.Errorf("(%d, %v) = %x, want %s", tt.n, tt.last, got, tt.want)
		}
	}
	for _, n := range []int{-1, overMaxFragment} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("AppendFragmentHeader(%d) did not panic", n)
				}
			}()
			AppendFragmentHeader(nil, n, true)
		}()
	}
}

func TestAppendRecord(t *testing.T) {
	msg := []byte("0123456789") // 10 bytes
	tests := []struct {
		max  int
		want string
	}{
		{0, "8000000a 30313233343536373839"},
		{-5, "8000000a 30313233343536373839"},
		{10, "8000000a 30313233343536373839"},
		{100, "8000000a 30313233343536373839"},
		{overMaxFragment, "8000000a 30313233343536373839"},
		{4, "00000004 30313233 00000004 34353637 80000002 3839"},
		{5, "00000005 3031323334 80000005 3536373839"},
		{1, "00000001 30 00000001 31 00000001 32 00000001 33 00000001 34 " +
			"00000001 35 00000001 36 00000001 37 00000001 38 80000001 39"},
	}
	for _, tt := range tests {
		got := AppendRecord([]byte{0xee}, msg, tt.max)
		want := append([]byte{0xee}, unhex(t, tt.want)...)
		if !bytes.Equal(got, want) {
			t.Errorf("max %d: %x, want %x", tt.max, got, want)
		}
		if RecordLen(len(msg), tt.max) != len(want)-1 {
			t.Errorf("max %d: RecordLen %d, want %d", tt.max, RecordLen(len(msg), tt.max), len(want)-1)
		}
	}
	if got := AppendRecord(nil, nil, 4); !bytes.Equal(got, unhex(t, "80000000")) {
		t.Errorf("empty record = %x", got)
	}
	for n := 0; n < 20; n++ {
		for mf := 0; mf < 8; mf++ {
			if got, want := RecordLen(n, mf), len(AppendRecord(nil, make([]byte, n), mf)); got != want {
				t.Errorf("RecordLen(%d, %d) = %d, want %d", n, mf, got, want)
			}
		}
	}
}

// failWriter accepts limit bytes, then fails.
type failWriter struct {
	buf   bytes.Buffer
	limit int
	err   error
}

func (w *failWriter) Write(p []byte) (int, error) {
	if w.buf.Len()+len(p) <= w.limit {
		return w.buf.Write(p)
	}
	n := w.limit - w.buf.Len()
	w.buf.Write(p[:n])
	return n, w.err
}

func TestRecordWriter(t *testing.T) {
	var out bytes.Buffer
	w := &RecordWriter{W: &out, MaxFragment: 4}
	for _, m := range []string{"hello", "", "abcd"} {
		if n, err := w.Write([]byte(m)); n != len(m) || err != nil {
			t.Fatalf("Write(%q) = %d, %v", m, n, err)
		}
	}
	want := unhex(t, "00000004 68656c6c 80000001 6f  80000000  80000004 61626364")
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("stream %x, want %x", out.Bytes(), want)
	}
	// Read it back.
	r := bytes.NewReader(out.Bytes())
	for _, m := range []string{"hello", "", "abcd"} {
		rec, err := ReadRecord(r, nil, 0)
		if err != nil || string(rec) != m {
			t.Fatalf("ReadRecord = %q, %v, want %q", rec, err, m)
		}
	}
}

func TestRecordWriterErrors(t *testing.T) {
	boom := errors.New("boom")
	// "hello" with 4-byte fragments is 00000004 68656c6c 80000001 6f: 13
	// bytes. Payload bytes accepted for each write limit:
	wantPayload := []int{0, 0, 0, 0, 0, 1, 2, 3, 4, 4, 4, 4, 4}
	for limit, want := range wantPayload {
		fw := &failWriter{limit: limit, err: boom}
		w := &RecordWriter{W: fw, MaxFragment: 4}
		n, err := w.Write([]byte("hello"))
		if !errors.Is(err, boom) || n != want {
			t.Errorf("limit %d: n %d err %v, want %d boom", limit, n, err, want)
		}
	}
	// A writer that reports a short write without an error.
	w := &RecordWriter{W: shortWriter{}}
	if _, err := w.Write([]byte("hello")); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("short write: %v", err)
	}
}

type shortWriter struct{}

func (shortWriter) Write(p []byte) (int, error) { return len(p) / 2, nil }

func TestPayloadWritten(t *testing.T) {
	// Exhaustive over small sizes: payloadWritten(n) equals the count of
	// payload bytes among the first n bytes of the framed record.
	for size := 0; size < 12; size++ {
		for mf := 1; mf < 6; mf++ {
			framed := AppendRecord(nil, bytes.Repeat([]byte{'x'}, size), mf)
			isPayload := make([]bool, len(framed))
			for i := 0; i < len(framed); {
				v := int(binary.BigEndian.Uint32(framed[i:]) &^ LastFragment)
				i += 4
				for j := 0; j < v; j++ {
					isPayload[i+j] = true
				}
				i += v
			}
			count := 0
			for n := 0; n <= len(framed); n++ {
				if got := payloadWritten(n, size, mf); got != count {
					t.Fatalf("size %d mf %d n %d: %d, want %d", size, mf, n, got, count)
				}
				if n < len(framed) && isPayload[n] {
					count++
				}
			}
		}
	}
}
