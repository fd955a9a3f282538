//go:build e2eguest

package rdmacore_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// BenchmarkRegisterRegion measures what direct data placement into a
// caller's buffer costs on rxe against the copy it saves
// (transport.Config.DirectPlacementMin): RegisterRegion and Close of a Go
// buffer (ibv_reg_mr and ibv_dereg_mr, pinning and unpinning its pages),
// and, side by side, one copy of the same bytes. Where "register" is
// cheaper than "copy", registering wins.
func BenchmarkRegisterRegion(b *testing.B) {
	client, server := providers()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ln, err := server.Listen(listenAddr)
	require.NoError(b, err)
	defer ln.Close()
	p := dialPair(b, ctx, client, ln, verbs.QueueCaps{SendQueue: 4, RecvQueue: 4, MaxSGE: 1, ReadDepth: 1}, 4096, 0, 0)
	reg := p.client.(verbs.Registrar)
	for _, size := range []int{4 << 10, 16 << 10, 32 << 10, 64 << 10, 256 << 10, 1 << 20} {
		buf := make([]byte, size)
		src := make([]byte, size)
		b.Run(fmt.Sprintf("register/%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				r, err := reg.RegisterRegion(buf)
				if err != nil {
					b.Fatal(err)
				}
				if err := r.Close(); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("copy/%dKiB", size>>10), func(b *testing.B) {
			b.SetBytes(int64(size))
			for b.Loop() {
				copy(buf, src)
			}
		})
	}
}
