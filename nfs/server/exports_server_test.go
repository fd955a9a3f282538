package server_test

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/internal/nfstest"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/nfs/server/exports"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// exportsRig is a Server with several exports from an exports file.
type exportsRig struct {
	srv      *server.Server
	dirs     map[string]string             // export path: local directory
	handlers map[string]*server.DirHandler // export path: handler
}

// newExportsRig serves the exports of text (paths under /srv, each a
// fresh local directory).
func newExportsRig(t *testing.T, text string) *exportsRig {
	t.Helper()
	r := &exportsRig{dirs: map[string]string{}, handlers: map[string]*server.DirHandler{}}
	exps := r.exports(t, text)
	r.srv = nfstest.Serve(t, server.Config{Exports: exps})
	return r
}

// exports parses text and gives each export its directory and handler,
// made once per path.
func (r *exportsRig) exports(t *testing.T, text string) []server.Export {
	t.Helper()
	tab, err := exports.Parse("exports", []byte(text))
	require.NoError(t, err)
	var exps []server.Export
	for _, e := range tab.Exports {
		h := r.handlers[e.Path]
		if h == nil {
			dir := t.TempDir()
			require.NoError(t, os.Chmod(dir, 0o777)) // squashed callers create too
			d, err := server.DirFS(dir)
			require.NoError(t, err)
			t.Cleanup(func() { _ = d.Close() })
			h, err = server.NewDirHandler(d, server.DirHandlerOptions{})
			require.NoError(t, err)
			r.dirs[e.Path], r.handlers[e.Path] = dir, h
		}
		exps = append(exps, server.Export{Path: e.Path, Handler: h, Rules: e.Rules})
	}
	return exps
}

// mount mounts path with the Go client as uid 0.
func (r *exportsRig) mount(t *testing.T, path string) (*client.Export, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), nfstest.Guard)
	defer cancel()
	_, port, err := net.SplitHostPort(r.srv.RDMAAddr().String())
	require.NoError(t, err)
	p, err := strconv.Atoi(port)
	require.NoError(t, err)
	exp, err := client.Mount(ctx, "127.0.0.1", path, &client.MountOptions{
		Client: client.Config{Transport: transport.Config{Provider: &soft.Provider{}}, Auth: &client.Auth{UID: 0, GID: 0}}, RDMAPort: p, MountAddr: r.srv.TCPAddr().String()})
	if err == nil {
		t.Cleanup(func() { _ = exp.Close() })
	}
	return exp, err
}

// requireStatus requires err to be an *client.Error with status st.
func requireStatus(t *testing.T, err error, st client.Status, what string) {
	t.Helper()
	var ce *client.Error
	require.True(t, errors.As(err, &ce), "%s: %v, want %v", what, err, st)
	require.Equal(t, st, ce.Status, what)
}

// TestExports: several exports with client rules (exports(5)): EXPORT
// lists them with their clients; MNT gives an export's root or a
// directory below it to a client a rule admits, MNT3ERR_ACCES to one no
// rule admits, MNT3ERR_NOENT for a path no export holds, MNT3ERR_NOTDIR
// for a file; a handle of an export the client may not use is stale to it;
// ro refuses changes with NFS3ERR_ROFS; all_squash makes root's files the
// anonymous user's; SetExports applies new rules to the next call and
// makes a removed export's handles stale, and a bad table changes nothing.
func TestExports(t *testing.T) {
	requireIDSwitching(t)
	r := newExportsRig(t, `
/srv/a   127.0.0.1(rw,all_squash,anonuid=4321,anongid=4322)
/srv/ro  127.0.0.0/8(ro) 10.0.0.0/8(rw)
/srv/b   10.0.0.0/8(rw)
`)
	ctx := callCtx(t)
	mc, err := client.DialMount(ctx, r.srv.TCPAddr().String(), nil)
	require.NoError(t, err)
	defer mc.Close()
	list, err := mc.Export(ctx)
	require.NoError(t, err)
	require.Equal(t, []client.ExportEntry{
		{Dir: "/srv/a", Groups: []string{"127.0.0.1"}},
		{Dir: "/srv/ro", Groups: []string{"127.0.0.0/8", "10.0.0.0/8"}},
		{Dir: "/srv/b", Groups: []string{"10.0.0.0/8"}},
	}, list)

	require.NoError(t, os.Mkdir(filepath.Join(r.dirs["/srv/a"], "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(r.dirs["/srv/a"], "file"), nil, 0o644))
	for path, want := range map[string]nfs3.MountStatus{
		"/srv/a": nfs3.MntOK, "/srv/a/sub": nfs3.MntOK, "/srv/a/file": nfs3.MntErrNotDir, "/srv/a/none": nfs3.MntErrNoEnt,
		"/srv/b": nfs3.MntErrAcces, "/srv": nfs3.MntErrNoEnt, "/nope": nfs3.MntErrNoEnt, "/srv/ro": nfs3.MntOK,
	} {
		_, _, err := mc.Mnt(ctx, path)
		if want == nfs3.MntOK {
			require.NoError(t, err, path)
		} else {
			requireStatus(t, err, client.Status(want), "MNT "+path)
		}
	}

	// all_squash: root's new file belongs to anonuid:anongid.
	a, err := r.mount(t, "/srv/a")
	require.NoError(t, err)
	f, err := a.Create(ctx, "new")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	fi, err := os.Stat(filepath.Join(r.dirs["/srv/a"], "new"))
	require.NoError(t, err)
	st := fi.Sys().(*syscall.Stat_t)
	require.Equal(t, [2]uint32{4321, 4322}, [2]uint32{st.Uid, st.Gid}, "owner of a file root created under all_squash")

	// A handle of /srv/b, which no rule admits 127.0.0.1 to, is stale.
	_, err = a.Client.Getattr(ctx, client.FH(server.RootHandle(r.handlers["/srv/b"])))
	requireStatus(t, err, client.StatusStale, "GETATTR of another export's root")

	// ro: changes are NFS3ERR_ROFS, reading works.
	ro, err := r.mount(t, "/srv/ro")
	require.NoError(t, err)
	_, err = ro.Create(ctx, "x")
	requireStatus(t, err, client.StatusROFS, "CREATE under ro")
	_, err = ro.ReadDir(ctx, ".")
	require.NoError(t, err)

	// A bad table is refused and changes nothing.
	require.Error(t, r.srv.SetExports([]server.Export{{Path: "relative", Handler: r.handlers["/srv/a"]}}))
	_, err = a.Client.Getattr(ctx, a.Root)
	require.NoError(t, err)

	// Reload: /srv/ro turns rw for 127.0.0.1, /srv/a goes away.
	require.NoError(t, r.srv.SetExports(r.exports(t, "/srv/ro 127.0.0.1(rw,no_root_squash)\n/srv/b 10.0.0.0/8(rw)\n")))
	f, err = ro.Create(ctx, "x")
	require.NoError(t, err, "CREATE after the rule turned rw")
	require.NoError(t, f.Close())
	_, err = a.Client.Getattr(ctx, a.Root)
	requireStatus(t, err, client.StatusStale, "GETATTR in an export removed")
	_, _, err = mc.Mnt(ctx, "/srv/a")
	requireStatus(t, err, client.Status(nfs3.MntErrNoEnt), "MNT of an export removed")
}

// TestExportsConfig: New refuses Handler and Exports together, no export,
// two exports of one path or of one directory.
func TestExportsConfig(t *testing.T) {
	d, err := server.DirFS(t.TempDir())
	require.NoError(t, err)
	defer d.Close()
	h, err := server.NewDirHandler(d, server.DirHandlerOptions{})
	require.NoError(t, err)
	d2, err := server.DirFS(t.TempDir())
	require.NoError(t, err)
	defer d2.Close()
	h2, err := server.NewDirHandler(d2, server.DirHandlerOptions{})
	require.NoError(t, err)
	for _, cfg := range []server.Config{
		{},
		{Handler: h, Exports: []server.Export{{Path: "/a", Handler: h2}}},
		{Exports: []server.Export{{Path: "/a", Handler: h}, {Path: "/a/", Handler: h2}}},
		{Exports: []server.Export{{Path: "/a", Handler: h}, {Path: "/b", Handler: h}}},
		{Exports: []server.Export{{Path: "/a"}}},
	} {
		cfg.RDMAAddr, cfg.TCPAddr = "127.0.0.1:0", "127.0.0.1:0"
		cfg.Transport.Provider = &soft.Provider{}
		cfg.Rpcbind.Disable = true
		srv, err := server.New(cfg)
		if err == nil {
			_ = srv.Close()
		}
		require.Error(t, err, "%+v", cfg.Exports)
	}
}
