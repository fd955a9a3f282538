package server_test

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/buildbarn/go-xdr/pkg/protocols/nfsv3"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestServerConcurrentCalls: the calls of one connection execute
// concurrently (Config.ConcurrentCalls): while one is held up, the
// calls after it are answered, over RDMA and over TCP; with
// ConcurrentCalls 1 they wait for it, in order. The limit holds: with 2,
// two held calls hold up the third.
func TestServerConcurrentCalls(t *testing.T) {
	for _, tc := range []struct {
		network    string
		concurrent int
		held       int // calls held in OnCall before the probe
		probeWaits bool
	}{
		{server.NetRDMA, 0, 1, false},
		{server.NetTCP, 0, 1, false},
		{server.NetRDMA, 1, 1, true},
		{server.NetTCP, 1, 1, true},
		{server.NetRDMA, 2, 1, false},
		{server.NetRDMA, 2, 2, true},
	} {
		t.Run(fmt.Sprintf("%s/concurrent=%d/held=%d", tc.network, tc.concurrent, tc.held), func(t *testing.T) {
			var mu sync.Mutex
			release := make(chan struct{})
			held := make(chan uint32, tc.held)
			hold := map[uint32]bool{}
			for i := range tc.held {
				hold[uint32(100+i)] = true
			}
			_, h := bigDir(t, 0)
			// NoInlineCalls: a GETATTR held in OnCall stands for a call
			// that waits on the disk, which is never executed inline.
			srv := startServer(t, server.Config{Handler: h, NFSOverTCP: true, ConcurrentCalls: tc.concurrent,
				NoInlineCalls: true,
				OnCall: func(network string, ch *xdr.CallHeader) {
					mu.Lock()
					hit := network == tc.network && hold[ch.XID]
					mu.Unlock()
					if hit {
						held <- ch.XID
						<-release
					}
				}})
			rootFH := mountRoot(t, srv)
			var c msgConn
			if tc.network == server.NetRDMA {
				c = dialRDMANFS(t, srv)
			} else {
				c = dialTCP(t, srv.TCPAddr())
			}
			getattr := func(xid uint32) {
				sys := xdr.AuthSys{Stamp: 1, MachineName: []byte("client")}
				hd := xdr.CallHeader{XID: xid, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcGetattr, Cred: sys.OpaqueAuth(nil)}
				require.NoError(t, c.WriteMsg(append(hd.Append(nil), encode(t, &nfsv3.Getattr3args{Object: rootFH})...)))
			}
			// A first call and its reply: over RDMA, the requester has
			// one credit until a reply grants more (RFC 8166 §3.3.1).
			getattr(50)
			_, err := c.ReadMsg(nil)
			require.NoError(t, err)
			for i := range tc.held {
				getattr(uint32(100 + i))
				select {
				case <-held:
				case <-time.After(10 * time.Second):
					t.Fatalf("call %d did not reach OnCall", 100+i)
				}
			}
			getattr(200)
			replies := make(chan uint32, tc.held+1)
			go func() {
				defer close(replies)
				for range tc.held + 1 {
					rep, err := c.ReadMsg(nil)
					if err != nil {
						return
					}
					var rh xdr.ReplyHeader
					if _, err := rh.Unmarshal(rep); err != nil {
						return
					}
					replies <- rh.XID
				}
			}()
			// A probe that must wait: no reply while the held calls are
			// held (watched for 300 ms). One that must not: its reply
			// arrives while they are still held, however long a busy
			// host takes to send it (the guard is against hangs).
			watch := 300 * time.Millisecond
			if !tc.probeWaits {
				watch = 10 * time.Second
			}
			first := uint32(0)
			select {
			case first = <-replies:
			case <-time.After(watch):
			}
			close(release)
			if tc.probeWaits {
				require.Zero(t, first, "a call was answered while the limit's worth of calls were held")
			} else {
				require.Equal(t, uint32(200), first, "the call after a held one waited for it")
			}
			got := []uint32{}
			if first != 0 {
				got = append(got, first)
			}
			for xid := range replies {
				got = append(got, xid)
			}
			require.Len(t, got, tc.held+1, "replies %v", got)
			if tc.concurrent == 1 {
				require.Equal(t, []uint32{100, 200}, got, "one at a time, in order")
			}
		})
	}
}
