package transport

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"
)

// TestWokenCallersShareAPost: the callers that one poll's replies woke
// make their next calls before any is posted, and the calls go out in one
// post (gatherCalls), not one each. One processor (GOMAXPROCS 1) makes the
// order certain: the poll loop's yield runs every readied caller before it.
func TestWokenCallersShareAPost(t *testing.T) {
	const calls = 4
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	c, sp := gatedRequester(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := c.Call(ctx, appendCall(nil, 100, 0), nil) // for the credits
	require.NoError(t, err)
	sp.dialGate.close(calls) // the first replies come in one poll
	var g errgroup.Group
	for i := range calls {
		g.Go(func() error {
			for round := range 2 {
				xid := uint32(1 + i + round*calls)
				reply, err := c.Call(ctx, appendCall(nil, xid, 0), nil)
				if err == nil && !bytes.Equal(appendReply(nil, xid), reply) {
					err = fmt.Errorf("call %d: reply %x", xid, reply)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	require.NoError(t, g.Wait())
	sp.dialGate.mu.Lock()
	defer sp.dialGate.mu.Unlock()
	posts := sp.dialGate.posts
	// The first replies' Receives are reposted in one PostRecv at the end
	// of their poll; the calls their callers make next are the first
	// Sends after it.
	i := slices.Index(posts, fmt.Sprintf("recv %d", calls))
	require.GreaterOrEqual(t, i, 0, "the first replies' reposts (all posts: %q)", posts)
	var sends []string
	for _, p := range posts[i+1:] {
		if p[:4] == "send" {
			sends = append(sends, p)
		}
	}
	require.NotEmpty(t, sends, "posts: %q", posts)
	require.Equal(t, fmt.Sprintf("send %d", calls), sends[0], "the second calls' post (all posts: %q)", posts)
}
