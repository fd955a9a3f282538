package bench

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// goNFSClient is where a Go NFS client plugs in: each one registered in
// goClientCells adds ClientGo rows to the bench (READ, WRITE, GETATTR and
// create cells, against rdma-nfsd and knfsd), and the first one the Go
// rows of the interoperability matrix. Package nfs/client is registered
// (goclient_nfs.go); RPC NULL stays with goRequester (transport.Conn.Call).
type goNFSClient interface {
	// Supports reports whether the client runs workload w.
	Supports(w string) bool
	// Open mounts srv's export over RDMA from the client's device,
	// offering inline bytes each way and remote invalidation unless noRI.
	Open(ctx context.Context, p goOpen) (goNFSSession, error)
}

// goOpen is what a Go client needs to mount a server.
type goOpen struct {
	Provider   verbs.Provider
	Addr       string // RDMA address of the server
	MountAddr  string // MOUNT (TCP) address; "" asks rpcbind
	ExportPath string
	Inline     int
	NoRI       bool
	Version2   bool // offer RPC-over-RDMA version 2 (Spec.Version2) and require it
	Offer2     bool // offer version 2 without requiring it (a server may refuse it)
}

// goNFSSession is one mount of a Go client.
type goNFSSession interface {
	// Ops returns the operation of a cell and what undoes its set-up.
	Ops(c Cell) (opFunc, func(), error)
	// Counters are the client's transport counters under fill's
	// "client." names (rpcs, sends, recvs, read_chunks, ...).
	Counters() map[string]uint64
	// Negotiated is the connection's settings.
	Negotiated() string
	// Check is the matrix's test of the mount: the negotiated settings,
	// files of every size class written and read back (and compared with
	// the server's files under disk, when not ""), the chunks used and
	// the invalidations. It returns what it checked.
	Check(ctx context.Context, disk string) (string, error)
	Close() error
}

// goClientCells are the Go NFS clients the bench runs.
var goClientCells []goNFSClient

// goRequester is our requester (transport.Dial) making NFSv3 NULL calls:
// the RPC-over-RDMA round trip without NFS work, Go to Go or Go to knfsd.
type goRequester struct {
	conn *transport.Conn
	xid  atomic.Uint32
}

// dialGo connects to addr offering inline each way, and version 2 if v2
// (which the connection must then run).
func dialGo(ctx context.Context, p verbs.Provider, addr string, inline int, v2 bool) (*goRequester, error) {
	cfg := transport.Config{Provider: p, InlineSend: inline, InlineRecv: inline, Binding: nfs.Binding{}, OfferVersion2: v2}
	g, err := dialGoCfg(ctx, addr, &cfg)
	if err == nil {
		if err = checkVersion(g.conn, v2); err != nil {
			_ = g.close()
			return nil, err
		}
	}
	return g, err
}

// connectOps returns the operation of a connect cell: a connection to
// addr made as dialGo makes it, checked, and closed.
func connectOps(p verbs.Provider, addr string, inline int, v2 bool) opFunc {
	return func(int) (int, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		g, err := dialGo(ctx, p, addr, inline, v2)
		if err != nil {
			return 0, err
		}
		return 0, g.close()
	}
}

// dialGoCfg connects to addr with cfg.
func dialGoCfg(ctx context.Context, addr string, cfg *transport.Config) (*goRequester, error) {
	c, err := transport.Dial(ctx, addr, cfg)
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", addr, err)
	}
	g := &goRequester{conn: c}
	g.xid.Store(1)
	return g, nil
}

func (g *goRequester) close() error { return g.conn.Close() }

// nullOps returns the operation of a NULL cell: each worker its own
// message and reply buffer.
func (g *goRequester) nullOps(n int) opFunc {
	msgs := make([][]byte, n)
	replies := make([][]byte, n)
	for i := range msgs {
		h := xdr.CallHeader{Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcNull}
		msgs[i] = h.Append(nil)
		replies[i] = make([]byte, 0, 256)
	}
	return func(w int) (int, error) {
		binary.BigEndian.PutUint32(msgs[w], g.xid.Add(1))
		var err error
		replies[w], err = g.conn.Call(context.Background(), msgs[w], replies[w])
		if err == nil {
			var rh xdr.ReplyHeader
			if _, err = rh.Unmarshal(replies[w]); err == nil && (rh.Stat != xdr.MsgAccepted || rh.AcceptStat != xdr.AcceptSuccess) {
				err = fmt.Errorf("NULL: reply %v/%v", rh.Stat, rh.AcceptStat)
			}
		}
		return 0, err
	}
}

// snapshot is the requester's counters under fill's names.
func (g *goRequester) snapshot() map[string]uint64 {
	s := g.conn.Stats()
	return map[string]uint64{"rpcs": s.Sends, "sends": s.Sends, "recvs": s.Recvs,
		"read_chunks": s.ReadChunks, "write_chunks": s.WriteChunks, "reply_chunks": s.ReplyChunks,
		"local_inv": s.LocalInvalidations, "remote_inv": s.RemoteInvalidations, "send_posts": s.SendPosts}
}

// negotiated is the connection's settings as our requester sees them.
func (g *goRequester) negotiated() string { return negotiatedString(g.conn.Stats().Negotiated) }

// negotiatedString says what a Go client connection runs.
func negotiatedString(n transport.Negotiated) string {
	return fmt.Sprintf("send/recv %d/%d R=%v (peer private data %s) version %d", n.SendInline, n.RecvInline, n.ExpectRemoteInvalidate, n.PeerPrivateData, n.Version)
}

// checkVersion fails a connection that was to run version 2 (v2) and
// does not: a version comparison must not measure version 1 twice.
func checkVersion(c *transport.Conn, v2 bool) error {
	if v := c.Stats().Negotiated.Version; v2 && v != 2 {
		return fmt.Errorf("the connection to %s runs RPC-over-RDMA version %d, not the version 2 offered", c.RemoteAddr(), v)
	}
	return nil
}
