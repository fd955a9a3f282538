package soft_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// TestStalledPeerRetryExceeded: an RDMA Read whose response never comes,
// an RDMA Write never acknowledged and a Send never acknowledged each fail
// with StatusRetryExceeded once the transport timer ran out; what was
// posted after it is flushed and both queue pairs go to the error state.
func TestStalledPeerRetryExceeded(t *testing.T) {
	for _, op := range []verbs.Opcode{verbs.OpRDMARead, verbs.OpRDMAWrite, verbs.OpSend} {
		t.Run(op.String(), func(t *testing.T) {
			faults := &soft.Faults{}
			faults.StallResponders()
			// A short timer: the test waits for it, it asserts no time.
			cp := &soft.Provider{AckTimeout: 5 * time.Millisecond, RetryCount: 2}
			var sr verbs.Region
			client, server, closeBoth := pair(t, cp, &soft.Provider{Faults: faults}, nil, withRecvs(&sr, 4, 64<<10))
			defer closeBoth()
			w, err := server.AllocWindow()
			require.NoError(t, err)
			require.NoError(t, server.PostSend([]verbs.WorkRequest{{ID: 100, Op: verbs.OpBindWindow, Window: w,
				Bind: verbs.SGE{Region: sr, Length: 64 << 10}, Access: verbs.AccessRemoteRead | verbs.AccessRemoteWrite}}))
			require.NoError(t, waitOne(t, server).Err(), "a stalled responder still executes its own requests")
			cr, err := client.AllocRegion(64 << 10)
			require.NoError(t, err)
			wr := verbs.WorkRequest{ID: 1, Op: op, SGL: []verbs.SGE{{Region: cr, Length: 32 << 10}}}
			if op != verbs.OpSend {
				wr.RKey, wr.RemoteAddr = w.RKey(), sr.Addr(0)
			}
			next := verbs.WorkRequest{ID: 2, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: cr, Length: 8}}}
			require.NoError(t, client.PostSend([]verbs.WorkRequest{wr, next}))
			c := waitOne(t, client)
			require.Equal(t, uint64(1), c.ID)
			require.Equal(t, verbs.StatusRetryExceeded, c.Status)
			require.ErrorIs(t, c.Err(), verbs.ErrRetryExceeded)
			c = waitOne(t, client)
			require.Equal(t, uint64(2), c.ID)
			require.ErrorIs(t, c.Err(), verbs.ErrFlushed)
			waitDone(t, client)
			require.ErrorIs(t, client.Err(), verbs.ErrRetryExceeded)
			require.ErrorIs(t, client.Err(), verbs.ErrDisconnected)
			waitDone(t, server) // the disconnect reached the stalled peer
			require.ErrorIs(t, client.PostSend([]verbs.WorkRequest{next}), verbs.ErrDisconnected)
		})
	}
}
