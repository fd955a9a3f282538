package chunks

import "testing"

var benchNames = []string{"inline", "readchunk", "multichunk"}

func BenchmarkHeaderAppend(b *testing.B) {
	for _, name := range benchNames {
		h := benchHeaders[name]
		b.Run(name, func(b *testing.B) {
			buf := make([]byte, 0, 1024)
			b.ReportAllocs()
			b.SetBytes(int64(h.Len()))
			for b.Loop() {
				buf = h.Append(buf[:0])
			}
		})
	}
}

func BenchmarkHeaderUnmarshal(b *testing.B) {
	for _, name := range benchNames {
		msg := benchCall(benchHeaders[name])
		b.Run(name, func(b *testing.B) {
			var h Header
			b.ReportAllocs()
			b.SetBytes(int64(benchHeaders[name].Len()))
			for b.Loop() {
				if _, err := h.Unmarshal(msg, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkHeaderParseCall(b *testing.B) {
	for _, name := range benchNames {
		msg := benchCall(benchHeaders[name])
		b.Run(name, func(b *testing.B) {
			var h Header
			b.ReportAllocs()
			b.SetBytes(int64(benchHeaders[name].Len()))
			for b.Loop() {
				if _, err := h.ParseCall(msg, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
