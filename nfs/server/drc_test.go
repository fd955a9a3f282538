package server

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
)

// TestDRC: the duplicate request cache keys calls by XID, client,
// procedure and arguments, waits for a call in progress, ages replies out
// and evicts the least recently used.
func TestDRC(t *testing.T) {
	now := time.Unix(1000, 0)
	d := newDRC(2, time.Minute)
	d.now = func() time.Time { return now }
	key := func(xid uint32, client string, args string) drcKey {
		return newDRCKey(client, xid, nfs.ProgNFS, 3, nfs.ProcRemove, []byte(args))
	}

	e1, dup := d.lookup(key(1, "10.0.0.2", "x"))
	require.False(t, dup)
	again, dup := d.lookup(key(1, "10.0.0.2", "x"))
	require.True(t, dup, "in progress")
	require.Same(t, e1, again)
	wait := d.wait(again)
	require.NotNil(t, wait, "in progress: a retransmission waits")
	require.False(t, isClosed(wait))
	d.complete(e1, []byte("reply1"), d.now())
	require.True(t, isClosed(wait))
	require.Nil(t, d.wait(again), "answered: no wait")
	require.Equal(t, []byte("reply1"), again.reply)

	others := newDRC(8, time.Minute)
	others.lookup(key(1, "10.0.0.2", "x"))
	for _, k := range []drcKey{key(1, "10.0.0.3", "x"), key(2, "10.0.0.2", "x"), key(1, "10.0.0.2", "y")} {
		_, dup := others.lookup(k)
		require.False(t, dup, "%+v is another call", k)
	}
	require.Equal(t, 1, d.stats().Entries)

	// LRU: e1 was used last; two more completed entries evict it last.
	e2, _ := d.lookup(key(2, "c", ""))
	d.complete(e2, []byte("reply2"), d.now())
	_, dup = d.lookup(key(1, "10.0.0.2", "x")) // touch e1
	require.True(t, dup)
	e3, _ := d.lookup(key(3, "c", ""))
	d.complete(e3, []byte("reply3"), d.now())
	require.Equal(t, 2, d.stats().Entries)
	_, dup = d.lookup(key(1, "10.0.0.2", "x"))
	require.True(t, dup, "the most recently used stayed")
	require.EqualValues(t, 1, d.stats().Evictions)

	// Age.
	now = now.Add(2 * time.Minute)
	e, dup := d.lookup(key(3, "c", ""))
	require.False(t, dup, "expired")
	require.Nil(t, e.reply)

	// A long argument: only its first bytes are summed, its length counts.
	long := make([]byte, 1000)
	k1 := newDRCKey("c", 1, nfs.ProgNFS, 3, nfs.ProcWrite, long)
	long[999] = 1
	require.Equal(t, k1, newDRCKey("c", 1, nfs.ProgNFS, 3, nfs.ProcWrite, long))
	require.NotEqual(t, k1, newDRCKey("c", 1, nfs.ProgNFS, 3, nfs.ProcWrite, long[:998]))
}

// TestDRCModel: random lookups and completions against a model of the
// cache (a list of keys, most recently used first, and each
// entry's state): after every step the cache's LRU list holds the model's
// keys in the model's order, linked both ways, and its map the same keys.
func TestDRCModel(t *testing.T) {
	type mEntry struct {
		key  drcKey
		done bool
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for round := range 50 {
		size := 1 + rng.IntN(6)
		d := newDRC(size, time.Hour)
		var model []mEntry // most recent first
		live := map[drcKey]*drcEntry{}
		find := func(k drcKey) int {
			for i, m := range model {
				if m.key == k {
					return i
				}
			}
			return -1
		}
		for step := range 200 {
			k := newDRCKey("c", uint32(rng.IntN(12)), nfs.ProgNFS, 3, nfs.ProcWrite, nil)
			switch op := rng.IntN(2); {
			case op == 0 || live[k] == nil:
				e, dup := d.lookup(k)
				if i := find(k); i >= 0 {
					require.True(t, dup, "round %d step %d: %v is cached", round, step, k.xid)
					m := model[i]
					model = append([]mEntry{m}, append(model[:i:i], model[i+1:]...)...)
				} else {
					require.False(t, dup, "round %d step %d: %v is not cached", round, step, k.xid)
					model = append([]mEntry{{key: k}}, model...)
					live[k] = e
					for j := len(model) - 1; len(model) > size && j >= 0; j-- {
						if model[j].done {
							delete(live, model[j].key)
							model = append(model[:j:j], model[j+1:]...)
						}
					}
				}
			default:
				if i := find(k); i >= 0 && !model[i].done {
					d.complete(live[k], []byte("r"), d.now())
					model[i].done = true
				}
			}
			var got []drcKey
			for e := d.lru.next; e != &d.lru; e = e.next {
				require.Same(t, e, e.next.prev, "round %d step %d: broken links", round, step)
				got = append(got, e.key)
			}
			var want []drcKey
			for _, m := range model {
				want = append(want, m.key)
			}
			require.Equal(t, want, got, "round %d step %d: LRU order", round, step)
			require.Len(t, d.entries, len(model))
		}
	}
}

// TestDRCAbandon: an entry abandoned (its call to be executed again) leaves
// the cache, so that the execution again makes its own; a retransmission
// waiting on it is woken with no reply; abandoning twice, or nil, is
// harmless.
func TestDRCAbandon(t *testing.T) {
	d := newDRC(8, time.Minute)
	k := newDRCKey("10.0.0.2", 7, nfs.ProgNFS, 3, nfs.ProcWrite, []byte("args"))
	e, dup := d.lookup(k)
	require.False(t, dup)
	waiter, dup := d.lookup(k)
	require.True(t, dup)
	wait := d.wait(waiter)
	d.abandon(e)
	require.True(t, isClosed(wait), "the waiting retransmission is woken")
	require.Nil(t, d.wait(waiter))
	require.Nil(t, waiter.reply)
	require.Zero(t, d.stats().Entries)
	d.abandon(e)
	d.abandon(nil)
	again, dup := d.lookup(k)
	require.False(t, dup, "the execution again is no duplicate")
	require.NotSame(t, e, again)
	d.complete(again, []byte("reply"), d.now())
	_, dup = d.lookup(k)
	require.True(t, dup)
}

// isClosed reports whether c is closed.
func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
