package dropin_test

import (
	"context"
	"testing"

	"github.com/buildbarn/go-xdr/pkg/protocols/mount"
	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs/client"
)

// Programs and procedures (RFC 1813 §3 and appendix I).
const (
	nfsProg   = nfsv3.NFS_PROGRAM_PROGRAM_NUMBER   // 100003
	mountProg = mount.MOUNT_PROGRAM_PROGRAM_NUMBER // 100005
	nfsVers   = 3
	mountVers = 3

	nfsProcNull  = 0
	nfsProcRead  = 6
	nfsProcWrite = 7
)

// nfsClient is the NFS side of the drop-in scenarios: package
// nfs/client (client.NewCaller, client.NewMountClientCaller) making its calls
// through an rpcClient, so that every call still travels as the byte
// stream (or the messages) a drop-in RPC program sends. Each method fails
// t unless the server answers NFS3_OK (or what the method says it
// returns).
type nfsClient struct {
	t   testing.TB
	rpc *rpcClient
}

// ctx bounds each call of the scenarios.
func (c nfsClient) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), ioGuard)
}

func (c nfsClient) nfs() *client.Client {
	nc, err := client.NewCaller(c.rpc, nil)
	require.NoError(c.t, err)
	return nc
}

func (c nfsClient) mountClient() *client.MountClient {
	mc, err := client.NewMountClientCaller(c.rpc, nil)
	require.NoError(c.t, err)
	return mc
}

// mount calls MOUNTPROC3_MNT and returns the root file handle.
func (c nfsClient) mount(path string) client.FH {
	c.t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	fh, _, err := c.mountClient().Mnt(ctx, path)
	require.NoError(c.t, err, "MNT %s", path)
	require.NotEmpty(c.t, fh)
	return fh
}

// mountNull calls MOUNTPROC3_NULL.
func (c nfsClient) mountNull() {
	c.t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	require.NoError(c.t, c.mountClient().Null(ctx), "MOUNT NULL")
}

// null calls NFSPROC3_NULL.
func (c nfsClient) null() {
	c.t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	require.NoError(c.t, c.nfs().Null(ctx), "NULL")
}

func (c nfsClient) fsinfo(root client.FH) *client.FSInfo {
	c.t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	fi, err := c.nfs().Fsinfo(ctx, root)
	require.NoError(c.t, err, "FSINFO")
	return fi
}

func (c nfsClient) getattr(h client.FH) *client.Attr {
	c.t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	a, err := c.nfs().Getattr(ctx, h)
	require.NoError(c.t, err, "GETATTR")
	return a
}

// lookup returns the handle of name in dir, or the error.
func (c nfsClient) lookup(dir client.FH, name string) (client.FH, error) {
	c.t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	h, _, err := c.nfs().Lookup(ctx, dir, name)
	return h, err
}

// create creates (UNCHECKED, no attributes set: go-billy's memfs has no
// chmod) name in dir and returns its handle.
func (c nfsClient) create(dir client.FH, name string) client.FH {
	c.t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	h, _, err := c.nfs().Create(ctx, dir, name, client.CreateHow{Mode: client.Unchecked})
	require.NoError(c.t, err, "CREATE %q", name)
	require.NotEmpty(c.t, h, "CREATE %q returned no handle", name)
	return h
}

// writeArgs encodes a FILE_SYNC WRITE of data at off, with buildbarn's
// types, for the pipelined scenarios that send calls themselves.
func writeArgs(h []byte, off uint64, data []byte) *nfsv3.Write3args {
	return &nfsv3.Write3args{File: fh(h), Offset: off, Count: uint32(len(data)), Stable: nfsv3.FILE_SYNC, Data: data}
}

// fh returns a file handle as buildbarn's wire type.
func fh(h []byte) nfsv3.NfsFh3 { return nfsv3.NfsFh3{Data: h} }

// write writes data at off (FILE_SYNC) and requires all of it written.
func (c nfsClient) write(h client.FH, off uint64, data []byte) {
	c.t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	res, err := c.nfs().Write(ctx, h, off, data, client.FileSync)
	require.NoError(c.t, err, "WRITE")
	require.Equal(c.t, len(data), res.Count, "WRITE count")
	require.Equal(c.t, client.FileSync, res.Committed, "WRITE committed")
}

func requireWritten(t testing.TB, res nfsv3.Write3res, n int) {
	t.Helper()
	ok, isOK := res.(*nfsv3.Write3res_NFS3_OK)
	require.True(t, isOK, "WRITE status %v", res.GetStatus())
	require.EqualValues(t, n, ok.Resok.Count, "WRITE count")
	require.Equal(t, nfsv3.FILE_SYNC, ok.Resok.Committed, "WRITE committed")
}

// read reads up to count bytes at off.
func (c nfsClient) read(h client.FH, off uint64, count uint32) (data []byte, eof bool) {
	c.t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	p := make([]byte, count)
	n, eof, err := c.nfs().Read(ctx, h, off, p)
	require.NoError(c.t, err, "READ")
	return p[:n], eof
}

func readResult(t testing.TB, res nfsv3.Read3res) ([]byte, bool) {
	t.Helper()
	ok, isOK := res.(*nfsv3.Read3res_NFS3_OK)
	require.True(t, isOK, "READ status %v", res.GetStatus())
	require.EqualValues(t, len(ok.Resok.Data), ok.Resok.Count, "READ count vs data")
	return ok.Resok.Data, ok.Resok.Eof
}

// readdirplus lists dir with one READDIRPLUS call of maxcount bytes and
// requires the listing complete (eof).
func (c nfsClient) readdirplus(dir client.FH, maxcount uint32) []client.DirEntry {
	c.t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	page, err := c.nfs().Readdirplus(ctx, dir, 0, [8]byte{}, maxcount, maxcount)
	require.NoError(c.t, err, "READDIRPLUS")
	require.True(c.t, page.EOF, "READDIRPLUS eof")
	return page.Entries
}

func (c nfsClient) remove(dir client.FH, name string) {
	c.t.Helper()
	ctx, cancel := c.ctx()
	defer cancel()
	require.NoError(c.t, c.nfs().Remove(ctx, dir, name), "REMOVE %q", name)
}
