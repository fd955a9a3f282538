package client_test

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// requireConfigError checks that err is the *transport.ConfigError of
// field, matching transport.ErrConfig, with the message of nfs settings.
func requireConfigError(t *testing.T, err error, field, what string) {
	t.Helper()
	var ce *transport.ConfigError
	require.ErrorIs(t, err, transport.ErrConfig, "%s: %s", field, what)
	require.True(t, errors.As(err, &ce), "%s: %s: %v", field, what, err)
	require.Equal(t, field, ce.Field, what)
	require.True(t, strings.HasPrefix(err.Error(), "nfs: "+field+" "), "%s: %s: %v", field, what, err)
	require.Contains(t, err.Error(), " out of range ", what)
}

// TestConfigCheck: every field of Config and MountOptions out of its
// range makes Check, Dial, New, NewCaller and Mount fail with a
// *transport.ConfigError naming it (errors.Is ErrConfig), before they
// connect: the addresses given would refuse the connection, and that
// error does not come. The ends of each range are accepted.
func TestConfigCheck(t *testing.T) {
	ctx := callCtx(t)
	const refused = "127.0.0.1:1"
	for _, tc := range []struct {
		field string // as Config's; MountOptions.Client's under Mount
		set   func(*client.Config)
	}{
		{"Config.Transport.InlineSend", func(c *client.Config) { c.Transport.InlineSend = 100 }},
		{"Config.Transport.InlineRecv", func(c *client.Config) { c.Transport.InlineRecv = 5000 }},
		{"Config.Transport.Credits", func(c *client.Config) { c.Transport.Credits = 100000 }},
		{"Config.Transport.MaxRPCSize", func(c *client.Config) { c.Transport.MaxRPCSize = 4096 }},
		{"Config.Transport.MaxRPCSize", func(c *client.Config) { c.Transport.MaxRPCSize = transport.MaxRPCSizeMax + 1 }},
		{"Config.Transport.Limits.MaxChunkLength", func(c *client.Config) { c.Transport.Limits.MaxChunkLength = -1 }},
		{"Config.Transport.Reconnect.MaxBackoff", func(c *client.Config) { c.Transport.Reconnect.MaxBackoff = -time.Second }},
		{"Config.Auth.GIDs", func(c *client.Config) { c.Auth = &client.Auth{GIDs: make([]uint32, 17)} }},
		{"Config.Auth.MachineName", func(c *client.Config) { c.Auth = &client.Auth{MachineName: strings.Repeat("m", 256)} }},
		{"Config.RSize", func(c *client.Config) { c.RSize = -1 }},
		{"Config.RSize", func(c *client.Config) { c.RSize = client.MinIOSize - 1 }},
		{"Config.RSize", func(c *client.Config) { c.RSize = client.MaxIOSize(0) + 1 }},
		{"Config.WSize", func(c *client.Config) { c.WSize = 2 << 20 }},
		{"Config.WSize", func(c *client.Config) { c.Transport.MaxRPCSize, c.WSize = nfs.MinMaxRPCSize, 8192 }},
		{"Config.MaxInFlight", func(c *client.Config) { c.MaxInFlight = -3 }},
		{"Config.MaxInFlight", func(c *client.Config) { c.MaxInFlight = client.MaxInFlightMax + 1 }},
	} {
		cfg := client.Config{Transport: transport.Config{Provider: &soft.Provider{}}}
		tc.set(&cfg)
		requireConfigError(t, cfg.Check(), tc.field, "Check")
		c, err := client.Dial(ctx, refused, &cfg)
		require.Nil(t, c)
		requireConfigError(t, err, tc.field, "Dial")
		c, err = client.New(nil, &cfg)
		require.Nil(t, c)
		requireConfigError(t, err, tc.field, "New")
		c, err = client.NewCaller(nil, &cfg)
		require.Nil(t, c)
		requireConfigError(t, err, tc.field, "NewCaller")
		exp, err := client.Mount(ctx, "127.0.0.1", "/", &client.MountOptions{Client: cfg, MountAddr: refused, RDMAPort: 1})
		require.Nil(t, exp)
		requireConfigError(t, err, "MountOptions.Client"+strings.TrimPrefix(tc.field, "Config"), "Mount")
	}
	for _, port := range []int{-1, 65536} {
		exp, err := client.Mount(ctx, "127.0.0.1", "/", &client.MountOptions{RDMAPort: port, MountAddr: refused,
			Client: client.Config{Transport: transport.Config{Provider: &soft.Provider{}}}})
		require.Nil(t, exp)
		requireConfigError(t, err, "MountOptions.RDMAPort", "Mount")
	}
	bad := &client.Auth{GIDs: make([]uint32, 17)}
	mc, err := client.DialMount(ctx, refused, bad)
	require.Nil(t, mc)
	requireConfigError(t, err, "Auth.GIDs", "DialMount")
	mc, err = client.NewMountClientCaller(nil, bad)
	require.Nil(t, mc)
	requireConfigError(t, err, "Auth.GIDs", "NewMountClientCaller")

	for name, cfg := range map[string]client.Config{
		"zero":          {},
		"ends":          {RSize: client.MinIOSize, WSize: client.MaxIOSize(0), MaxInFlight: client.MaxInFlightMax},
		"default size":  {RSize: client.DefaultIOSize, WSize: client.DefaultIOSize},
		"small message": {Transport: transport.Config{MaxRPCSize: nfs.MinMaxRPCSize}, RSize: 4096, WSize: 4096},
		"AUTH_SYS ends": {Auth: &client.Auth{GIDs: make([]uint32, 16), MachineName: strings.Repeat("m", 255)}},
		"AUTH_NONE":     {Auth: &client.Auth{None: true, GIDs: make([]uint32, 17)}},
	} {
		require.NoError(t, cfg.Check(), name)
		c, err := client.NewCaller(nil, &cfg)
		require.NoError(t, err, name)
		rsize, wsize := c.IOSize()
		if cfg.RSize != 0 {
			require.Equal(t, cfg.RSize, rsize, "%s: the rsize given is the rsize used", name)
			require.Equal(t, cfg.WSize, wsize, "%s: the wsize given is the wsize used", name)
		}
	}
	require.Equal(t, 4096, client.MaxIOSize(nfs.MinMaxRPCSize))
	require.GreaterOrEqual(t, client.MaxIOSize(0), client.DefaultIOSize)
}

// TestSmallestMaxRPC: a server and a client at the smallest MaxRPCSize
// (nfs.MinMaxRPCSize) move data in READs and WRITEs of 4 KiB.
func TestSmallestMaxRPC(t *testing.T) {
	env := startClientEnv(t, func(sc *server.Config, mo *client.MountOptions) {
		sc.Transport.MaxRPCSize = nfs.MinMaxRPCSize
		mo.Client.Transport.MaxRPCSize = nfs.MinMaxRPCSize
	})
	rsize, wsize := env.exp.Client.IOSize()
	require.Equal(t, [2]int{4096, 4096}, [2]int{rsize, wsize})
	want := pattern(100<<10+7, 3)
	f, err := env.exp.Create(env.ctx, "f")
	require.NoError(t, err)
	_, err = f.Write(want)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	got, err := os.ReadFile(env.path("f"))
	require.NoError(t, err)
	require.Equal(t, want, got)
	fh, _, err := env.exp.Lookup(env.ctx, "f", true)
	require.NoError(t, err)
	p := make([]byte, 64<<10)
	n, _, err := env.exp.Client.Read(env.ctx, fh, 0, p)
	require.NoError(t, err)
	require.Equal(t, 4096, n, "a READ is bounded by the rsize")
	require.Equal(t, want[:n], p[:n])
}

// registeredBytes is what prov has registered now.
func registeredBytes(t *testing.T, prov verbs.Provider) int64 {
	t.Helper()
	m, ok := prov.(verbs.MemoryMeter)
	require.True(t, ok, "%T counts no registered memory", prov)
	return m.RegisteredBytes()
}

// TestReadCountBounded: no READ registers more than what was negotiated.
// Client.Read of a buffer larger than the rsize asks for the rsize (a
// Write chunk of the rsize, registered in the buffer); a READ call made
// on the connection with a count of 0xffffffff (which once made the
// client lay out 8 GiB of chunk memory) or any count over MaxRPCSize
// fails with transport.ErrMessageTooLarge before anything is registered
// or sent, and the connection goes on; a READDIR of count 0xffffffff is
// offered a Reply chunk of at most MaxRPCSize.
func TestReadCountBounded(t *testing.T) {
	prov := &soft.Provider{}
	env := startClientEnv(t, func(_ *server.Config, mo *client.MountOptions) {
		mo.Client.Transport.Provider = prov
		mo.Client.RSize = 256 << 10
	})
	want := pattern(3<<20, 9)
	require.NoError(t, os.WriteFile(env.path("big"), want, 0o644))
	fh, _, err := env.exp.Lookup(env.ctx, "big", true)
	require.NoError(t, err)
	c, conn := env.exp.Client, env.exp.Client.Conn()

	p := make([]byte, 3<<20)
	st0 := conn.Stats()
	n, _, err := c.Read(env.ctx, fh, 0, p)
	require.NoError(t, err)
	require.Equal(t, 256<<10, n, "a READ of more than the rsize asks for the rsize")
	require.Equal(t, want[:n], p[:n])
	require.LessOrEqual(t, conn.Stats().ChunkBytesOffered-st0.ChunkBytesOffered, uint64(256<<10))

	// Raw READ calls on the connection, with the binding's sizes.
	readCall := func(xid, count uint32) []byte {
		msg := (&xdr.CallHeader{XID: xid, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcRead,
			Cred: xdr.OpaqueAuth{Flavor: xdr.FlavorNone}, Verf: xdr.OpaqueAuth{Flavor: xdr.FlavorNone}}).Append(nil)
		return (&nfs3.ReadArgs{File: fh, Offset: 0, Count: count}).Append(msg)
	}
	reg0, st0 := registeredBytes(t, prov), conn.Stats()
	var ms runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&ms)
	heap0 := ms.HeapAlloc
	for i, count := range []uint32{0xffffffff, 1 << 30, transport.DefaultMaxRPCSize + 1} {
		_, err := conn.Call(env.ctx, readCall(uint32(0x5000+i), count), nil)
		require.ErrorIs(t, err, transport.ErrMessageTooLarge, "READ of %d", count)
		_, _, err = conn.CallInto(env.ctx, readCall(uint32(0x5100+i), count), nil, p)
		require.ErrorIs(t, err, transport.ErrMessageTooLarge, "READ of %d into a buffer", count)
	}
	require.Equal(t, reg0, registeredBytes(t, prov), "registered memory after the refused READs")
	st := conn.Stats()
	require.Equal(t, st0.ChunkBytesOffered, st.ChunkBytesOffered)
	require.Equal(t, st0.Sends, st.Sends, "nothing was sent")
	runtime.GC()
	runtime.ReadMemStats(&ms)
	require.Less(t, int64(ms.HeapAlloc)-int64(heap0), int64(8<<20), "heap growth")

	// The connection goes on; a READDIR of any count gets a bounded
	// Reply chunk (the server answers within its own limits).
	n, _, err = c.Read(env.ctx, fh, 1<<20, p[:64<<10])
	require.NoError(t, err)
	require.Equal(t, want[1<<20:1<<20+n], p[:n])
	root := env.exp.Root
	st0 = conn.Stats()
	page, err := c.Readdir(env.ctx, root, 0, [8]byte{}, 0xffffffff)
	require.NoError(t, err)
	require.NotEmpty(t, page.Entries)
	require.LessOrEqual(t, conn.Stats().ChunkBytesOffered-st0.ChunkBytesOffered, uint64(transport.DefaultMaxRPCSize))
}
