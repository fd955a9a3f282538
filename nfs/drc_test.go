package nfs

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestDRC: the duplicate request cache keys calls by XID, client,
// procedure and arguments, waits for a call in progress, forgets an
// abandoned one, ages replies out and evicts the least recently used.
func TestDRC(t *testing.T) {
	now := time.Unix(1000, 0)
	d := newDRC(2, time.Minute)
	d.now = func() time.Time { return now }
	key := func(xid uint32, client string, args string) drcKey {
		return newDRCKey(client, xid, ProgNFS, 3, ProcRemove, []byte(args))
	}

	e1, dup := d.lookup(key(1, "10.0.0.2", "x"))
	require.False(t, dup)
	again, dup := d.lookup(key(1, "10.0.0.2", "x"))
	require.True(t, dup, "in progress")
	require.Same(t, e1, again)
	require.False(t, isClosed(again.done))
	d.complete(e1, []byte("reply1"))
	require.True(t, isClosed(again.done))
	require.Equal(t, []byte("reply1"), again.reply)

	for _, k := range []drcKey{key(1, "10.0.0.3", "x"), key(2, "10.0.0.2", "x"), key(1, "10.0.0.2", "y")} {
		e, dup := d.lookup(k)
		require.False(t, dup, "%+v is another call", k)
		d.abandon(e)
	}
	require.Equal(t, 1, d.stats().Entries, "abandoned calls are forgotten")

	// LRU: e1 was used last; two more completed entries evict it last.
	e2, _ := d.lookup(key(2, "c", ""))
	d.complete(e2, []byte("reply2"))
	_, dup = d.lookup(key(1, "10.0.0.2", "x")) // touch e1
	require.True(t, dup)
	e3, _ := d.lookup(key(3, "c", ""))
	d.complete(e3, []byte("reply3"))
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
	k1 := newDRCKey("c", 1, ProgNFS, 3, ProcWrite, long)
	long[999] = 1
	require.Equal(t, k1, newDRCKey("c", 1, ProgNFS, 3, ProcWrite, long))
	require.NotEqual(t, k1, newDRCKey("c", 1, ProgNFS, 3, ProcWrite, long[:998]))
}
