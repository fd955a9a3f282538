//go:build e2eguest

package nfsdguest

import (
	"context"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/guesttest"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
)

// TestListenDefault: rdma-nfsd started without -addr listens on
// 127.0.0.1 only, so nothing answers at 10.0.0.1, the RDMA device's
// address: MOUNT over TCP is refused there, an RPC-over-RDMA connection
// request is rejected, and the kernel client's mount fails. The RDMA CM
// binds a listener on 127.0.0.1 to a device and hands it the requests
// sent to that device's addresses: the transport's Listener rejects
// those (ListenerStats.RejectedAddr). If rdma-nfsd cannot listen on
// 127.0.0.1 at all, it must end naming that address.
func TestListenDefault(t *testing.T) {
	requireGuest(t)
	const logPath = "/tmp/rdma-nfsd-default.log"
	_ = os.Remove(logPath)
	srv := &guesttest.RdmaNfsd{Binary: binary, Log: logPath, Args: []string{"-dir", t.TempDir(), "-provider", "rdmacore",
		"-rdma-port", strconv.Itoa(rdmaPort), "-tcp-port", strconv.Itoa(tcpPort), "-rpcbind=false"}}
	t.Cleanup(srv.Stop)
	serving := srv.Launch(t)
	b, _ := os.ReadFile(logPath)
	log := string(b)
	switch {
	case serving:
		if !strings.Contains(log, "nfs_rdma=127.0.0.1:"+strconv.Itoa(rdmaPort)) || !strings.Contains(log, "mount_tcp=127.0.0.1:") {
			t.Fatalf("without -addr, not serving on 127.0.0.1 only:\n%s", log)
		}
		t.Logf("RDMANFSD without -addr: rdma-nfsd serves 127.0.0.1 only")
	default:
		if !strings.Contains(log, "127.0.0.1") {
			t.Fatalf("rdma-nfsd ended without naming the address it could not listen on:\n%s", log)
		}
		t.Logf("RDMANFSD without -addr: rdma-nfsd does not start on rdmacore: %s", strings.TrimSpace(log))
	}

	addr := func(port int) string { return net.JoinHostPort(serverAddr, strconv.Itoa(port)) }
	if c, err := net.DialTimeout("tcp", addr(tcpPort), 5*time.Second); err == nil {
		_ = c.Close()
		t.Errorf("MOUNT's TCP port answers at %s", addr(tcpPort))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if c, err := transport.Dial(ctx, addr(rdmaPort), &transport.Config{Provider: &rdmacore.Provider{LocalAddr: "10.0.0.2"}}); err == nil {
		t.Errorf("an RPC-over-RDMA connection to %s was accepted (local %v, remote %v)", addr(rdmaPort), c.LocalAddr(), c.RemoteAddr())
		_ = c.Close()
		time.Sleep(time.Second)
		b, _ := os.ReadFile(logPath)
		t.Logf("rdma-nfsd's log:\n%s", b)
	} else {
		t.Logf("RPC-over-RDMA to %s: %v", addr(rdmaPort), err)
	}
	const mnt = "/mnt/rdma-nfsd-default"
	if out, err := run(guesttest.MountCommand(serverAddr+":/", mnt, mountOpts+",retry=0")); err == nil {
		_, _ = run("umount " + mnt)
		t.Errorf("the kernel client mounted %s:/ from an rdma-nfsd started without -addr:\n%s", serverAddr, out)
	} else {
		t.Logf("RDMANFSD without -addr: mount of %s:/ fails: %s", serverAddr, strings.TrimSpace(out))
	}
}
