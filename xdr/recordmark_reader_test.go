package xdr

import (
	"bytes"
	"errors"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"testing"
	"testing/iotest"
)

func TestReadRecord(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	recs := randomRecords(rng, 30, 5000)
	stream := frameRandomly(rng, recs)
	readers := map[string]func() io.Reader{
		"whole":    func() io.Reader { return bytes.NewReader(stream) },
		"one byte": func() io.Reader { return iotest.OneByteReader(bytes.NewReader(stream)) },
		"half":     func() io.Reader { return iotest.HalfReader(bytes.NewReader(stream)) },
		"data err": func() io.Reader { return iotest.DataErrReader(bytes.NewReader(stream)) },
	}
	for name, mk := range readers {
		r := mk()
		var buf []byte
		for i, want := range recs {
			rec, err := ReadRecord(r, buf, 5000)
			if err != nil || !bytes.Equal(rec, want) {
				t.Fatalf("%s: record %d: %d bytes, %v; want %d bytes", name, i, len(rec), err, len(want))
			}
			buf = rec
		}
		if rec, err := ReadRecord(r, buf, 5000); err != io.EOF || len(rec) != 0 {
			t.Fatalf("%s: at end: %d bytes, %v; want io.EOF", name, len(rec), err)
		}
	}
}

func TestReadRecordReusesBuffer(t *testing.T) {
	stream := AppendRecord(nil, []byte("hello, world"), 5)
	buf := make([]byte, 3, 64)
	rec, err := ReadRecord(bytes.NewReader(stream), buf, 0)
	if err != nil || string(rec) != "hello, world" {
		t.Fatalf("%q, %v", rec, err)
	}
	if &rec[0] != &buf[0] {
		t.Fatal("the record is not in buf's backing array")
	}
}

func TestReadRecordTruncated(t *testing.T) {
	stream := AppendRecord(nil, []byte("0123456789"), 4) // 3 fragments
	for n := 1; n < len(stream); n++ {
		_, err := ReadRecord(bytes.NewReader(stream[:n]), nil, 0)
		if err != io.ErrUnexpectedEOF {
			t.Errorf("stream cut at %d/%d: %v, want io.ErrUnexpectedEOF", n, len(stream), err)
		}
	}
	if _, err := ReadRecord(bytes.NewReader(nil), nil, 0); err != io.EOF {
		t.Errorf("empty stream: %v, want io.EOF", err)
	}
	boom := errors.New("boom")
	r := io.MultiReader(bytes.NewReader(stream[:6]), iotest.ErrReader(boom))
	if _, err := ReadRecord(r, nil, 0); err != boom {
		t.Errorf("reader error: %v, want boom", err)
	}
}

func TestReadRecordTooLarge(t *testing.T) {
	t.Run("2^31-1 over the default", func(t *testing.T) {
		stream := []byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4}
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		_, err := ReadRecord(bytes.NewReader(stream), nil, 0)
		runtime.ReadMemStats(&ms1)
		if !errors.Is(err, ErrRecordTooLarge) {
			t.Fatalf("err %v, want ErrRecordTooLarge", err)
		}
		if a := ms1.TotalAlloc - ms0.TotalAlloc; a > 64<<10 {
			t.Fatalf("allocated %d bytes", a)
		}
	})
	t.Run("fragments summing over max", func(t *testing.T) {
		stream := AppendRecord(nil, make([]byte, 11), 6)
		if _, err := ReadRecord(bytes.NewReader(stream), nil, 10); !errors.Is(err, ErrRecordTooLarge) {
			t.Fatalf("err %v, want ErrRecordTooLarge", err)
		}
		if rec, err := ReadRecord(bytes.NewReader(stream), nil, 11); err != nil || len(rec) != 11 {
			t.Fatalf("at the limit: %d, %v", len(rec), err)
		}
	})
	t.Run("claim within a huge max allocates with the data", func(t *testing.T) {
		stream := append([]byte{0xff, 0xff, 0xff, 0xff}, make([]byte, 100)...)
		var ms0, ms1 runtime.MemStats
		runtime.ReadMemStats(&ms0)
		rec, err := ReadRecord(bytes.NewReader(stream), nil, math.MaxInt)
		runtime.ReadMemStats(&ms1)
		if err != io.ErrUnexpectedEOF || len(rec) != 100 {
			t.Fatalf("%d bytes, %v; want 100, io.ErrUnexpectedEOF", len(rec), err)
		}
		if a := ms1.TotalAlloc - ms0.TotalAlloc; a > 256<<10 {
			t.Fatalf("allocated %d bytes for a 2 GiB claim with 100 bytes of data", a)
		}
	})
}
