package server_test

import (
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// TestConfigCheck: every field of Config out of its range makes New fail
// with a *transport.ConfigError naming it (errors.Is ErrConfig) before it
// listens: both addresses are a port in use, which listening would have
// reported instead. Values at the ends of the ranges, the zero Config's
// defaults and the documented meanings of 0 and negatives still serve.
func TestConfigCheck(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer busy.Close()
	h := newTestDir(t)
	for _, tc := range []struct {
		field string
		set   func(*server.Config)
	}{
		{"Config.Transport.InlineSend", func(c *server.Config) { c.Transport.InlineSend = 100 }},
		{"Config.Transport.InlineRecv", func(c *server.Config) { c.Transport.InlineRecv = 300 << 10 }},
		{"Config.Transport.Credits", func(c *server.Config) { c.Transport.Credits = 100000 }},
		{"Config.Transport.GrantPolicy.Max", func(c *server.Config) { c.Transport.GrantPolicy.Max = transport.MaxCredits + 1 }},
		{"Config.Transport.Limits.MaxSegments", func(c *server.Config) { c.Transport.Limits.MaxSegments = -1 }},
		{"Config.Transport.MaxRPCSize", func(c *server.Config) { c.Transport.MaxRPCSize = 100 }},
		{"Config.Transport.MaxRPCSize", func(c *server.Config) { c.Transport.MaxRPCSize = nfs.MinMaxRPCSize - 1 }},
		{"Config.Transport.MaxRPCSize", func(c *server.Config) { c.Transport.MaxRPCSize = -1 }},
		{"Config.Transport.Memory.Calls", func(c *server.Config) { c.Transport.Memory.Calls = 1 }},
		{"Config.Transport.Reconnect.Backoff", func(c *server.Config) { c.Transport.Reconnect.Backoff = -1 }},
		{"Config.Rpcbind.Timeout", func(c *server.Config) { c.Rpcbind.Timeout = -time.Second }},
		{"Config.DRCSize", func(c *server.Config) { c.DRCSize = -1 }},
		{"Config.DRCSize", func(c *server.Config) { c.DRCSize = server.MaxDRCSize + 1 }},
		{"Config.DRCMaxAge", func(c *server.Config) { c.DRCMaxAge = -time.Second }},
		{"Config.ConcurrentCalls", func(c *server.Config) { c.ConcurrentCalls = -3 }},
		{"Config.ConcurrentCalls", func(c *server.Config) { c.ConcurrentCalls = server.MaxConcurrentCalls + 1 }},
		{"Config.Squash", func(c *server.Config) { c.Squash = server.AllSquash + 1 }},
		{"Config.AnonUID", func(c *server.Config) { c.AnonUID = 1<<32 - 1 }},
		{"Config.AnonGID", func(c *server.Config) { c.AnonGID = 1<<32 - 1 }},
		{"Config.Exports", func(c *server.Config) {
			c.Handler, c.Exports = nil, []server.Export{{Path: "/a", Handler: c.Handler}, {Path: "", Handler: c.Handler}}
		}},
		{"Config.Exports", func(c *server.Config) {
			c.Handler, c.Exports = nil, []server.Export{{Path: "/" + strings.Repeat("x", 1024), Handler: c.Handler}}
		}},
	} {
		cfg := server.Config{Handler: h, Transport: transport.Config{Provider: &soft.Provider{}},
			RDMAAddr: busy.Addr().String(), TCPAddr: busy.Addr().String(), Rpcbind: server.RpcbindConfig{Disable: true}}
		tc.set(&cfg)
		srv, err := server.New(cfg)
		if srv != nil {
			_ = srv.Close()
		}
		var ce *transport.ConfigError
		require.ErrorIs(t, err, transport.ErrConfig, tc.field)
		require.True(t, errors.As(err, &ce), tc.field)
		require.Equal(t, tc.field, ce.Field)
		require.True(t, strings.HasPrefix(err.Error(), "nfs: "+tc.field+" "), "%s: %v", tc.field, err)
		require.Contains(t, err.Error(), " out of range ", tc.field)
	}

	for name, set := range map[string]func(*server.Config){
		"zero": func(*server.Config) {},
		"ends": func(c *server.Config) {
			c.ConcurrentCalls, c.DRCSize, c.AnonUID, c.AnonGID = server.MaxConcurrentCalls, server.MaxDRCSize, 1<<32-2, 1<<32-2
		},
		"one at a time":    func(c *server.Config) { c.ConcurrentCalls = 1 },
		"smallest message": func(c *server.Config) { c.Transport.MaxRPCSize = nfs.MinMaxRPCSize },
		"largest message":  func(c *server.Config) { c.Transport.MaxRPCSize = transport.MaxRPCSizeMax },
		"longest export": func(c *server.Config) {
			c.Handler, c.Exports = nil, []server.Export{{Path: "/" + strings.Repeat("x", 1023), Handler: c.Handler}}
		},
		"negatives documented": func(c *server.Config) {
			c.Transport.DirectPlacementMin, c.Transport.PostAsyncMin, c.Transport.AcceptBacklog, c.Transport.MaxConns = -1, -1, -1, -1
		},
	} {
		cfg := server.Config{Handler: h, Transport: transport.Config{Provider: &soft.Provider{}},
			RDMAAddr: "127.0.0.1:0", TCPAddr: "127.0.0.1:0", Rpcbind: server.RpcbindConfig{Disable: true}, Squash: server.NoRootSquash}
		set(&cfg)
		srv, err := server.New(cfg)
		require.NoError(t, err, name)
		require.NoError(t, srv.Close(), name)
	}
}
