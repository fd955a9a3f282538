// The drop-in scenarios (see doc.go). Each is a function taking a stack
// (a verbs provider and a listen address), so the same bodies run on the
// software provider here and on rdma-core (transport/verbs/rdmacore over
// Soft-RoCE) in the VM.

package dropin_test

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/stretchr/testify/require"
)

// stack is where a drop-in scenario runs: the verbs provider of both ends and
// the address the responder listens on.
type stack struct {
	name string
	// provider is the verbs provider of both ends (Config.Provider, which
	// transport.Dial and transport.Listen require).
	provider verbs.Provider
	// addr is the listen address ("host:port", port 0 picks one); for
	// rdma-core, an address of an RDMA-capable interface.
	addr string
}

// softStack is the software provider over loopback.
var softStack = stack{name: "soft", provider: &soft.Provider{}, addr: "127.0.0.1:0"}

// config returns a copy of cfg (nil: the zero Config, every other field at
// its default) with the stack's provider.
func (s stack) config(cfg *transport.Config) *transport.Config {
	var c transport.Config
	if cfg != nil {
		c = *cfg
	}
	c.Provider = s.provider
	return &c
}

// ioGuard bounds every blocking call of a scenario, so that a transport bug
// fails the test instead of hanging it. It is a safety net, not a timing
// assertion: nothing in these tests comes close to it.
const ioGuard = 2 * time.Minute

// dial connects a requester to addr on the stack with cfg (nil: defaults).
func dial(t testing.TB, s stack, addr string, cfg *transport.Config) *transport.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), ioGuard)
	defer cancel()
	c, err := transport.Dial(ctx, addr, s.config(cfg))
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(ioGuard)))
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// recordingListener is a net.Listener over a *transport.Listener that keeps
// the responder Conns it hands out, so a test can read their Stats while an
// unmodified third-party server owns them.
type recordingListener struct {
	*transport.Listener
	mu    sync.Mutex
	conns []*transport.Conn
}

func listen(t testing.TB, s stack, cfg *transport.Config) *recordingListener {
	t.Helper()
	l, err := transport.Listen(s.addr, s.config(cfg))
	require.NoError(t, err)
	rl := &recordingListener{Listener: l}
	t.Cleanup(func() { _ = l.Close() })
	return rl
}

// Accept implements net.Listener.
func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.AcceptRDMA()
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	l.conns = append(l.conns, c)
	l.mu.Unlock()
	return c, nil
}

// serverStats returns the Stats of the i-th accepted Conn.
func (l *recordingListener) serverStats(t testing.TB, i int) transport.Stats {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	require.Greater(t, len(l.conns), i, "accepted connections")
	return l.conns[i].Stats()
}

// pattern returns n pseudo-random bytes that depend on seed: unlike a short
// periodic pattern, data moved to a wrong offset never compares equal.
func pattern(n int, seed uint64) []byte {
	p := make([]byte, n)
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	for i := 0; i < n; i += 8 {
		v := r.Uint64()
		for j := 0; j < 8 && i+j < n; j++ {
			p[i+j] = byte(v >> (8 * j))
		}
	}
	return p
}

// requireCleanEnd checks the error a server loop returned after its client
// went away: a clean end (nil or io.EOF).
func requireCleanEnd(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		require.ErrorIs(t, err, io.EOF)
	}
}
