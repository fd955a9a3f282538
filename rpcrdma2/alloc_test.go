package rpcrdma2

import "testing"

// TestAllocs: once a Header has parsed its largest header, parsing any
// golden or hostile header allocates nothing, and Append into a buffer
// with room allocates nothing.
func TestAllocs(t *testing.T) {
	var h Header
	for _, g := range goldens {
		_, _ = h.Unmarshal(g.wire, nil)
	}
	for _, g := range goldens {
		if n := testing.AllocsPerRun(100, func() { _, _ = h.Unmarshal(g.wire, nil) }); n != 0 {
			t.Errorf("Unmarshal %s: %v allocations", g.name, n)
		}
		buf := make([]byte, 0, 256)
		if n := testing.AllocsPerRun(100, func() { _ = g.h.Append(buf[:0]) }); n != 0 {
			t.Errorf("Append %s: %v allocations", g.name, n)
		}
	}
	for _, c := range hostile {
		if n := testing.AllocsPerRun(100, func() { _, _ = h.Unmarshal(c.wire, nil) }); n != 0 {
			t.Errorf("Unmarshal %s: %v allocations", c.name, n)
		}
	}
	buf := make([]byte, 0, 64)
	if n := testing.AllocsPerRun(100, func() { _ = AppendErrVers(buf[:0], 1, 2, 1, 2) }); n != 0 {
		t.Errorf("AppendErrVers: %v allocations", n)
	}
}

func BenchmarkUnmarshal(b *testing.B) {
	for _, g := range goldens[:5] {
		b.Run(g.name, func(b *testing.B) {
			var h Header
			b.ReportAllocs()
			for b.Loop() {
				if _, err := h.Unmarshal(g.wire, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
