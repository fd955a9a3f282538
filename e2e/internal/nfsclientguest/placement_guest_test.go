//go:build e2eguest

package nfsclientguest

import (
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/guesttest"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
)

// TestKnfsdPlacement measures what placing READ data straight into the
// caller's buffer buys against knfsd, in one boot: 32 MiB read with
// Client.Read in READs of rsize into one buffer (its registration cached
// after the first READ), on a connection placing directly (the default)
// and on one copying once out of the Write chunk's slot memory
// (transport.Config.DirectPlacementMin -1); the two alternate in ABBA
// order, best of four each. It checks the data, that the direct connection registered
// the buffer once and placed every READ, and that the copying one placed
// none; it reports the throughput ratio and the client process's CPU time
// per READ (getrusage: user and system, rxe's transmit path included),
// not a target (TCG timing is noisy, and the copy saved is small against
// a READ's round trip).
func TestKnfsdPlacement(t *testing.T) {
	direct := mount(t, nil)
	copying := mount(t, func(o *client.MountOptions) { o.Client.Transport.DirectPlacementMin = -1 })
	ctx := testCtx(t)
	dir, local := scratch(t, "placement")
	data := guesttest.Pattern(benchSize, 9)
	require.NoError(t, os.WriteFile(local+"/f", data, 0o644))

	var cpu [2]time.Duration // direct, copying
	cpuNow := func() time.Duration {
		var ru syscall.Rusage
		require.NoError(t, syscall.Getrusage(syscall.RUSAGE_SELF, &ru))
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	read := func(exp *client.Export) (time.Duration, int) {
		fh, _, err := exp.Lookup(ctx, dir+"/f", true)
		require.NoError(t, err)
		rsize, _ := exp.Client.IOSize()
		buf := make([]byte, rsize)
		got := make([]byte, 0, benchSize)
		start, cpu0 := time.Now(), cpuNow()
		reads := 0
		for off := 0; off < benchSize; {
			n, eof, err := exp.Client.Read(ctx, fh, uint64(off), buf)
			require.NoError(t, err)
			reads++
			got = append(got, buf[:n]...)
			off += n
			if eof {
				break
			}
		}
		d := time.Since(start)
		if exp == direct {
			cpu[0] += cpuNow() - cpu0
		} else {
			cpu[1] += cpuNow() - cpu0
		}
		guesttest.RequireData(t, data, got)
		return d, reads
	}
	var bd, bc time.Duration
	reads := 0
	best := func(b *time.Duration, d time.Duration) {
		if *b == 0 || d < *b {
			*b = d
		}
	}
	for i := range 4 {
		if i%2 == 1 {
			c, _ := read(copying)
			best(&bc, c)
		}
		d, n := read(direct)
		best(&bd, d)
		reads += n
		if i%2 == 0 {
			c, _ := read(copying)
			best(&bc, c)
		}
	}
	ds, cs := direct.Client.Conn().Stats(), copying.Client.Conn().Stats()
	t.Logf("direct: %+v", ds)
	require.EqualValues(t, reads, ds.DirectPlacements, "every READ placed in the caller's buffer")
	require.LessOrEqual(t, ds.DirectRegistrations, uint64(4), "the buffer registered once per pass at most (cached)")
	require.Zero(t, cs.DirectPlacements)
	mibs := func(d time.Duration) float64 { return benchSize / (1 << 20) / d.Seconds() }
	rsize, _ := direct.Client.IOSize()
	perRead := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(reads) }
	report(t, "placement: seq read 32 MiB in READs of %d KiB: placed directly %.1f MiB/s, %.0f µs CPU per READ (%d registrations for %d READs); copied once %.1f MiB/s, %.0f µs CPU per READ; throughput ratio %.2f, CPU ratio %.2f",
		rsize>>10, mibs(bd), perRead(cpu[0]), ds.DirectRegistrations, reads, mibs(bc), perRead(cpu[1]), mibs(bd)/mibs(bc), float64(cpu[0])/float64(cpu[1]))
}
