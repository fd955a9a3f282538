package transport

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestCloseMaterializesReplies: a requester's reply whose result the
// responder wrote into the slot's chunk memory, queued when Close comes
// (a Call woken by it may take it after Close, as CI once saw: the Call
// then read unmapped chunk memory and faulted), is copied out of that
// memory before Close frees it, whole. Without the copy, the queued call
// still points into the freed memory (checked).
func TestCloseMaterializesReplies(t *testing.T) {
	b := testBinding{ddp: true}
	client, server := netconvPair(t, &Config{Binding: b}, &Config{Binding: b})
	const n = 64 << 10
	require.NoError(t, client.WriteMsg(xdr.AppendUint32(appendCall(nil, 7, procRead), n)))
	xid, count := readCall(t, server)
	want := xdr.AppendOpaque(appendReply(nil, xid), pattern(count, byte(xid)))
	require.NoError(t, server.WriteMsg(want))

	var slot int
	deadline := time.Now().Add(rcGuard)
	for {
		client.mu.Lock()
		idx, ok := client.readQ.peek()
		client.mu.Unlock()
		if ok {
			slot = idx
			break
		}
		require.True(t, time.Now().Before(deadline), "the reply never arrived")
		time.Sleep(time.Millisecond)
	}
	client.mu.Lock()
	require.NotNil(t, client.reqState.calls[slot].data, "the result is in the slot's chunk memory")
	client.mu.Unlock()

	require.NoError(t, client.Close())
	client.mu.Lock()
	defer client.mu.Unlock()
	call := &client.reqState.calls[slot]
	require.Nil(t, call.data, "the result was copied out before Close freed the chunk memory")
	require.True(t, bytes.Equal(want, call.reply), "the whole reply, result reinserted")
}
