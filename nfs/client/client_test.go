package client_test

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestClientProcedures calls every NFSv3 procedure and MOUNT's MNT, UMNT
// and EXPORT through the Go client against server.Server over soft, and
// checks each answer against the server's file system.
func TestClientProcedures(t *testing.T) {
	env := startClientEnv(t, nil)
	ctx := callCtx(t)
	c, root := env.exp.Client, env.exp.Root

	require.NoError(t, c.Null(ctx))
	ra, err := c.Getattr(ctx, root)
	require.NoError(t, err)
	require.Equal(t, client.TypeDir, ra.Type)

	// MKDIR, then CREATE in its three modes.
	mode := uint32(0o750)
	dir, da, err := c.Mkdir(ctx, root, "d", &client.SetAttr{Mode: &mode})
	require.NoError(t, err)
	require.NotEmpty(t, dir)
	if da != nil {
		require.Equal(t, client.TypeDir, da.Type)
	}
	fi, err := os.Stat(env.path("d"))
	require.NoError(t, err)
	require.True(t, fi.IsDir())

	size := uint64(0)
	fmode := uint32(0o640)
	f1, _, err := c.Create(ctx, dir, "unchecked", client.CreateHow{Mode: client.Unchecked, Attr: &client.SetAttr{Mode: &fmode, Size: &size}})
	require.NoError(t, err)
	_, _, err = c.Create(ctx, dir, "guarded", client.CreateHow{Mode: client.Guarded, Attr: &client.SetAttr{Mode: &fmode}})
	require.NoError(t, err)
	_, _, err = c.Create(ctx, dir, "guarded", client.CreateHow{Mode: client.Guarded})
	require.ErrorIs(t, err, fs.ErrExist, "GUARDED CREATE of an existing name")
	var ne *client.Error
	require.ErrorAs(t, err, &ne)
	require.Equal(t, client.StatusExist, ne.Status)
	xf, _, err := c.Create(ctx, dir, "exclusive", client.CreateHow{Mode: client.Exclusive, Verf: [8]byte{9, 8, 7, 6, 5, 4, 3, 2}})
	require.NoError(t, err)
	require.NotEmpty(t, xf)

	// LOOKUP and its errors.
	lf, la, err := c.Lookup(ctx, dir, "unchecked")
	require.NoError(t, err)
	require.Equal(t, []byte(f1), []byte(lf))
	require.NotNil(t, la)
	require.Equal(t, client.TypeReg, la.Type)
	_, _, err = c.Lookup(ctx, dir, "missing")
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorIs(t, err, syscall.ENOENT)

	// ACCESS.
	granted, err := c.Access(ctx, f1, client.AccessRead|client.AccessModify)
	require.NoError(t, err)
	require.Equal(t, uint32(client.AccessRead|client.AccessModify), granted&(client.AccessRead|client.AccessModify))

	// WRITE FILE_SYNC and UNSTABLE + COMMIT, READ back.
	data := pattern(10000, 1)
	wr, err := c.Write(ctx, f1, 0, data[:6000], client.FileSync)
	require.NoError(t, err)
	require.Equal(t, 6000, wr.Count)
	require.Equal(t, client.FileSync, wr.Committed)
	wr2, err := c.Write(ctx, f1, 6000, data[6000:], client.Unstable)
	require.NoError(t, err)
	require.Equal(t, 4000, wr2.Count)
	verf, err := c.Commit(ctx, f1, 0, 0)
	require.NoError(t, err)
	require.Equal(t, client.WriteVerf(env.srv.WriteVerifier()), verf)
	require.Equal(t, verf, wr2.Verf, "WRITE and COMMIT verifiers")
	got := make([]byte, 12000)
	n, eof, err := c.Read(ctx, f1, 0, got)
	require.NoError(t, err)
	require.True(t, eof)
	require.Equal(t, data, got[:n])
	n, eof, err = c.Read(ctx, f1, 9000, got[:100])
	require.NoError(t, err)
	require.Equal(t, 100, n)
	require.False(t, eof)
	require.Equal(t, data[9000:9100], got[:100])
	n, eof, err = c.Read(ctx, f1, 20000, got)
	require.NoError(t, err)
	require.Zero(t, n)
	require.True(t, eof)
	disk, err := os.ReadFile(env.path("d/unchecked"))
	require.NoError(t, err)
	require.Equal(t, data, disk)

	// SETATTR: mode and size, and a guard that fails.
	newMode, newSize := uint32(0o600), uint64(5000)
	mtime := time.Unix(1700000000, 0)
	wcc, err := c.Setattr(ctx, f1, &client.SetAttr{Mode: &newMode, Size: &newSize, Mtime: &mtime}, nil)
	require.NoError(t, err)
	require.NotNil(t, wcc.After)
	a, err := c.Getattr(ctx, f1)
	require.NoError(t, err)
	require.Equal(t, uint64(5000), a.Size)
	require.Equal(t, uint32(0o600), a.Mode&0o777)
	require.Equal(t, mtime.Unix(), a.Mtime.Unix())
	stale := time.Unix(1, 0)
	_, err = c.Setattr(ctx, f1, &client.SetAttr{Mode: &newMode}, &stale)
	require.ErrorAs(t, err, &ne)
	require.Equal(t, client.StatusNotSync, ne.Status)

	// SYMLINK and READLINK (the path comes back in the Write chunk).
	target := "unchecked"
	sl, _, err := c.Symlink(ctx, dir, "link", target, nil)
	require.NoError(t, err)
	got2, err := c.Readlink(ctx, sl)
	require.NoError(t, err)
	require.Equal(t, target, got2)

	// LINK.
	require.NoError(t, c.Link(ctx, f1, dir, "hard"))
	fa, err := os.Stat(env.path("d/unchecked"))
	require.NoError(t, err)
	fb, err := os.Stat(env.path("d/hard"))
	require.NoError(t, err)
	require.True(t, os.SameFile(fa, fb), "LINK made no hard link")

	// RENAME.
	require.NoError(t, c.Rename(ctx, dir, "guarded", root, "moved"))
	_, err = os.Stat(env.path("moved"))
	require.NoError(t, err)
	_, err = os.Stat(env.path("d/guarded"))
	require.ErrorIs(t, err, fs.ErrNotExist)

	// READDIR and READDIRPLUS.
	want := []string{"exclusive", "hard", "link", "unchecked"}
	for _, plus := range []bool{false, true} {
		ents, err := c.ReadDirAll(ctx, dir, plus)
		require.NoError(t, err)
		var names []string
		for _, e := range ents {
			names = append(names, e.Name)
			if plus {
				require.NotNil(t, e.Attr, e.Name)
				require.NotEmpty(t, e.FH, e.Name)
			}
		}
		require.ElementsMatch(t, want, names, "plus=%v", plus)
	}

	// RMDIR of a non-empty directory (NFS3ERR_NOTEMPTY, as knfsd: the
	// server corrects go-nfs's NFS3ERR_IO), REMOVE, RMDIR.
	err = c.Rmdir(ctx, root, "d")
	require.ErrorAs(t, err, &ne)
	require.Equal(t, client.StatusNotEmpty, ne.Status)
	require.ErrorIs(t, err, syscall.ENOTEMPTY)
	_, err = os.Stat(env.path("d/unchecked"))
	require.NoError(t, err, "RMDIR of a non-empty directory removed something")
	for _, name := range want {
		require.NoError(t, c.Remove(ctx, dir, name))
	}
	require.ErrorIs(t, c.Remove(ctx, dir, "hard"), fs.ErrNotExist)
	require.NoError(t, c.Rmdir(ctx, root, "d"))
	_, err = os.Stat(env.path("d"))
	require.ErrorIs(t, err, fs.ErrNotExist)

	// FSSTAT, FSINFO, PATHCONF.
	st, err := c.Fsstat(ctx, root)
	require.NoError(t, err)
	require.NotZero(t, st.TotalBytes)
	info, err := c.Fsinfo(ctx, root)
	require.NoError(t, err)
	require.NotZero(t, info.RTMax)
	require.NotZero(t, info.WTMax)
	rs, ws := c.IOSize()
	require.LessOrEqual(t, rs, int(info.RTMax))
	require.LessOrEqual(t, ws, int(info.WTMax))
	pc, err := c.Pathconf(ctx, root)
	require.NoError(t, err)
	require.NotZero(t, pc.NameMax)

	// A handle the server never gave.
	_, err = c.Getattr(ctx, client.FH(bytes.Repeat([]byte{0xee}, 32)))
	require.ErrorAs(t, err, &ne)
	require.Contains(t, []client.Status{client.StatusStale, client.StatusBadHandle}, ne.Status)

	// MOUNT: MNT, UMNT and EXPORT (answered by the server's dispatch
	// layer: go-nfs has none; server.Config.Exports unset lists "/").
	mc, err := client.DialMount(ctx, env.srv.TCPAddr().String(), nil)
	require.NoError(t, err)
	defer mc.Close()
	require.NoError(t, mc.Null(ctx))
	fh, _, err := mc.Mnt(ctx, "/")
	require.NoError(t, err)
	require.Equal(t, []byte(root), []byte(fh))
	// A refusal is named as RFC 1813 §5.1.5 names it, in plain words too.
	_, _, err = mc.Mnt(ctx, "/nope")
	require.ErrorAs(t, err, &ne)
	require.True(t, ne.Mount)
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.Equal(t, "nfs: MOUNT3 MNT /nope: no such file or directory (MNT3ERR_NOENT)", err.Error())
	require.NoError(t, mc.Umnt(ctx, "/"))
	exports, err := mc.Export(ctx)
	require.NoError(t, err)
	require.Equal(t, []client.ExportEntry{{Dir: "/"}}, exports)
}

// TestClientErrorMapping checks the *client.Error of each status and its
// errors.Is targets.
func TestClientErrorMapping(t *testing.T) {
	for _, tc := range []struct {
		st     client.Status
		target error
	}{
		{client.StatusNoEnt, fs.ErrNotExist},
		{client.StatusExist, fs.ErrExist},
		{client.StatusAccess, fs.ErrPermission},
		{client.StatusPerm, fs.ErrPermission},
		{client.StatusNotEmpty, syscall.ENOTEMPTY},
		{client.StatusNameTooLong, syscall.ENAMETOOLONG},
		{client.StatusStale, syscall.ESTALE},
		{client.StatusNotDir, syscall.ENOTDIR},
		{client.StatusIsDir, syscall.EISDIR},
		{client.StatusROFS, syscall.EROFS},
		{client.StatusDQuot, syscall.EDQUOT},
	} {
		err := error(&client.Error{Proc: "NFS3 LOOKUP", Status: tc.st})
		require.ErrorIs(t, err, tc.target, tc.st.String())
	}
	err := error(&client.Error{Proc: "NFS3 READ", Status: client.StatusBadHandle})
	require.False(t, errors.Is(err, fs.ErrNotExist))
	require.Equal(t, "nfs: NFS3 READ: illegal file handle (NFS3ERR_BADHANDLE)", err.Error())
	require.Equal(t, "nfsstat3(12345)", client.Status(12345).String())
	mnt := &client.Error{Proc: "MOUNT3 MNT /x", Status: client.StatusAccess, Mount: true}
	require.Equal(t, "nfs: MOUNT3 MNT /x: permission denied (MNT3ERR_ACCES)", mnt.Error())
	require.Equal(t, "MNT3ERR_ACCES", mnt.StatusName())
	require.ErrorIs(t, mnt, fs.ErrPermission)
}

// TestClientAuth checks the credential of every call as the server
// receives it: AUTH_SYS with the configured identity, or AUTH_NONE.
func TestClientAuth(t *testing.T) {
	for _, auth := range []client.Auth{
		{UID: 1234, GID: 56, GIDs: []uint32{7, 8}, MachineName: "client11"},
		{None: true},
	} {
		var mu sync.Mutex
		var creds []xdr.OpaqueAuth
		env := startClientEnv(t, func(s *server.Config, o *client.MountOptions) {
			s.OnCall = func(network string, h *xdr.CallHeader) {
				if network != server.NetRDMA {
					return
				}
				mu.Lock()
				creds = append(creds, xdr.OpaqueAuth{Flavor: h.Cred.Flavor, Body: append([]byte(nil), h.Cred.Body...)})
				mu.Unlock()
			}
			o.Client.Auth = &auth
		})
		_, err := env.exp.Client.Getattr(callCtx(t), env.exp.Root)
		require.NoError(t, err)
		mu.Lock()
		require.NotEmpty(t, creds)
		for _, c := range creds {
			if auth.None {
				require.Equal(t, xdr.FlavorNone, c.Flavor)
				require.Empty(t, c.Body)
				continue
			}
			require.Equal(t, xdr.FlavorSys, c.Flavor)
			var sys xdr.AuthSys
			require.NoError(t, sys.Unmarshal(c.Body))
			require.Equal(t, uint32(1234), sys.UID)
			require.Equal(t, uint32(56), sys.GID)
			require.Equal(t, []uint32{7, 8}, sys.GIDs)
			require.Equal(t, "client11", string(sys.MachineName))
		}
		mu.Unlock()
	}
}
