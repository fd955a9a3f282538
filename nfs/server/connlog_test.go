package server_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/internal/nfstest"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// syncBuffer is a bytes.Buffer safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestConnectionLog: a connection's end is one log line with its peer,
// duration, calls and why it ended; MNT is logged with its outcome.
func TestConnectionLog(t *testing.T) {
	var logs syncBuffer
	env := nfstest.Start(t, func(sc *server.Config, _ *client.MountOptions) {
		sc.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	})
	require.Contains(t, logs.String(), `msg="nfs: MOUNT"`)
	require.Contains(t, logs.String(), "outcome=MNT3_OK")

	ctx, cancel := context.WithTimeout(context.Background(), nfstest.Guard)
	defer cancel()
	conn, err := transport.Dial(ctx, env.Srv.RDMAAddr().String(), &transport.Config{Provider: &soft.Provider{}, Binding: nfs.Binding{}})
	require.NoError(t, err)
	local := conn.LocalAddr().String()
	h := xdr.CallHeader{XID: 9, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcNull,
		Cred: xdr.OpaqueAuth{Flavor: xdr.FlavorNone}, Verf: xdr.OpaqueAuth{Flavor: xdr.FlavorNone}}
	require.NoError(t, conn.WriteMsg(h.Append(nil)))
	_, err = conn.ReadMsg(nil)
	require.NoError(t, err)
	require.NoError(t, conn.Close())

	var line string
	for end := time.Now().Add(nfstest.Guard); line == "" && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		for _, l := range strings.Split(logs.String(), "\n") {
			if strings.Contains(l, `msg="nfs: connection closed"`) && strings.Contains(l, "remote="+local) {
				line = l
			}
		}
	}
	require.NotEmpty(t, line, "no line for the connection's end in:\n%s", logs.String())
	for _, want := range []string{"network=rdma", "duration=", "calls=1", "replies=1", `why="closed by the peer"`} {
		require.Contains(t, line, want)
	}
}
