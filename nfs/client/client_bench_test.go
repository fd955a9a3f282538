package client_test

import (
	"fmt"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
)

func benchIO(b *testing.B, size int, write bool) { benchIOPlaced(b, size, write, 0) }

// benchIOPlaced is benchIO with the client's
// transport.Config.DirectPlacementMin set to min.
func benchIOPlaced(b *testing.B, size int, write bool, min int) {
	env := startClientEnv(b, func(_ *server.Config, mo *client.MountOptions) {
		mo.Client.Transport.DirectPlacementMin = min
	})
	require.NoError(b, os.WriteFile(env.path("f"), pattern(4<<20, 1), 0o644))
	fh, _, err := env.exp.Lookup(b.Context(), "f", true)
	require.NoError(b, err)
	c := env.exp.Client
	buf := pattern(size, 2)
	ctx := b.Context()
	b.SetBytes(int64(size))
	b.ReportAllocs()
	b.ResetTimer()
	off := uint64(0)
	for b.Loop() {
		if write {
			_, err = c.Write(ctx, fh, off, buf, client.Unstable)
		} else {
			_, _, err = c.Read(ctx, fh, off, buf)
		}
		if err != nil {
			b.Fatal(err)
		}
		off = (off + uint64(size)) % (4 << 20)
	}
}

func BenchmarkClientRead4K(b *testing.B) { benchIO(b, 4<<10, false) }
func BenchmarkClientRead1M(b *testing.B) { benchIO(b, 1<<20, false) }

// BenchmarkClientReadPlacement compares READs whose data the server's RDMA
// Write places straight into the caller's buffer (registered for the call:
// transport.Config.DirectPlacementMin) with READs copied once out of the
// transport's chunk memory (DirectPlacementMin -1), in one run. On the
// soft provider the RDMA Write itself is a copy, so the saving is the
// second copy; on rdma-core the NIC writes p and the saving is the only
// copy, against the cost of ibv_reg_mr and ibv_dereg_mr.
func BenchmarkClientReadPlacement(b *testing.B) {
	for _, size := range []int{64 << 10, 1 << 20} {
		for _, mode := range []struct {
			name string
			min  int
		}{{"direct", 1}, {"copy", -1}} {
			b.Run(fmt.Sprintf("%dKiB/%s", size>>10, mode.name), func(b *testing.B) {
				benchIOPlaced(b, size, false, mode.min)
			})
		}
	}
}
func BenchmarkClientWrite4K(b *testing.B) { benchIO(b, 4<<10, true) }
func BenchmarkClientWrite1M(b *testing.B) { benchIO(b, 1<<20, true) }
