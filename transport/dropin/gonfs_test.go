package dropin_test

import (
	"fmt"
	"io"
	iofs "io/fs"
	"net"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/buildbarn/go-xdr/pkg/protocols/rpcv2"
	"github.com/go-git/go-billy/v5"
	"github.com/go-rpcrdma/rpcrdma/nfs/client"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/stretchr/testify/require"
	gonfs "github.com/willscott/go-nfs"
	nfshelper "github.com/willscott/go-nfs/helpers"
)

// bigSize is the large file of the scenario: far above the 4096-byte inline
// threshold, so that without an NFS binding its WRITE goes as a Long Call
// and its READ reply through the Reply chunk.
const bigSize = 100 << 10

// serveGoNFS serves fs with go-nfs on l, unchanged: gonfs.Serve gets l as its
// net.Listener. The channel receives Serve's return value.
func serveGoNFS(l net.Listener, fs billy.Filesystem) <-chan error {
	handler := nfshelper.NewCachingHandler(nfshelper.NewNullAuthHandler(fs), 1024)
	done := make(chan error, 1)
	go func() { done <- gonfs.Serve(l, handler) }()
	return done
}

// nfsScenario is the NFS session of the drop-in proof: mount, create, write
// 3 bytes and 100 KiB, read them back, getattr, look up, list a directory
// larger than the inline threshold, remove. Every answer is checked, and
// the data also against the server's file system itself.
func nfsScenario(t *testing.T, nc nfsClient, fs billy.Filesystem) {
	root := nc.mount("/")
	nc.mountNull()
	nc.null()

	// go-nfs advertises 1 GiB transfers whatever carries them; the
	// transport bounds an RPC message itself (Config.MaxRPCSize).
	info := nc.fsinfo(root)
	require.EqualValues(t, 1<<30, info.RTMax)
	require.EqualValues(t, 1<<30, info.WTMax)

	small := nc.create(root, "small.txt")
	nc.write(small, 0, []byte("abc"))
	big := nc.create(root, "big.bin")
	bigData := pattern(bigSize, 1)
	nc.write(big, 0, bigData)

	got, eof := nc.read(small, 0, 4096)
	require.Equal(t, []byte("abc"), got)
	require.True(t, eof)
	got, eof = nc.read(big, 0, bigSize)
	require.Equal(t, bigData, got, "100 KiB read back")
	require.True(t, eof)
	got, eof = nc.read(big, 12345, 5000)
	require.Equal(t, bigData[12345:17345], got)
	require.False(t, eof)
	got, eof = nc.read(big, bigSize-10, 4096)
	require.Equal(t, bigData[bigSize-10:], got)
	require.True(t, eof)

	// What the server stored, read from its file system directly.
	requireFile(t, fs, "small.txt", []byte("abc"))
	requireFile(t, fs, "big.bin", bigData)

	a := nc.getattr(small)
	require.Equal(t, client.TypeReg, a.Type)
	require.EqualValues(t, 3, a.Size)
	require.EqualValues(t, bigSize, nc.getattr(big).Size)
	require.Equal(t, client.TypeDir, nc.getattr(root).Type)

	h, err := nc.lookup(root, "big.bin")
	require.NoError(t, err)
	require.EqualValues(t, bigSize, nc.getattr(h).Size)
	got, _ = nc.read(h, 0, 100)
	require.Equal(t, bigData[:100], got)

	// Enough files that the listing outgrows the inline threshold.
	want := []string{".", "..", "big.bin", "small.txt"}
	for i := range 40 {
		name := fmt.Sprintf("f%03d", i)
		nc.create(root, name)
		want = append(want, name)
	}
	slices.Sort(want[2:]) // go-nfs lists "." and ".." first, then by name
	entries := nc.readdirplus(root, 64<<10)
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name
		switch e.Name {
		case "small.txt", "big.bin":
			require.NotNil(t, e.Attr, "attributes of %s", e.Name)
			require.NotEmpty(t, e.FH, "handle of %s", e.Name)
			size := uint64(3)
			if e.Name == "big.bin" {
				size = bigSize
			}
			require.Equal(t, size, e.Attr.Size, "size of %s", e.Name)
			require.Equal(t, size, nc.getattr(e.FH).Size, "GETATTR of the handle of %s", e.Name)
		}
	}
	require.Equal(t, want, names)

	nc.remove(root, "small.txt")
	_, err = nc.lookup(root, "small.txt")
	require.ErrorIs(t, err, iofs.ErrNotExist)
	var nerr *client.Error
	require.ErrorAs(t, err, &nerr)
	require.Equal(t, client.Status(2), nerr.Status, "NFS3ERR_NOENT")
	_, err = fs.Stat("small.txt")
	require.True(t, os.IsNotExist(err), "small.txt still on the server: %v", err)
}

func requireFile(t *testing.T, fs billy.Filesystem, name string, want []byte) {
	t.Helper()
	f, err := fs.Open(name)
	require.NoError(t, err)
	defer f.Close()
	got, err := io.ReadAll(f)
	require.NoError(t, err)
	require.Equal(t, want, got, "contents of %s on the server", name)
}

// testGoNFS runs the scenario against go-nfs served on a *transport.Listener
// of stack s, with a requester from transport.Dial with the default
// configuration (as a Linux peer would negotiate: 4096-byte inline
// thresholds, remote invalidation), and checks that large messages moved by
// RDMA through chunks.
func testGoNFS(t *testing.T, s stack) {
	fs := newMemFS()
	l := listen(t, s, nil)
	served := serveGoNFS(l, fs)
	c := dial(t, s, l.Addr().String(), nil)

	nfsScenario(t, nfsClient{t, newStreamClient(c, streamFragment)}, fs)

	cs := c.Stats()
	require.Equal(t, "found", cs.Negotiated.PeerPrivateData)
	require.Equal(t, transport.DefaultInline, cs.Negotiated.SendInline)
	require.Equal(t, transport.DefaultInline, cs.Negotiated.RecvInline)
	require.NotZero(t, cs.InlineCalls, "inline calls")
	// No NFS binding: the 100 KiB WRITE is a Long Call, and the large
	// replies (READ, READDIRPLUS) come through the Reply chunk.
	require.NotZero(t, cs.LongCalls, "Long Calls")
	require.NotZero(t, cs.ReplyChunks, "Reply chunks")
	require.Zero(t, cs.BadReplies, "bad replies")
	require.Zero(t, cs.BadXIDs, "bad XIDs")
	require.Zero(t, cs.RemoteErrors, "RDMA_ERRORs")
	// Both sides set R (RFC 8797), as the Linux client does: the
	// responder answers calls that carried one rkey with Send With
	// Invalidate.
	require.True(t, cs.Negotiated.ExpectRemoteInvalidate)
	require.NotZero(t, cs.RemoteInvalidations, "replies by Send With Invalidate")

	ss := l.serverStats(t, 0)
	require.True(t, ss.Negotiated.SendWithInvalidate)
	require.GreaterOrEqual(t, ss.RDMAReadBytes, uint64(bigSize), "bytes the responder pulled by RDMA Read")
	require.GreaterOrEqual(t, ss.RDMAWriteBytes, uint64(bigSize), "bytes the responder pushed by RDMA Write")
	require.Zero(t, ss.ErrChunkSent+ss.ErrVersSent+ss.Dropped, "calls the responder refused")

	// Closing the listener ends Serve with net.ErrClosed, as a net.Listener
	// must for servers that tell a shutdown from a failure.
	require.NoError(t, c.Close())
	require.NoError(t, l.Close())
	require.ErrorIs(t, <-served, net.ErrClosed)
}

func TestGoNFS(t *testing.T) { testGoNFS(t, softStack) }

// testGoNFSNoPrivateData runs the scenario against a responder that sends
// no RFC 8797 private data, as NFS-Ganesha's ntirpc does: the default
// requester falls back to 1024-byte thresholds and the responder to no
// remote invalidation (RFC 8797 §5.1, RFC 8166 §3.3.3), and go-nfs still
// works unchanged.
func testGoNFSNoPrivateData(t *testing.T, s stack) {
	fs := newMemFS()
	l := listen(t, s, &transport.Config{NoPrivateData: true})
	serveGoNFS(l, fs)
	c := dial(t, s, l.Addr().String(), nil)

	nfsScenario(t, nfsClient{t, newMsgClient(c)}, fs)

	cs := c.Stats()
	require.NotEqual(t, "found", cs.Negotiated.PeerPrivateData)
	require.Equal(t, 1024, cs.Negotiated.SendInline)
	require.Equal(t, 1024, cs.Negotiated.RecvInline)
	// The requester stays ready for Send With Invalidate (it set R), but
	// this responder never uses it: every rkey is invalidated locally.
	require.Zero(t, cs.RemoteInvalidations, "replies by Send With Invalidate")
	require.NotZero(t, cs.LocalInvalidations, "rkeys the requester invalidated itself")
	require.NotZero(t, cs.LongCalls, "Long Calls")
	require.NotZero(t, cs.ReplyChunks, "Reply chunks")
	require.Zero(t, cs.BadReplies+cs.BadXIDs+cs.RemoteErrors)
	require.False(t, l.serverStats(t, 0).Negotiated.SendWithInvalidate)
}

func TestGoNFSNoPrivateData(t *testing.T) { testGoNFSNoPrivateData(t, softStack) }

// TestGoNFSOverTCP is the control: the same scenario and client against
// go-nfs on TCP. It shows that the scenario tests go-nfs's behaviour, so
// that a failure of TestGoNFS is the transport's.
func TestGoNFSOverTCP(t *testing.T) {
	fs := newMemFS()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	served := serveGoNFS(l, fs)
	c, err := net.Dial("tcp", l.Addr().String())
	require.NoError(t, err)
	require.NoError(t, c.SetDeadline(time.Now().Add(ioGuard)))
	nfsScenario(t, nfsClient{t, newStreamClient(c, 0)}, fs)
	require.NoError(t, c.Close())
	require.NoError(t, l.Close())
	require.ErrorIs(t, <-served, net.ErrClosed)
}

// testGoNFSPipelined runs several clients at once against one go-nfs, each
// keeping many calls in flight (Long Call WRITEs, then READs answered
// through the Reply chunk) while the responder grants only 8 credits: the
// requester must hold calls back for credits and match replies by XID.
func testGoNFSPipelined(t *testing.T, s stack) {
	const (
		clients = 3
		chunk   = 6000 // over the inline threshold
		calls   = 24
	)
	fs := newMemFS()
	l := listen(t, s, &transport.Config{Credits: 8})
	served := serveGoNFS(l, fs)
	t.Run("clients", func(t *testing.T) {
		for i := range clients {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				c := dial(t, s, l.Addr().String(), nil)
				rc := newStreamClient(c, streamFragment)
				if i%2 == 1 {
					rc = newMsgClient(c)
				}
				nc := nfsClient{t, rc}
				root := nc.mount("/")
				name := fmt.Sprintf("client%d", i)
				h := nc.create(root, name)
				data := pattern(chunk*calls, uint64(100+i))

				writes := pipeline(t, rc, calls, func(k int) (uint32, error) {
					return rc.send(nfsProg, nfsVers, nfsProcWrite, writeArgs(h, uint64(k*chunk), data[k*chunk:(k+1)*chunk]))
				})
				for _, rep := range writes {
					requireWritten(t, decode(t, rep.results, nfsv3.ReadWrite3res), chunk)
				}
				requireFile(t, fs, name, data)

				reads := pipeline(t, rc, calls, func(k int) (uint32, error) {
					return rc.send(nfsProg, nfsVers, nfsProcRead, &nfsv3.Read3args{File: fh(h), Offset: uint64(k * chunk), Count: chunk})
				})
				for k, rep := range reads {
					got, _ := readResult(t, decode(t, rep.results, nfsv3.ReadRead3res))
					require.Equal(t, data[k*chunk:(k+1)*chunk], got, "READ %d", k)
				}

				cs := c.Stats()
				require.LessOrEqual(t, cs.Negotiated.Credits, uint32(8), "credit limit above the grant")
				require.GreaterOrEqual(t, cs.LongCalls, uint64(calls))
				require.GreaterOrEqual(t, cs.ReplyChunks, uint64(calls))
				require.NoError(t, c.Close())
			})
		}
	})
	require.NoError(t, l.Close())
	require.ErrorIs(t, <-served, net.ErrClosed)
}

func TestGoNFSPipelined(t *testing.T) { testGoNFSPipelined(t, softStack) }

// testGoNFSLimits: go-nfs advertises 1 GiB WRITEs, but the transport
// bounds one RPC message (Config.MaxRPCSize, 1 MiB of payload plus headers,
// as Linux): the requester refuses a larger call before anything is sent,
// and the connection stays usable. A 1 MiB WRITE and READ, the largest
// Linux uses, go through.
func testGoNFSLimits(t *testing.T, s stack) {
	fs := newMemFS()
	l := listen(t, s, nil)
	serveGoNFS(l, fs)
	c := dial(t, s, l.Addr().String(), nil)
	rc := newMsgClient(c)
	nc := nfsClient{t, rc}
	root := nc.mount("/")
	require.EqualValues(t, 1<<30, nc.fsinfo(root).WTMax)
	h := nc.create(root, "max")

	_, err := rc.send(nfsProg, nfsVers, nfsProcWrite, writeArgs(h, 0, make([]byte, transport.DefaultMaxRPCSize)))
	require.ErrorIs(t, err, transport.ErrMessageTooLarge)

	data := pattern(1<<20, 7)
	nc.write(h, 0, data)
	got, eof := nc.read(h, 0, 1<<20)
	require.True(t, eof)
	require.Equal(t, data, got)
	requireFile(t, fs, "max", data)
	nc.null()
}

func TestGoNFSLimits(t *testing.T) { testGoNFSLimits(t, softStack) }

// pipeline sends n calls with send without waiting for replies, while a
// second goroutine receives them, and returns the replies in call order,
// matched by XID. Each must be an accepted SUCCESS reply.
func pipeline(t *testing.T, rc *rpcClient, n int, send func(k int) (uint32, error)) []reply {
	t.Helper()
	got := make(chan map[uint32]reply, 1)
	errc := make(chan error, 1)
	go func() {
		m := make(map[uint32]reply, n)
		for range n {
			rep, err := rc.recv()
			if err != nil {
				errc <- err
				return
			}
			m[rep.xid] = rep
		}
		got <- m
	}()
	xids := make([]uint32, n)
	for k := range n {
		xid, err := send(k)
		require.NoError(t, err, "call %d", k)
		xids[k] = xid
	}
	var m map[uint32]reply
	select {
	case m = <-got:
	case err := <-errc:
		require.NoError(t, err, "receiving replies")
	}
	require.Len(t, m, n, "distinct reply XIDs")
	out := make([]reply, n)
	for k, xid := range xids {
		rep, ok := m[xid]
		require.True(t, ok, "no reply to call %d", k)
		require.True(t, rep.accepted, "call %d not accepted", k)
		require.Equal(t, rpcv2.SUCCESS, rep.data.GetStat(), "call %d", k)
		out[k] = rep
	}
	return out
}
