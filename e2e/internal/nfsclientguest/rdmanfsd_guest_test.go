//go:build e2eguest

package nfsclientguest

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/e2e/internal/guesttest"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
)

// rdma-nfsd in the guest: ports beside knfsd's, MOUNT at a fixed TCP port
// (no rpcbind registration), offering 64 KiB inline both ways.
const (
	rdmaNfsdBinary = "/host/rdma-nfsd"
	rdmaNfsdPort   = 20051
	rdmaNfsdMount  = 20052
	rdmaNfsCmd     = "/host/rdma-nfs"
)

// startRdmaNfsd runs /host/rdma-nfsd exporting a fresh directory, with
// the extra flags, and returns the directory.
func startRdmaNfsd(t *testing.T, extra ...string) string {
	t.Helper()
	dir := t.TempDir()
	guesttest.StartRdmaNfsd(t, &guesttest.RdmaNfsd{Binary: rdmaNfsdBinary, Log: filepath.Join(t.TempDir(), "rdma-nfsd.log"),
		Args: append([]string{"-dir", dir, "-provider", "rdmacore", "-addr", serverIP,
			"-rdma-port", strconv.Itoa(rdmaNfsdPort), "-tcp-port", strconv.Itoa(rdmaNfsdMount), "-rpcbind=false",
			"-inline-send", "65536", "-inline-recv", "65536", "-squash", "no_root_squash"}, extra...)})
	return dir
}

// mountRdmaNfsd mounts rdma-nfsd's export.
func mountRdmaNfsd(t *testing.T, tweak func(*client.MountOptions)) *client.Export {
	return mountAt(t, "/", func(o *client.MountOptions) {
		o.RDMAPort = rdmaNfsdPort
		o.MountAddr = fmt.Sprintf("%s:%d", serverIP, rdmaNfsdMount)
		if tweak != nil {
			tweak(o)
		}
	})
}

// TestRdmaNfsdPutGet puts and gets files of 0 B to 8 MiB through
// rdma-nfsd (our server.Server over rdma-core) and checks them in its
// exported directory.
func TestRdmaNfsdPutGet(t *testing.T) {
	dir := startRdmaNfsd(t)
	exp := mountRdmaNfsd(t, nil)
	putGet(t, exp, dir, "put", 50)
	st := exp.Client.Conn().Stats()
	report(t, "rdma-nfsd put/get 0 B..8 MiB: negotiated %+v; read-chunk calls %d, write chunks %d", st.Negotiated,
		st.ReadChunkCalls, st.WriteChunks)
}

// putGet puts and gets files of every size of sizes through exp, named
// prefix-size, their bytes patterns from seed on, checking them in dir
// (the server's disk).
func putGet(t *testing.T, exp *client.Export, dir, prefix string, seed uint64) {
	t.Helper()
	ctx := testCtx(t)
	for i, size := range sizes {
		data := guesttest.Pattern(size, uint64(i)+seed)
		name := fmt.Sprintf("%s-%d", prefix, size)
		f, err := exp.Create(ctx, name)
		require.NoError(t, err)
		_, err = io.Copy(f, bytes.NewReader(data))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		disk, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		require.Equal(t, sha256.Sum256(data), sha256.Sum256(disk), "put %d bytes", size)
		f, err = exp.Open(ctx, name)
		require.NoError(t, err)
		got, err := io.ReadAll(f)
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.Equal(t, sha256.Sum256(data), sha256.Sum256(got), "get %d bytes", size)
	}
}

// TestRdmaNfsdVersion2 runs RPC-over-RDMA version 2 between the Go client
// (OfferVersion2) and rdma-nfsd -rpcrdma-v2 over rdma-core (docs/v2.md):
// files of 0 B to 8 MiB put and got (inline calls, Read and Write chunks),
// a directory listed, on a connection both sides report as version 2, with
// the replies' rkeys invalidated remotely by rdma_inv_handle. Then the Go
// client offering version 2 to knfsd, which refuses it: the mount goes on
// in version 1 on the same connection, and put/get work.
func TestRdmaNfsdVersion2(t *testing.T) {
	dir := startRdmaNfsd(t, "-rpcrdma-v2")
	exp := mountRdmaNfsd(t, func(o *client.MountOptions) { o.Client.Transport.OfferVersion2 = true })
	putGet(t, exp, dir, "v2", 70)
	ents, err := exp.ReadDir(testCtx(t), ".")
	require.NoError(t, err)
	require.Len(t, ents, len(sizes))
	st := exp.Client.Conn().Stats()
	require.EqualValues(t, 2, st.Negotiated.Version, "the Go client and rdma-nfsd run version 2")
	require.NotZero(t, st.RemoteInvalidations, "replies invalidate the named rkey")
	require.Zero(t, st.BadReplies+st.BadXIDs+st.RemoteErrors)
	report(t, "rdma-nfsd over RPC-over-RDMA version 2, put/get 0 B..8 MiB: negotiated %+v; read-chunk calls %d, write chunks %d, remote invalidations %d, local %d",
		st.Negotiated, st.ReadChunkCalls, st.WriteChunks, st.RemoteInvalidations, st.LocalInvalidations)

	name, _ := scratch(t, "v2-fallback")
	kexp := mountAt(t, exportPath, func(o *client.MountOptions) { o.Client.Transport.OfferVersion2 = true })
	putGet(t, kexp, exportPath, name+"/f", 90)
	kst := kexp.Client.Conn().Stats()
	require.EqualValues(t, 1, kst.Negotiated.Version, "knfsd refuses version 2: version 1 on the same connection")
	require.Zero(t, kst.BadReplies+kst.BadXIDs+kst.RemoteErrors+kst.Reconnects)
	report(t, "the Go client offering version 2 to knfsd: negotiated %+v", kst.Negotiated)
}

// TestRdmaNfsdInline is TestKnfsdInline against rdma-nfsd offering 64 KiB:
// an offer of 65536 is now what both sides use.
func TestRdmaNfsdInline(t *testing.T) {
	root := startRdmaNfsd(t)
	for _, inline := range []int{1024, 4096, 65536} {
		t.Run(fmt.Sprint(inline), func(t *testing.T) {
			exp := mountRdmaNfsd(t, func(o *client.MountOptions) {
				o.Client.Transport.InlineSend, o.Client.Transport.InlineRecv = inline, inline
			})
			require.Equal(t, inline, exp.Client.Conn().Stats().Negotiated.SendInline)
			checkInline(t, exp, "rdma-nfsd", inline, root)
		})
	}
}

// TestRdmaNFSCommand runs cmd/rdma-nfs in the guest against knfsd: put,
// ls, get with -stats, checked on the tmpfs.
func TestRdmaNFSCommand(t *testing.T) {
	name, local := scratch(t, "cmd")
	data := guesttest.Pattern(5<<20+3, 77)
	in := filepath.Join(t.TempDir(), "in")
	require.NoError(t, os.WriteFile(in, data, 0o644))
	base := []string{"-server", serverIP, "-export", exportPath, "-local-addr", clientIP, "-timeout", "2m"}
	runCmd := func(args ...string) string {
		out, err := exec.Command(rdmaNfsCmd, append(append([]string(nil), base...), args...)...).CombinedOutput()
		require.NoError(t, err, "rdma-nfs %v:\n%s", args, out)
		return string(out)
	}
	out := runCmd("-stats", "put", in, name+"/f")
	report(t, "rdma-nfs -stats put 5 MiB to knfsd:\n%s", out)
	require.Contains(t, out, "negotiated: peer_private_data=found send_inline=4096 recv_inline=4096 credits=64")
	disk, err := os.ReadFile(local + "/f")
	require.NoError(t, err)
	guesttest.RequireData(t, data, disk)
	out = runCmd("ls", name)
	require.Regexp(t, `-rw-r--r-- .* 5242883 .* f\n`, out)
	outFile := filepath.Join(t.TempDir(), "out")
	runCmd("get", name+"/f", outFile)
	got, err := os.ReadFile(outFile)
	require.NoError(t, err)
	guesttest.RequireData(t, data, got)
}
