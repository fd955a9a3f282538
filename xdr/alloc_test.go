package xdr

import (
	"bytes"
	"io"
	"testing"
)

// assertNoAllocs fails unless f allocates nothing (averaged over runs,
// after a warm-up call, as testing.AllocsPerRun does).
func assertNoAllocs(t *testing.T, name string, f func()) {
	t.Helper()
	if n := testing.AllocsPerRun(100, f); n != 0 {
		t.Errorf("%s: %v allocations per run, want 0", name, n)
	}
}

func TestZeroAllocs(t *testing.T) {
	buf := make([]byte, 0, 4096)
	callMsg := unhex(t, callVectors[1].hex)
	replyMsg := unhex(t, replyVectors[3].hex)
	call := callVectors[1].hdr
	reply := replyVectors[3].hdr
	var sys AuthSys
	var credBuf [MaxAuthBytes]byte
	sysBody := unhex(t, authSysBodyHex)
	var sink int

	assertNoAllocs(t, "Append*", func() {
		b := AppendUint32(buf[:0], 1)
		b = AppendUint64(b, 2)
		b = AppendBool(b, true)
		b = AppendOpaque(b, callMsg[:5])
		b = AppendString(b, "abc")
		sink += len(b)
	})
	assertNoAllocs(t, "Reader", func() {
		r := NewReader(callMsg)
		_, _ = r.Uint32()
		_, _ = r.Uint64()
		_, _ = r.Opaque(8)
		_, _ = r.Opaque(-1) // error path
		_, _ = r.Bool()     // error path
		sink += r.Offset()
	})
	assertNoAllocs(t, "CallHeader.Unmarshal", func() {
		var h CallHeader
		off, _ := h.Unmarshal(callMsg)
		sink += off
	})
	assertNoAllocs(t, "CallHeader.Unmarshal errors", func() {
		var h CallHeader
		_, err1 := h.Unmarshal(callMsg[:50])
		_, err2 := h.Unmarshal(replyMsg)
		if err1 == nil || err2 == nil {
			panic("no error")
		}
	})
	assertNoAllocs(t, "CallHeader.Append", func() { sink += len(call.Append(buf[:0])) })
	assertNoAllocs(t, "ReplyHeader.Unmarshal", func() {
		var h ReplyHeader
		off, _ := h.Unmarshal(replyMsg)
		sink += off
	})
	assertNoAllocs(t, "ReplyHeader.Unmarshal errors", func() {
		var h ReplyHeader
		_, err1 := h.Unmarshal(replyMsg[:20])
		_, err2 := h.Unmarshal(callMsg)
		if err1 == nil || err2 == nil {
			panic("no error")
		}
	})
	assertNoAllocs(t, "ReplyHeader.Append", func() { sink += len(reply.Append(buf[:0])) })
	assertNoAllocs(t, "PeekXID", func() {
		xid, _, _ := PeekXID(callMsg)
		sink += int(xid)
	})
	assertNoAllocs(t, "AuthSys.Unmarshal", func() {
		if err := sys.Unmarshal(sysBody); err != nil {
			panic(err)
		}
	})
	assertNoAllocs(t, "AuthSys.OpaqueAuth", func() {
		a := sys.OpaqueAuth(credBuf[:0])
		sink += len(a.Body)
	})
	assertNoAllocs(t, "AppendRecord", func() { sink += len(AppendRecord(buf[:0], callMsg, 16)) })
	if sink == 0 {
		t.Fatal("nothing ran")
	}
}

// TestDeframerSteadyStateAllocs: once its buffers have grown, a Deframer
// allocates nothing, whatever the split.
func TestDeframerSteadyStateAllocs(t *testing.T) {
	var stream []byte
	for _, v := range callVectors {
		stream = AppendRecord(stream, unhex(t, v.hex), 24)
	}
	for _, split := range []int{1, 3, 7, 100, len(stream)} {
		var d Deframer
		n := 0
		run := func() {
			for off := 0; off < len(stream); off += split {
				if _, err := d.Write(stream[off:min(off+split, len(stream))]); err != nil {
					panic(err)
				}
				for rec, ok := d.Next(); ok; rec, ok = d.Next() {
					n += len(rec)
				}
			}
		}
		run() // grow the buffers
		assertNoAllocs(t, "Deframer", run)
		if n == 0 {
			t.Fatal("no records")
		}
	}
}

func TestReadRecordAndRecordWriterSteadyStateAllocs(t *testing.T) {
	stream := AppendRecord(nil, bytes.Repeat([]byte{1}, 3000), 1000)
	r := bytes.NewReader(stream)
	buf := make([]byte, 0, 4096)
	assertNoAllocs(t, "ReadRecord", func() {
		r.Reset(stream)
		rec, err := ReadRecord(r, buf, 0)
		if err != nil || len(rec) != 3000 {
			panic(err)
		}
	})
	w := &RecordWriter{W: io.Discard, MaxFragment: 1000}
	msg := bytes.Repeat([]byte{2}, 3000)
	assertNoAllocs(t, "RecordWriter", func() {
		if _, err := w.Write(msg); err != nil {
			panic(err)
		}
	})
}
