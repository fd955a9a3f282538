package verbs_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

func TestQueueCapsCheck(t *testing.T) {
	limit := verbs.QueueCaps{SendQueue: 8, RecvQueue: 8, MaxSGE: 2, ReadDepth: 4}
	require.NoError(t, limit.Check(limit))
	require.NoError(t, verbs.QueueCaps{}.Check(limit))
	for _, q := range []verbs.QueueCaps{
		{SendQueue: -1}, {SendQueue: 9}, {RecvQueue: -1}, {RecvQueue: 9},
		{MaxSGE: -1}, {MaxSGE: 3}, {ReadDepth: -1}, {ReadDepth: 5},
	} {
		err := q.Check(limit)
		require.ErrorIs(t, err, verbs.ErrNotSupported, "%+v", q)
	}
	require.ErrorContains(t, verbs.QueueCaps{MaxSGE: 3}.Check(limit), "MaxSGE 3")
}

func TestConnOptionsCheck(t *testing.T) {
	limit := verbs.QueueCaps{SendQueue: 1 << 16, RecvQueue: 1 << 16, MaxSGE: 32, ReadDepth: 255}
	for _, accept := range []bool{false, true} {
		got, err := (*verbs.ConnOptions)(nil).Check(accept, limit)
		require.NoError(t, err)
		require.Equal(t, verbs.DefaultQueueCaps, got)
		got, err = (&verbs.ConnOptions{Caps: verbs.QueueCaps{SendQueue: 4, MaxSGE: 1}}).Check(accept, limit)
		require.NoError(t, err)
		require.Equal(t, verbs.QueueCaps{SendQueue: 4, RecvQueue: verbs.DefaultQueueCaps.RecvQueue, MaxSGE: 1, ReadDepth: verbs.DefaultQueueCaps.ReadDepth}, got)
		_, err = (&verbs.ConnOptions{Caps: verbs.QueueCaps{ReadDepth: 256}}).Check(accept, limit)
		require.ErrorIs(t, err, verbs.ErrNotSupported)
	}
	_, err := (&verbs.ConnOptions{PrivateData: make([]byte, verbs.ConnectPrivateDataLen)}).Check(false, limit)
	require.NoError(t, err)
	_, err = (&verbs.ConnOptions{PrivateData: make([]byte, verbs.ConnectPrivateDataLen+1)}).Check(false, limit)
	require.ErrorIs(t, err, verbs.ErrPrivateDataTooLong)
	_, err = (&verbs.ConnOptions{PrivateData: make([]byte, verbs.AcceptPrivateDataLen)}).Check(true, limit)
	require.NoError(t, err)
	_, err = (&verbs.ConnOptions{PrivateData: make([]byte, verbs.AcceptPrivateDataLen+1)}).Check(true, limit)
	require.ErrorIs(t, err, verbs.ErrPrivateDataTooLong)
}

func TestBindRKey(t *testing.T) {
	const cur = 0x123456_7f
	got, err := verbs.BindRKey(cur, 0)
	require.NoError(t, err)
	require.Equal(t, verbs.NextRKey(cur), got)
	got, err = verbs.BindRKey(0x123456_ff, 0)
	require.NoError(t, err)
	require.Equal(t, uint32(0x123456_00), got, "the key byte wraps")
	got, err = verbs.BindRKey(cur, verbs.WithKey(cur, 0x3c))
	require.NoError(t, err)
	require.Equal(t, uint32(0x123456_3c), got)
	_, err = verbs.BindRKey(cur, cur)
	require.ErrorIs(t, err, verbs.ErrInvalidRKey, "the current key byte")
	_, err = verbs.BindRKey(cur, 0x123457_3c)
	require.ErrorIs(t, err, verbs.ErrInvalidRKey, "another window's index")
}

func TestWithKey(t *testing.T) {
	require.Equal(t, uint32(0xabcdef_01), verbs.WithKey(0xabcdef_99, 0x01))
	require.Equal(t, uint32(0x000100_ff), verbs.WithKey(0x000100_00, 0xff))
}
