package cmpriv

import "testing"

// Allocation goals are asserted here and measured in the benchmarks.

// Sinks keep the compiler from discarding the calls under test.
var (
	sinkMessage  Message
	sinkStatus   Status
	sinkSettings Settings
	sinkBytes    []byte
	sinkAdjust   Adjustment
)

func TestParseAllocs(t *testing.T) {
	inputs := [][]byte{
		padded(connectLen, nil, linuxClient),
		padded(acceptLen, make([]byte, acceptLen-Len), linuxServer),
		make([]byte, acceptLen),
		garbage(acceptLen),
		hx("f6ab0e18 02 01 03 03"),
	}
	for _, in := range inputs {
		if n := testing.AllocsPerRun(100, func() { sinkMessage, sinkStatus = Parse(in) }); n != 0 {
			t.Errorf("Parse(% x): %v allocs, want 0", in, n)
		}
	}
}

func TestAppendAllocs(t *testing.T) {
	m := Message{RemoteInvalidate: true, SendSize: 4096, RecvSize: 4096}
	buf := make([]byte, 0, Len)
	if n := testing.AllocsPerRun(100, func() { buf = m.Append(buf[:0]) }); n != 0 {
		t.Errorf("Append: %v allocs, want 0", n)
	}
	var arr [Len]byte
	if n := testing.AllocsPerRun(100, func() { sinkBytes = m.Append(arr[:0]) }); n != 0 {
		t.Errorf("Append into an array: %v allocs, want 0", n)
	}
}

func TestNegotiateAllocs(t *testing.T) {
	local := Message{RemoteInvalidate: true, SendSize: 5000, RecvSize: 8192}
	peer := padded(acceptLen, nil, linuxServer)
	if n := testing.AllocsPerRun(100, func() { sinkSettings = Negotiate(Requester, local, peer) }); n != 0 {
		t.Errorf("Negotiate: %v allocs, want 0", n)
	}
	if n := testing.AllocsPerRun(100, func() { sinkMessage, sinkAdjust = local.Normalize() }); n != 0 {
		t.Errorf("Normalize: %v allocs, want 0", n)
	}
}
