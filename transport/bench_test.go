package transport

import (
	"context"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// benchServe answers the test program without allocating: procRead returns
// n bytes of a fixed buffer, procWrite the length of its argument.
func benchServe(c *Conn) {
	data := pattern(1<<20, 0)
	_ = serveCalls(c, make([]byte, 0, 2<<20), make([]byte, 0, 2<<20), func(h *xdr.CallHeader, args, out []byte) ([]byte, bool, error) {
		r := xdr.NewReader(args)
		switch h.Proc {
		case procRead:
			n, _ := r.Uint32()
			out = xdr.AppendOpaque(out, data[:n])
		case procWrite:
			p, _ := r.Opaque(testMaxReply)
			out = xdr.AppendUint32(out, uint32(len(p)))
		case procEcho:
			p, _ := r.Opaque(testMaxReply)
			out = xdr.AppendOpaque(out, p)
		}
		return out, true, nil
	})
}

// benchPair connects a requester to a benchServe responder, both on the
// software provider over loopback.
func benchPair(b *testing.B, cfg *Config) *Conn {
	cfg = softConfig(cfg)
	return servePair(b, "127.0.0.1:0", cfg, cfg)
}

// servePair listens on laddr with lcfg, serves the first connection with
// benchServe, and returns the requester dialled to it with dcfg.
func servePair(b *testing.B, laddr string, lcfg, dcfg *Config) *Conn {
	l, err := Listen(laddr, lcfg)
	if err != nil {
		b.Fatal(err)
	}
	go func() {
		c, err := l.AcceptRDMA()
		if err == nil {
			benchServe(c)
			_ = c.Close()
		}
	}()
	c, err := Dial(b.Context(), l.Addr().String(), dcfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = c.Close(); _ = l.Close() })
	return c
}

// BenchmarkCall measures the steady-state call path on the software
// provider, one call in flight, for each size class.
func BenchmarkCall(b *testing.B) {
	cases := []struct {
		name string
		proc uint32
		n    int
	}{
		{"null-inline", 0, 0},
		{"echo-1KiB-inline", procEcho, 1024},
		{"read-64KiB-writechunk", procRead, 64 << 10},
		{"write-64KiB-readchunk", procWrite, 64 << 10},
		{"echo-64KiB-longcall-replychunk", procEcho, 64 << 10},
	}
	for _, tc := range cases {
		// Through WriteMsg and ReadMsg, and through Call (a context, the
		// reply routed to its caller, a READ's data copied once into reply).
		for _, viaCall := range []bool{false, true} {
			name := tc.name
			if viaCall {
				name += "/Call"
			}
			b.Run(name, func(b *testing.B) {
				c := benchPair(b, &Config{Binding: testBinding{ddp: true}})
				msg := appendCall(nil, 1, tc.proc)
				switch tc.proc {
				case procRead:
					msg = xdr.AppendUint32(msg, uint32(tc.n))
				case procWrite, procEcho:
					msg = xdr.AppendOpaque(msg, pattern(tc.n, 1))
				}
				reply := make([]byte, 0, 2<<20)
				ctx := context.Background()
				call := func(xid uint32) {
					msg[0], msg[1], msg[2], msg[3] = byte(xid>>24), byte(xid>>16), byte(xid>>8), byte(xid)
					var err error
					if viaCall {
						reply, err = c.Call(ctx, msg, reply)
					} else if err = c.WriteMsg(msg); err == nil {
						reply, err = c.ReadMsg(reply)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
				for i := range 100 { // warm up: grow every buffer
					call(uint32(i + 1))
				}
				b.SetBytes(int64(tc.n))
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; b.Loop(); i++ {
					call(uint32(1000 + i))
				}
			})
		}
	}
}
