package transport

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// fakeRegion is a registration of fakeRegistrar.
type fakeRegion struct {
	p      []byte
	closed bool
	live   *int
}

func (r *fakeRegion) Bytes() []byte       { return r.p }
func (r *fakeRegion) Addr(off int) uint64 { return uint64(off) }
func (r *fakeRegion) Close() error {
	if !r.closed {
		r.closed = true
		*r.live--
	}
	return nil
}

// fakeRegistrar counts registrations and the live ones.
type fakeRegistrar struct{ regs, live int }

func (f *fakeRegistrar) RegisterRegion(p []byte) (verbs.Region, error) {
	f.regs++
	f.live++
	return &fakeRegion{p: p, live: &f.live}, nil
}

// TestRegCache: a buffer registered once is reused, and so is a part of
// it (at its offset); the least recently used unused registration goes
// first when the cache is over its bytes or entries; a registration in
// use is never closed; one larger than the limit is not kept, and is
// closed when its call ends; forget drops everything without closing.
func TestRegCache(t *testing.T) {
	f := &fakeRegistrar{}
	rc := regCache{limit: 3 << 10}
	a, b, c := make([]byte, 1<<10), make([]byte, 1<<10), make([]byte, 1<<10)

	ra, off, cached, err := rc.get(f, a)
	require.NoError(t, err)
	require.False(t, cached)
	require.Zero(t, off)
	require.NoError(t, rc.put(ra))
	r, off, cached, _ := rc.get(f, a[100:300])
	require.True(t, cached, "a part of a cached buffer")
	require.Same(t, ra, r)
	require.Equal(t, 100, off)
	require.NoError(t, rc.put(r))
	require.Equal(t, 1, f.regs)

	rb, _, _, _ := rc.get(f, b)
	rcc, _, _, _ := rc.get(f, c)
	require.NoError(t, rc.put(rb))
	require.NoError(t, rc.put(rcc))
	require.Equal(t, 3, f.live, "3 KiB fit the cache")
	_, _, cached, _ = rc.get(f, a) // a most recently used now: b is the oldest
	require.True(t, cached)
	require.NoError(t, rc.put(ra))

	d := make([]byte, 1<<10)
	rd, _, _, _ := rc.get(f, d) // over 3 KiB: b goes
	require.True(t, rb.(*fakeRegion).closed, "the least recently used")
	require.False(t, ra.(*fakeRegion).closed)
	require.Equal(t, 3, f.live)

	// In use: never evicted, even over the limit.
	big := make([]byte, 3<<10)
	rbig, _, cached, _ := rc.get(f, big) // fits the limit alone: kept, the unused others go
	require.False(t, cached)
	require.False(t, rd.(*fakeRegion).closed, "d is in use")
	require.True(t, ra.(*fakeRegion).closed)
	require.True(t, rcc.(*fakeRegion).closed)
	require.NoError(t, rc.put(rd)) // now d goes: 4 KiB > 3 KiB
	require.True(t, rd.(*fakeRegion).closed)
	require.False(t, rbig.(*fakeRegion).closed, "big is in use")
	require.NoError(t, rc.put(rbig))
	require.Equal(t, 1, f.live)

	huge := make([]byte, 4<<10)
	rh, _, cached, _ := rc.get(f, huge)
	require.False(t, cached)
	require.Equal(t, 2, f.live)
	require.NoError(t, rc.put(rh))
	require.True(t, rh.(*fakeRegion).closed, "larger than the limit: not kept")
	_, _, cached, _ = rc.get(f, huge)
	require.False(t, cached)

	rc.forget()
	require.Zero(t, rc.bytes)
	require.Empty(t, rc.entries)

	// Entries: at most maxRegEntries, whatever their bytes.
	rc = regCache{limit: 1 << 30}
	bufs := make([][]byte, maxRegEntries+5)
	for i := range bufs {
		bufs[i] = make([]byte, 8)
		r, _, _, _ := rc.get(f, bufs[i])
		require.NoError(t, rc.put(r))
	}
	require.Len(t, rc.entries, maxRegEntries)
}
