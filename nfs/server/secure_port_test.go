package server_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/nfs/internal/nfstest"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// tcpCaller makes record-marked RPC calls (RFC 5531 §11) on a TCP
// connection, one at a time: a client.Caller from whatever port the
// connection was made.
type tcpCaller struct {
	mu sync.Mutex
	c  net.Conn
}

func (t *tcpCaller) Call(_ context.Context, msg, reply []byte) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, err := t.c.Write(xdr.AppendRecord(nil, msg, 0)); err != nil {
		return nil, err
	}
	return xdr.ReadRecord(t.c, reply[:0], 1<<20)
}

// dialHighPort connects to addr from an unprivileged port (the kernel's choice,
// which is never below 1024).
func dialHighPort(t *testing.T, addr string) (*tcpCaller, int) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.Close() })
	port := c.LocalAddr().(*net.TCPAddr).Port
	require.GreaterOrEqual(t, port, 1024)
	return &tcpCaller{c: c}, port
}

// TestSecurePort: under secure (exports(5)'s default), every call over
// RDMA counts as coming from a privileged port, as with knfsd, whatever
// the RDMA connection's port: MNT and NFS calls over RDMA from a port
// above 1024 succeed. Over TCP the port is checked: MNT from a port above
// 1024 is refused (MNT3ERR_ACCES) and NFS calls get NFS3ERR_PERM (NULL
// excepted), each logged once with its reason in rpc.mountd's words and
// the client's address; as root, from a port below 1024 both succeed. An
// insecure rule admits any port. A refused MNT's other reasons: "not
// exported", "unmatched host".
func TestSecurePort(t *testing.T) {
	var logs syncBuffer
	r := &exportsRig{dirs: map[string]string{}, handlers: map[string]*server.DirHandler{}}
	exps := r.exports(t, `
/srv/secure    127.0.0.1(rw,no_root_squash)
/srv/insecure  127.0.0.1(rw,insecure,no_root_squash)
/srv/other     10.0.0.0/8(rw)
`)
	r.srv = nfstest.Serve(t, server.Config{Exports: exps, NFSOverTCP: true,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	ctx := callCtx(t)
	auth := &client.Auth{UID: 0, GID: 0}

	// Over RDMA, from a port above 1024.
	conn, err := transport.Dial(ctx, r.srv.RDMAAddr().String(), &transport.Config{Provider: &soft.Provider{}, Binding: nfs.Binding{}})
	require.NoError(t, err)
	defer conn.Close()
	rdmaPort := conn.LocalAddr().(*net.TCPAddr).Port
	require.GreaterOrEqual(t, rdmaPort, 1024, "the RDMA connection's port")
	mc, err := client.NewMountClientCaller(conn, auth)
	require.NoError(t, err)
	root, _, err := mc.Mnt(ctx, "/srv/secure")
	require.NoError(t, err, "MNT over RDMA from port %d under secure\n%s", rdmaPort, logs.String())
	nc, err := client.NewCaller(conn, &client.Config{Auth: auth})
	require.NoError(t, err)
	_, err = nc.Getattr(ctx, root)
	require.NoError(t, err, "GETATTR over RDMA under secure")

	// Over TCP, from a port above 1024.
	tc, port := dialHighPort(t, r.srv.TCPAddr().String())
	remote := fmt.Sprintf("remote=127.0.0.1:%d", port)
	mc, err = client.NewMountClientCaller(tc, auth)
	require.NoError(t, err)
	_, _, err = mc.Mnt(ctx, "/srv/secure")
	requireStatus(t, err, client.Status(nfs3.MntErrAcces), "MNT over TCP from a port above 1024 under secure")
	line := logLine(t, logs.String(), `msg="nfs: MOUNT refused"`, remote)
	for _, want := range []string{"network=tcp", "path=/srv/secure", "outcome=MNT3ERR_ACCES", fmt.Sprintf(`reason="illegal port %d"`, port)} {
		require.Contains(t, line, want)
	}
	insecureRoot, _, err := mc.Mnt(ctx, "/srv/insecure")
	require.NoError(t, err, "MNT over TCP from a port above 1024 under insecure")

	nc, err = client.NewCaller(tc, &client.Config{Auth: auth})
	require.NoError(t, err)
	require.NoError(t, nc.Null(ctx), "NULL needs no privileged port")
	_, err = nc.Getattr(ctx, root)
	requireStatus(t, err, client.StatusPerm, "GETATTR over TCP from a port above 1024 under secure")
	_, _, err = nc.Lookup(ctx, root, "x")
	requireStatus(t, err, client.StatusPerm, "LOOKUP over TCP from a port above 1024 under secure")
	_, err = nc.Getattr(ctx, insecureRoot)
	require.NoError(t, err, "GETATTR over TCP from a port above 1024 under insecure")
	line = logLine(t, logs.String(), `msg="nfs: call refused"`, remote)
	for _, want := range []string{"network=tcp", `call="NFS3 GETATTR"`, "outcome=NFS3ERR_PERM", fmt.Sprintf(`reason="illegal port %d"`, port)} {
		require.Contains(t, line, want)
	}
	require.Equal(t, 1, strings.Count(logs.String(), `msg="nfs: call refused"`), "one line a connection")

	// The other reasons.
	_, _, err = mc.Mnt(ctx, "/srv/none")
	requireStatus(t, err, client.Status(nfs3.MntErrNoEnt), "MNT of a path no export holds")
	require.Contains(t, logLine(t, logs.String(), `msg="nfs: MOUNT refused"`, "path=/srv/none"), `reason="not exported"`)
	_, _, err = mc.Mnt(ctx, "/srv/other")
	requireStatus(t, err, client.Status(nfs3.MntErrAcces), "MNT of an export not admitting 127.0.0.1")
	require.Contains(t, logLine(t, logs.String(), `msg="nfs: MOUNT refused"`, "path=/srv/other"), `reason="unmatched host"`)

	// As root, over TCP from a port below 1024: the port check passes.
	if os.Geteuid() == 0 {
		c, err := nfs.DialReserved(ctx, r.srv.TCPAddr().String())
		require.NoError(t, err)
		defer c.Close()
		require.Less(t, c.LocalAddr().(*net.TCPAddr).Port, 1024)
		tc := &tcpCaller{c: c}
		mc, err := client.NewMountClientCaller(tc, auth)
		require.NoError(t, err)
		_, _, err = mc.Mnt(ctx, "/srv/secure")
		require.NoError(t, err, "MNT over TCP from a privileged port")
		nc, err := client.NewCaller(tc, &client.Config{Auth: auth})
		require.NoError(t, err)
		_, err = nc.Getattr(ctx, root)
		require.NoError(t, err, "GETATTR over TCP from a privileged port")
	}
}

// logLine returns the line of logs that holds every one of want.
func logLine(t *testing.T, logs string, want ...string) string {
	t.Helper()
next:
	for _, l := range strings.Split(logs, "\n") {
		for _, w := range want {
			if !strings.Contains(l, w) {
				continue next
			}
		}
		return l
	}
	t.Fatalf("no log line with %q in:\n%s", want, logs)
	return ""
}
