package soft

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// TestPrivateDataLimitsMatchVerbs: the wire format's private data limits
// (cm.go) are the CM's, as package verbs names them.
func TestPrivateDataLimitsMatchVerbs(t *testing.T) {
	require.Equal(t, verbs.ConnectPrivateDataLen, connectPrivateDataLen)
	require.Equal(t, verbs.AcceptPrivateDataLen, acceptPrivateDataLen)
	require.Equal(t, verbs.RejectPrivateDataLen, rejectPrivateDataLen)
}

// TestWindowIndexesRandom: window indexes are drawn at random, not
// counted, and never repeat on a connection.
func TestWindowIndexesRandom(t *testing.T) {
	c, _ := dialFake(t, nil, 16)
	seen := make(map[uint32]bool)
	consecutive := 0
	var prev uint32
	for i := range 256 {
		w, err := c.AllocWindow()
		require.NoError(t, err)
		index := w.RKey() >> 8
		require.NotZero(t, index)
		require.False(t, seen[index], "index %#x drawn twice", index)
		seen[index] = true
		if i > 0 && index == prev+1 {
			consecutive++
		}
		prev = index
	}
	require.Less(t, consecutive, 8, "window indexes look sequential")
}
