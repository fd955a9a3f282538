//go:build e2eguest

package knfsdclient_test

import (
	"context"
	"errors"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
)

// NFS version 3 (RFC 1813 §3), for the calls the tests send raw.
const (
	nfsProg = nfsv3.NFS_PROGRAM_PROGRAM_NUMBER // 100003
	nfsVers = 3

	nfsProcRead = 6
)

// nfsClient is package nfs/client on the session's connection, with
// methods that fail t unless knfsd answers NFS3_OK (or what the method
// says it returns). The calls go through transport.Conn.Call, the same
// transport path as the raw calls of rpcClient.
type nfsClient struct {
	t testing.TB
	c *client.Client
}

func fh(h []byte) nfsv3.NfsFh3 { return nfsv3.NfsFh3{Data: h} }

func (c nfsClient) ctx() context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), ioGuard)
	c.t.Cleanup(cancel)
	return ctx
}

// null calls NFSPROC3_NULL, whose reply has no results.
func (c nfsClient) null() {
	c.t.Helper()
	require.NoError(c.t, c.c.Null(c.ctx()), "NULL")
}

func (c nfsClient) getattr(h []byte) *client.Attr {
	c.t.Helper()
	a, err := c.c.Getattr(c.ctx(), h)
	require.NoError(c.t, err, "GETATTR")
	return a
}

func (c nfsClient) fsinfo(root []byte) *client.FSInfo {
	c.t.Helper()
	fi, err := c.c.Fsinfo(c.ctx(), root)
	require.NoError(c.t, err, "FSINFO")
	return fi
}

// lookup returns the handle of name in dir, or the error status.
func (c nfsClient) lookup(dir []byte, name string) ([]byte, nfsv3.Nfsstat3) {
	c.t.Helper()
	h, _, err := c.c.Lookup(c.ctx(), dir, name)
	var ne *client.Error
	if errors.As(err, &ne) {
		return nil, nfsv3.Nfsstat3(ne.Status)
	}
	require.NoError(c.t, err, "LOOKUP %q", name)
	return h, nfsv3.NFS3_OK
}

// create creates name in dir (GUARDED: it must not exist) with the given
// mode and returns its handle.
func (c nfsClient) create(dir []byte, name string, mode uint32) []byte {
	c.t.Helper()
	h, _, err := c.c.Create(c.ctx(), dir, name, client.CreateHow{Mode: client.Guarded, Attr: &client.SetAttr{Mode: &mode}})
	require.NoError(c.t, err, "CREATE %q", name)
	return h
}

// write writes data at off, FILE_SYNC, and requires all of it written.
func (c nfsClient) write(h []byte, off uint64, data []byte) client.WriteResult {
	c.t.Helper()
	res, err := c.c.Write(c.ctx(), h, off, data, client.FileSync)
	require.NoError(c.t, err, "WRITE")
	require.Equal(c.t, len(data), res.Count, "WRITE count")
	require.Equal(c.t, client.FileSync, res.Committed, "WRITE committed")
	return res
}

// read reads up to count bytes at off.
func (c nfsClient) read(h []byte, off uint64, count uint32) (data []byte, eof bool) {
	c.t.Helper()
	buf := make([]byte, count)
	n, eof, err := c.c.Read(c.ctx(), h, off, buf)
	require.NoError(c.t, err, "READ")
	return buf[:n], eof
}

// readResult checks a READ reply the test decoded itself.
func readResult(t testing.TB, res nfsv3.Read3res) ([]byte, bool) {
	t.Helper()
	ok, isOK := res.(*nfsv3.Read3res_NFS3_OK)
	require.True(t, isOK, "READ status %v", res.GetStatus())
	require.EqualValues(t, len(ok.Resok.Data), ok.Resok.Count, "READ count vs data")
	return ok.Resok.Data, ok.Resok.Eof
}

func (c nfsClient) remove(dir []byte, name string) {
	c.t.Helper()
	require.NoError(c.t, c.c.Remove(c.ctx(), dir, name), "REMOVE %q", name)
}

// symlink creates name in dir, a symbolic link to target, with no
// attributes set.
func (c nfsClient) symlink(dir []byte, name, target string) {
	c.t.Helper()
	_, _, err := c.c.Symlink(c.ctx(), dir, name, target, nil)
	require.NoError(c.t, err, "SYMLINK %q", name)
}

// readlink returns the target of the symbolic link h.
func (c nfsClient) readlink(h []byte) string {
	c.t.Helper()
	target, err := c.c.Readlink(c.ctx(), h)
	require.NoError(c.t, err, "READLINK")
	return target
}
