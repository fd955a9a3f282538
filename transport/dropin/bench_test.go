package dropin_test

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"
)

// BenchmarkGoNFSRead measures NFSv3 READs from go-nfs, unchanged, through
// the whole stack (buildbarn/go-xdr encoding, our requester, the software
// provider, our responder, go-nfs and go-billy's memfs), with TCP as the
// reference. It is a drop-in cost, not a transport benchmark: most of the
// time and every allocation are go-nfs's and the XDR libraries'. Without an
// NFS binding the 64 KiB READ reply goes through the Reply chunk.
func BenchmarkGoNFSRead(b *testing.B) {
	for _, size := range []int{1 << 10, 64 << 10} {
		b.Run(fmt.Sprintf("rdma-soft/%dKiB", size>>10), func(b *testing.B) {
			fs := newMemFS()
			l := listen(b, softStack, nil)
			serveGoNFS(l, fs)
			c := dial(b, softStack, l.Addr().String(), nil)
			benchRead(b, nfsClient{b, newMsgClient(c)}, size)
		})
		b.Run(fmt.Sprintf("tcp/%dKiB", size>>10), func(b *testing.B) {
			fs := newMemFS()
			nl, err := net.Listen("tcp", "127.0.0.1:0")
			require.NoError(b, err)
			b.Cleanup(func() { _ = nl.Close() })
			serveGoNFS(nl, fs)
			c, err := net.Dial("tcp", nl.Addr().String())
			require.NoError(b, err)
			b.Cleanup(func() { _ = c.Close() })
			require.NoError(b, c.SetDeadline(time.Now().Add(ioGuard)))
			benchRead(b, nfsClient{b, newStreamClient(c, 0)}, size)
		})
	}
}

func benchRead(b *testing.B, nc nfsClient, size int) {
	root := nc.mount("/")
	h := nc.create(root, "f")
	data := pattern(size, 3)
	nc.write(h, 0, data)
	args := &nfsv3.Read3args{File: fh(h), Count: uint32(size)}
	b.SetBytes(int64(size))
	b.ReportAllocs()
	for b.Loop() {
		res := decode(b, nc.rpc.call(b, nfsProg, nfsVers, nfsProcRead, args), nfsv3.ReadRead3res)
		if ok, isOK := res.(*nfsv3.Read3res_NFS3_OK); !isOK || len(ok.Resok.Data) != size {
			b.Fatalf("READ: %v", res.GetStatus())
		}
	}
}
