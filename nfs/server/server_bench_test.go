package server_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
)

// BenchmarkServerNull and BenchmarkServerGetattr: the round trip of a
// call the dispatch layer answers without go-nfs, through the client,
// over the soft provider (compare transport's BenchmarkCall/null-inline
// for the transport alone).
func BenchmarkServerNull(b *testing.B) {
	env := startClientEnv(b, nil)
	c, ctx := env.exp.Client, b.Context()
	b.ReportAllocs()
	for b.Loop() {
		if err := c.Null(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkServerGetattr(b *testing.B) {
	env := startClientEnv(b, nil)
	c, ctx := env.exp.Client, b.Context()
	root := env.exp.Root
	b.ReportAllocs()
	for b.Loop() {
		if _, err := c.Getattr(ctx, root); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServerLookup is a LOOKUP of a file in a directory the server
// holds open (the kernel client's stat of a name it has not cached):
// executed inline on the poll loop, a new handle made and sealed.
func BenchmarkServerLookup(b *testing.B) {
	env := startClientEnv(b, nil)
	require.NoError(b, os.Mkdir(filepath.Join(env.dir, "d"), 0o755))
	require.NoError(b, os.WriteFile(filepath.Join(env.dir, "d", "f"), nil, 0o644))
	c, ctx := env.exp.Client, b.Context()
	dir, _, err := c.Lookup(ctx, env.exp.Root, "d")
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.Lookup(ctx, dir, "f"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkServerIdentity is GETATTR and a 4 KiB READ through the client
// as three callers: root kept (no_root_squash, the server's own identity:
// the call runs in place), a user (uid and gid 1234: the call's file
// system work runs on an identity worker thread, see nfs/internal/creds),
// and root squashed (root_squash: anonymous, on a worker too). The ratios
// of user and squashed over root are what identity switching costs a
// call end to end. Without the privilege to switch, every caller runs in
// place and the three are alike.
func BenchmarkServerIdentity(b *testing.B) {
	for _, who := range []struct {
		name   string
		squash server.Squash
		auth   client.Auth
	}{
		{"root", server.NoRootSquash, client.Auth{UID: 0, GID: 0}},
		{"user", server.RootSquash, client.Auth{UID: 1234, GID: 1234, GIDs: []uint32{1234}}},
		{"squashed-root", server.RootSquash, client.Auth{UID: 0, GID: 0}},
	} {
		b.Run(who.name, func(b *testing.B) {
			env := startClientEnv(b, func(sc *server.Config, mo *client.MountOptions) {
				// AnonUID set: startServer keeps root_squash only then.
				sc.Squash, sc.AnonUID, sc.AnonGID = who.squash, 65534, 65534
				mo.Client.Auth = &who.auth
			})
			// A file every caller may read.
			name := filepath.Join(env.dir, "f")
			require.NoError(b, os.WriteFile(name, pattern(4096, 1), 0o644))
			c, ctx := env.exp.Client, b.Context()
			fh, _, err := c.Lookup(ctx, env.exp.Root, "f")
			require.NoError(b, err)
			buf := make([]byte, 4096)
			b.Run("getattr", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.Getattr(ctx, fh); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run("read-4KiB", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, _, err := c.Read(ctx, fh, 0, buf); err != nil {
						b.Fatal(err)
					}
				}
			})
		})
	}
}

// BenchmarkServerReaddirplus lists a directory of 2,000 files with
// READDIRPLUS (a handle and attributes per entry, as the Linux client's
// ls -l asks), through the client over the soft provider; one op is the
// whole listing, entries/s the rate.
func BenchmarkServerReaddirplus(b *testing.B) {
	const entries = 2000
	env := startClientEnv(b, nil)
	require.NoError(b, os.Mkdir(filepath.Join(env.dir, "list"), 0o755))
	for i := range entries {
		require.NoError(b, os.WriteFile(filepath.Join(env.dir, "list", fmt.Sprintf("f%04d", i)), nil, 0o644))
	}
	c, ctx := env.exp.Client, b.Context()
	dir, _, err := c.Lookup(ctx, env.exp.Root, "list")
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		ents, err := c.ReadDirAll(ctx, dir, true)
		if err != nil {
			b.Fatal(err)
		}
		if len(ents) != entries {
			b.Fatalf("%d entries listed, want %d", len(ents), entries)
		}
	}
	b.ReportMetric(float64(entries*b.N)/b.Elapsed().Seconds(), "entries/s")
}

// BenchmarkServerCreateRemove is a GUARDED CREATE of a file with its mode
// and a REMOVE of it (the kernel client's creat and unlink), through the
// client over the soft provider; one op is the pair.
func BenchmarkServerCreateRemove(b *testing.B) {
	env := startClientEnv(b, nil)
	c, ctx := env.exp.Client, b.Context()
	mode := uint32(0o644)
	how := client.CreateHow{Mode: client.Guarded, Attr: &client.SetAttr{Mode: &mode}}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := c.Create(ctx, env.exp.Root, "f", how); err != nil {
			b.Fatal(err)
		}
		if err := c.Remove(ctx, env.exp.Root, "f"); err != nil {
			b.Fatal(err)
		}
	}
}
