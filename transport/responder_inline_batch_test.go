package transport

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sync/errgroup"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// pollGate holds a connection's completions back until n Receives have
// completed, and then hands them to the poll loop in one Poll, as a poll
// finds them when several calls arrive at once.
type pollGate struct {
	mu    sync.Mutex
	n     int // Receives to gather first; 0: the gate is open
	recvs int // Receives held
	held  []verbs.Completion
	buf   [64]verbs.Completion
	// posts logs the connection's posts since close: "send N" or
	// "recv N", N work requests in one call.
	posts []string
}

// close has the gate gather n Receives, and starts its log of posts.
func (g *pollGate) close(n int) {
	g.mu.Lock()
	g.n = n
	g.posts = nil
	g.mu.Unlock()
}

// logPost logs a post of n work requests of kind.
func (g *pollGate) logPost(kind string, n int) {
	g.mu.Lock()
	g.posts = append(g.posts, fmt.Sprintf("%s %d", kind, n))
	g.mu.Unlock()
}

// PostRecv logs the post on a gated connection.
func (c *protoConn) PostRecv(rrs []verbs.RecvRequest) error {
	if c.gate != nil {
		c.gate.logPost("recv", len(rrs))
	}
	return c.Conn.PostRecv(rrs)
}

// Poll hands over what the gate holds once it is open, then polls the
// provider.
func (c *protoConn) Poll(cs []verbs.Completion) (int, error) {
	g := c.gate
	if g == nil {
		return c.Conn.Poll(cs)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n > 0 {
		k, err := c.Conn.Poll(g.buf[:])
		for _, wc := range g.buf[:k] {
			if wc.Op == verbs.OpRecv {
				g.recvs++
			}
		}
		g.held = append(g.held, g.buf[:k]...)
		if g.recvs < g.n {
			return 0, err
		}
		g.n, g.recvs = 0, 0
	}
	if len(g.held) > 0 {
		k := copy(cs, g.held)
		g.held = g.held[k:]
		return k, nil
	}
	return c.Conn.Poll(cs)
}

// Wait returns at once while the open gate still holds completions.
func (c *protoConn) Wait(ctx context.Context) error {
	if g := c.gate; g != nil {
		g.mu.Lock()
		ready := g.n == 0 && len(g.held) > 0
		g.mu.Unlock()
		if ready {
			return nil
		}
	}
	return c.Conn.Wait(ctx)
}

// callsAtOnce makes a first NULL call on c, for the credits that let the
// others be in flight at once (a requester starts with one), closes gate
// for n Receives and makes n NULL calls at once, each checked for its
// reply.
func callsAtOnce(t *testing.T, c *Conn, gate *pollGate, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	_, err := c.Call(ctx, appendCall(nil, 100, 0), nil)
	require.NoError(t, err)
	gate.close(n)
	var g errgroup.Group
	for i := range n {
		g.Go(func() error {
			xid := uint32(i + 1)
			reply, err := c.Call(ctx, appendCall(nil, xid, 0), nil)
			if err == nil && !bytes.Equal(appendReply(nil, xid), reply) {
				err = fmt.Errorf("call %d: reply %x", xid, reply)
			}
			return err
		})
	}
	require.NoError(t, g.Wait())
}

// TestInlineRepliesShareAPost: the replies of the calls one poll brought,
// executed by the inline handler, go out in one post (one doorbell), not
// one each, after the Receives of those calls, reposted in one post too.
func TestInlineRepliesShareAPost(t *testing.T) {
	const calls = 4
	sp := newProtoProvider(false)
	sp.gate = &pollGate{}
	var read atomic.Int64
	var eh *echoInline
	var srv *Conn
	set := make(chan struct{})
	c := inlinePair(t, &Config{Provider: sp, Binding: testBinding{}}, func(c *Conn) InlineHandler {
		srv, eh = c, &echoInline{c: c}
		close(set)
		return eh
	}, &read)
	<-set
	callsAtOnce(t, c, sp.gate, calls)
	if p := eh.err.Load(); p != nil {
		require.NoError(t, *p)
	}
	require.Equal(t, int64(1+calls), eh.served.Load(), "calls executed inline")
	require.Zero(t, read.Load(), "calls read by ReadMsg")
	s := srv.Stats()
	require.Equal(t, uint64(1+calls), s.Sends, "replies")
	require.Equal(t, uint64(2), s.SendPosts, "posts of the replies: the first call's, then one for the rest")
	sp.gate.mu.Lock()
	defer sp.gate.mu.Unlock()
	require.Equal(t, []string{fmt.Sprintf("recv %d", calls), fmt.Sprintf("send %d", calls)}, sp.gate.posts,
		"the server's posts once the calls came in one poll")
}

// TestRepliesRepostedTogether: the Receives of the replies one poll
// brought a requester are reposted in one post, not one each.
func TestRepliesRepostedTogether(t *testing.T) {
	const calls = 4
	c, sp := gatedRequester(t)
	callsAtOnce(t, c, sp.dialGate, calls)
	sp.dialGate.mu.Lock()
	defer sp.dialGate.mu.Unlock()
	var recvs []string
	for _, p := range sp.dialGate.posts {
		if strings.HasPrefix(p, "recv") {
			recvs = append(recvs, p)
		}
	}
	require.Equal(t, []string{fmt.Sprintf("recv %d", calls)}, recvs, "the requester's Receive posts (all its posts: %q)", sp.dialGate.posts)
}

// gatedRequester returns a requester whose completions pass a pollGate
// (sp.dialGate), connected to a responder that echoes every call inline.
func gatedRequester(t *testing.T) (*Conn, *protoProvider) {
	t.Helper()
	sp := newProtoProvider(false)
	sp.dialGate = &pollGate{}
	var read atomic.Int64
	c := inlinePair(t, &Config{Provider: sp, Binding: testBinding{}}, func(c *Conn) InlineHandler {
		return &echoInline{c: c}
	}, &read)
	return c, sp
}
