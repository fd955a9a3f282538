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

// TestRegCacheBounds: under a burst of registrations from several
// connections' caches sharing one Listener meter, what each holds
// registered (in use or cached) never exceeds its max, nor their sum the
// meter's limit; a registration beyond either first evicts its own cache's
// unused registrations, then fails with errRegLimit without registering;
// every byte goes back to the meter once the registrations are given back
// and trimmed, or forgotten with their connection.
func TestRegCacheBounds(t *testing.T) {
	const (
		conns  = 4
		perMax = 8 << 10
	)
	meter := &regMeter{limit: 20 << 10}
	f := &fakeRegistrar{}
	rcs := make([]*regCache, conns)
	for i := range rcs {
		rcs[i] = &regCache{limit: 6 << 10, max: perMax, shared: meter}
	}
	check := func() {
		t.Helper()
		sum := 0
		for _, rc := range rcs {
			require.LessOrEqual(t, rc.total(), perMax, "per-connection bound")
			sum += rc.total()
		}
		require.LessOrEqual(t, sum, 20<<10, "listener bound")
		require.Equal(t, int64(sum), meter.inUse(), "meter counts every connection's registrations")
		require.Equal(t, sum, f.live*(1<<10), "live registrations")
	}
	// A burst: each cache registers 1 KiB buffers, keeping some in use.
	var held [conns][]verbs.Region
	limited := 0
	for round := range 12 {
		for i, rc := range rcs {
			r, _, _, err := rc.get(f, make([]byte, 1<<10))
			if err != nil {
				require.ErrorIs(t, err, errRegLimit)
				limited++
				for _, e := range rc.entries {
					require.Positive(t, e.users, "refused with an unused registration left to evict")
				}
				check()
				continue
			}
			if round%2 == 0 {
				held[i] = append(held[i], r)
			} else {
				require.NoError(t, rc.put(r)) // cached, unused
			}
			check()
		}
	}
	require.Positive(t, limited, "the burst reached a bound")
	regs := f.regs
	_, _, _, err := rcs[0].get(f, make([]byte, perMax+1))
	require.Positive(t, meter.refused.Load(), "the meter counted its refusals")
	require.ErrorIs(t, err, errRegLimit, "larger than the connection's bound")
	require.Equal(t, regs, f.regs, "a refused registration registers nothing")
	check()

	// Given back: cached (within limit), then released by two trim
	// checks without use.
	for i, rc := range rcs {
		for _, r := range held[i] {
			require.NoError(t, rc.put(r))
		}
		check()
	}
	for _, rc := range rcs {
		require.NotZero(t, rc.total(), "cached")
		require.False(t, rc.trimIdle(), "the meter refused registrations: all unused released, though used since the last check")
		require.Zero(t, rc.total())
	}
	require.Zero(t, meter.inUse())
	require.Zero(t, f.live)

	// Without a refusal since, a check keeps what was used since the
	// last one.
	r0, _, _, err := rcs[0].get(f, make([]byte, 1<<10))
	require.NoError(t, err)
	require.NoError(t, rcs[0].put(r0))
	require.True(t, rcs[0].trimIdle(), "used since the last check: kept, watched")
	require.False(t, rcs[0].trimIdle(), "unused for a period: released")
	require.Zero(t, meter.inUse())

	// Forgotten with the connection, in use or not: the meter gets its
	// bytes back (the connection's close deregistered them).
	r, _, _, err := rcs[1].get(f, make([]byte, 3<<10))
	require.NoError(t, err)
	_ = r
	loose, _, _, err := rcs[1].get(f, make([]byte, 7<<10)) // over limit: not cached
	require.ErrorIs(t, err, errRegLimit, "3 + 7 KiB over the connection's 8 KiB")
	require.Nil(t, loose)
	big, _, _, err := rcs[2].get(f, make([]byte, 7<<10))
	require.NoError(t, err, "uncached, within the bounds")
	require.Equal(t, int64(10<<10), meter.inUse())
	rcs[1].forget()
	rcs[2].forget()
	require.Zero(t, meter.inUse())
	_ = big
}

// TestRegCacheTrimArmsOnce: the trim check is armed when the cache first
// holds a registration, not per call; a check re-arms (returns true) while
// registrations are left, drops those unused for a whole period and keeps
// those in use, and the next registration after it stopped arms it again.
func TestRegCacheTrimArmsOnce(t *testing.T) {
	f := &fakeRegistrar{}
	arms := 0
	rc := regCache{limit: 1 << 20, armTrim: func() { arms++ }}
	a, b := make([]byte, 4<<10), make([]byte, 4<<10)
	for range 100 {
		r, _, _, err := rc.get(f, a)
		require.NoError(t, err)
		require.NoError(t, rc.put(r))
	}
	rb, _, _, err := rc.get(f, b) // in use across the checks
	require.NoError(t, err)
	require.Equal(t, 1, arms)
	require.True(t, rc.trimIdle(), "both used since the last check")
	require.Equal(t, 2, f.live)
	require.True(t, rc.trimIdle(), "b in use is kept")
	require.Equal(t, 1, f.live, "a unused for a period: released")
	require.NoError(t, rc.put(rb))
	require.True(t, rc.trimIdle(), "b given back during the period")
	require.False(t, rc.trimIdle(), "nothing left")
	require.Zero(t, f.live)
	for _, e := range rc.entries[:cap(rc.entries)] {
		require.Nil(t, e.r, "a released registration (and its buffer) still referenced")
	}
	require.Equal(t, 1, arms)
	r, _, _, err := rc.get(f, a)
	require.NoError(t, err)
	require.NoError(t, rc.put(r))
	require.Equal(t, 2, arms, "armed again by the next registration")
}
