package cmpriv

import "testing"

func BenchmarkParse(b *testing.B) {
	cases := []struct {
		name string
		buf  []byte
	}{
		{"connect-56B", padded(connectLen, nil, linuxClient)},
		{"accept-196B-id-at-end", padded(acceptLen, make([]byte, acceptLen-Len), linuxServer)},
		{"accept-196B-all-zero", make([]byte, acceptLen)},
		{"accept-196B-garbage", garbage(acceptLen)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.buf)))
			for b.Loop() {
				sinkMessage, sinkStatus = Parse(c.buf)
			}
		})
	}
}

func BenchmarkAppend(b *testing.B) {
	m := Message{RemoteInvalidate: true, SendSize: 4096, RecvSize: 4096}
	buf := make([]byte, 0, Len)
	b.ReportAllocs()
	for b.Loop() {
		buf = m.Append(buf[:0])
	}
	sinkBytes = buf
}

func BenchmarkNegotiate(b *testing.B) {
	local := Message{RemoteInvalidate: true, SendSize: 16384, RecvSize: 16384}
	peer := padded(acceptLen, nil, linuxServer)
	b.ReportAllocs()
	for b.Loop() {
		sinkSettings = Negotiate(Requester, local, peer)
	}
}
