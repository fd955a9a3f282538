package transport

import (
	"bytes"
	"encoding/binary"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// testCallBufs is a CallBuffers that records what it lent and got back.
type testCallBufs struct {
	mu       sync.Mutex
	free     [][]byte
	lent     map[*byte]bool
	gets     int
	puts     [][]byte
	tooSmall bool // GetCallBuffer returns buffers one byte short
}

func (p *testCallBufs) GetCallBuffer(n int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gets++
	if p.tooSmall {
		return make([]byte, 0, n-1)
	}
	var b []byte
	for i, f := range p.free {
		if cap(f) >= n {
			b = f
			p.free = append(p.free[:i], p.free[i+1:]...)
			break
		}
	}
	if b == nil {
		b = make([]byte, 0, 128<<10)
	}
	for i := range b[:cap(b)] {
		b[:cap(b)][i] = 0xee // scribbled: the call must overwrite every byte it uses
	}
	if p.lent == nil {
		p.lent = map[*byte]bool{}
	}
	p.lent[unsafe.SliceData(b[:cap(b)])] = true
	return b
}

func (p *testCallBufs) PutCallBuffer(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.puts = append(p.puts, b)
	p.free = append(p.free, b[:0])
}

// isLent reports whether msg is in a buffer GetCallBuffer returned.
func (p *testCallBufs) isLent(msg []byte) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.lent[unsafe.SliceData(msg[:cap(msg)])]
}

// giveBack returns a buffer a ReadMsgAlloc handed over, as a server would.
func (p *testCallBufs) giveBack(b []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free = append(p.free, b[:0])
}

func (p *testCallBufs) counts() (gets, puts int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gets, len(p.puts)
}

// TestCallBuffers: a call whose Read chunk is at least DirectPlacementMin
// is pulled into a buffer of Config.CallBuffers, laid out whole (data at
// its XDR position, head and tail copied around it, the pad zeroed), and
// ReadMsgAlloc hands that buffer over without calling its get; a buffer
// comes back registered once; smaller calls, and calls read by ReadMsg,
// go the usual way (ReadMsg's copy gives the buffer back).
func TestCallBuffers(t *testing.T) {
	b := testBinding{ddp: true}
	pool := &testCallBufs{}
	cl, srv := netconvPair(t, &Config{Binding: b, CallBuffers: pool}, &Config{Binding: b})
	deadline := time.Now().Add(20 * time.Second)
	_ = cl.SetDeadline(deadline)
	_ = srv.SetDeadline(deadline)

	getCalled := false
	alloc := func(n int) []byte { getCalled = true; return make([]byte, 0, n) }
	exchange := func(t *testing.T, msg []byte, read func() ([]byte, error)) []byte {
		t.Helper()
		getCalled = false
		if err := cl.WriteMsg(msg); err != nil {
			t.Fatal(err)
		}
		got, err := read()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, msg) {
			t.Fatalf("call %d of %d bytes read as %d bytes that differ", binary.BigEndian.Uint32(msg), len(msg), len(got))
		}
		if err := srv.WriteMsg(appendReply(nil, binary.BigEndian.Uint32(msg))); err != nil {
			t.Fatal(err)
		}
		if _, err := cl.ReadMsg(nil); err != nil {
			t.Fatal(err)
		}
		return got
	}
	readAlloc := func() ([]byte, error) { return srv.ReadMsgAlloc(alloc) }

	for i, tc := range []struct {
		name string
		msg  []byte
	}{
		{"DDP Read chunk", writeCall(1, 64<<10)},
		{"DDP Read chunk with a pad", writeCall(2, 64<<10+3)},
		{"Long Call", append(appendCall(nil, 3, 0), pattern(40<<10, 3)...)},
		{"DDP Read chunk again", writeCall(4, 48<<10)},
	} {
		got := exchange(t, tc.msg, readAlloc)
		if !pool.isLent(got) || getCalled {
			t.Fatalf("%s: read into the pool's buffer %v, get called %v", tc.name, pool.isLent(got), getCalled)
		}
		pool.giveBack(got)
		if gets, puts := pool.counts(); gets != i+1 || puts != 0 {
			t.Fatalf("%s: %d buffers taken, %d given back; want %d, 0", tc.name, gets, puts, i+1)
		}
	}
	st := srv.Stats()
	if st.ReadChunksInPlace != 4 || st.DirectRegistrations != 1 {
		t.Fatalf("ReadChunksInPlace %d, DirectRegistrations %d; want 4 calls pulled into one registered buffer",
			st.ReadChunksInPlace, st.DirectRegistrations)
	}

	// Below DirectPlacementMin: the connection's memory and get's buffer.
	got := exchange(t, writeCall(5, 8<<10), readAlloc)
	if pool.isLent(got) || !getCalled {
		t.Fatalf("8 KiB call: read into the pool's buffer %v, get called %v", pool.isLent(got), getCalled)
	}
	// ReadMsg copies into the reader's buffer and gives the pool's back.
	got = exchange(t, writeCall(6, 64<<10), func() ([]byte, error) { return srv.ReadMsg(make([]byte, 0, 70<<10)) })
	if pool.isLent(got) {
		t.Fatal("ReadMsg returned the pool's buffer")
	}
	if gets, puts := pool.counts(); gets != 5 || puts != 1 {
		t.Fatalf("after ReadMsg: %d buffers taken, %d given back; want 5, 1", gets, puts)
	}
	// Read's stream too.
	msg := writeCall(7, 33<<10)
	if err := cl.WriteMsg(msg); err != nil {
		t.Fatal(err)
	}
	stream := make([]byte, 4+len(msg))
	for n := 0; n < len(stream); {
		k, err := srv.Read(stream[n:min(n+1000, len(stream))])
		if err != nil {
			t.Fatal(err)
		}
		n += k
	}
	if !bytes.Equal(stream[4:], msg) {
		t.Fatal("Read's stream differs from the call sent")
	}
	if gets, puts := pool.counts(); gets != 6 || puts != 2 {
		t.Fatalf("after Read: %d buffers taken, %d given back; want 6, 2", gets, puts)
	}
}

// TestCallBuffersFallBack: a CallBuffers that returns a buffer too small,
// or a connection that never registers callers' memory
// (DirectPlacementMin negative), pulls into the connection's memory as
// without one.
func TestCallBuffersFallBack(t *testing.T) {
	for _, tc := range []struct {
		name string
		pool *testCallBufs
		min  int
	}{
		{"buffer too small", &testCallBufs{tooSmall: true}, 0},
		{"DirectPlacementMin negative", &testCallBufs{}, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testBinding{ddp: true}
			cl, srv := netconvPair(t, &Config{Binding: b, CallBuffers: tc.pool, DirectPlacementMin: tc.min}, &Config{Binding: b})
			_ = srv.SetDeadline(time.Now().Add(20 * time.Second))
			msg := writeCall(1, 64<<10)
			if err := cl.WriteMsg(msg); err != nil {
				t.Fatal(err)
			}
			got, err := srv.ReadMsgAlloc(func(n int) []byte { return make([]byte, 0, n) })
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, msg) || srv.Stats().ReadChunksInPlace != 0 {
				t.Fatalf("call read equal %v, ReadChunksInPlace %d", bytes.Equal(got, msg), srv.Stats().ReadChunksInPlace)
			}
		})
	}
}

// TestCallBuffersOutliveEndpoint: a call assembled in a CallBuffers buffer
// and queued when the connection is lost is read as sent, in that buffer.
func TestCallBuffersOutliveEndpoint(t *testing.T) {
	b := testBinding{ddp: true}
	pool := &testCallBufs{}
	cl, srv := netconvPair(t, &Config{Binding: b, CallBuffers: pool}, &Config{Binding: b})
	_ = srv.SetDeadline(time.Now().Add(20 * time.Second))
	msg := writeCall(5, 64<<10)
	if err := cl.WriteMsg(msg); err != nil {
		t.Fatal(err)
	}
	waitQueued(t, srv, 1)
	closeAndWaitLost(t, cl, srv)
	got, err := srv.ReadMsgAlloc(func(n int) []byte { return make([]byte, 0, n) })
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, msg) || !pool.isLent(got) {
		t.Fatalf("call read equal %v, in the pool's buffer %v", bytes.Equal(got, msg), pool.isLent(got))
	}
}
