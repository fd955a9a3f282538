package xdr

import (
	"bytes"
	"testing"
)

func BenchmarkCallHeaderUnmarshal(b *testing.B) {
	msg := unhex(b, callVectors[1].hex) // AUTH_SYS call
	var h CallHeader
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if _, err := h.Unmarshal(msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkCallHeaderAppend(b *testing.B) {
	h := callVectors[1].hdr
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = h.Append(buf[:0])
	}
}

func BenchmarkReplyHeaderUnmarshal(b *testing.B) {
	msg := unhex(b, replyVectors[0].hex)
	var h ReplyHeader
	b.ReportAllocs()
	for b.Loop() {
		if _, err := h.Unmarshal(msg); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReplyHeaderAppend(b *testing.B) {
	h := replyVectors[0].hdr
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = h.Append(buf[:0])
	}
}

func BenchmarkAuthSysUnmarshal(b *testing.B) {
	body := (&AuthSys{MachineName: []byte("client.example.com"), GIDs: make([]uint32, 16)}).Append(nil)
	var a AuthSys
	b.ReportAllocs()
	for b.Loop() {
		if err := a.Unmarshal(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDeframer measures throughput on a stream of 8 KiB records, each
// in two fragments, written in 4096-byte pieces (go-nfs's bufio.Writer
// size).
func BenchmarkDeframer(b *testing.B) {
	var stream []byte
	for i := 0; i < 16; i++ {
		stream = AppendRecord(stream, bytes.Repeat([]byte{byte(i)}, 8192), 4096)
	}
	var d Deframer
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		for off := 0; off < len(stream); off += 4096 {
			if _, err := d.Write(stream[off:min(off+4096, len(stream))]); err != nil {
				b.Fatal(err)
			}
			for _, ok := d.Next(); ok; _, ok = d.Next() {
			}
		}
	}
}

// BenchmarkDeframerSmallRecords: many small records (NFS GETATTR-sized
// calls) in one write.
func BenchmarkDeframerSmallRecords(b *testing.B) {
	msg := unhex(b, callVectors[1].hex)
	var stream []byte
	for i := 0; i < 64; i++ {
		stream = AppendRecord(stream, msg, 0)
	}
	var d Deframer
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		if _, err := d.Write(stream); err != nil {
			b.Fatal(err)
		}
		for _, ok := d.Next(); ok; _, ok = d.Next() {
		}
	}
}

func BenchmarkReadRecord(b *testing.B) {
	stream := AppendRecord(nil, bytes.Repeat([]byte{1}, 8192), 4096)
	r := bytes.NewReader(stream)
	buf := make([]byte, 0, 8192+4)
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		r.Reset(stream)
		if _, err := ReadRecord(r, buf, 0); err != nil {
			b.Fatal(err)
		}
	}
}
