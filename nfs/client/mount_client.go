package client

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// DefaultPortmapPort is the portmapper's (rpcbind's) port (RFC 1833).
const DefaultPortmapPort = 111

// portmapPort is the port GetPort asks when its address names none:
// DefaultPortmapPort, another in the tests.
var portmapPort = DefaultPortmapPort

// DefaultMountTimeout bounds, by default, each exchange with a
// portmapper or a MOUNT server (MountOptions.MountTimeout,
// MountClient.Timeout): a silent port fails the mount after it instead of
// holding it.
const DefaultMountTimeout = 10 * time.Second

// boundCtx returns ctx bounded by the timeout d of an exchange (0:
// DefaultMountTimeout; negative: no bound but ctx) and that bound.
func boundCtx(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc, time.Duration) {
	if d < 0 {
		return ctx, func() {}, d
	}
	if d == 0 {
		d = DefaultMountTimeout
	}
	bctx, cancel := context.WithTimeout(ctx, d)
	return bctx, cancel, d
}

// noReply rewrites err, the failure of an exchange (what) made with bctx,
// ctx bounded by d (boundCtx), when the bound ended it and not ctx: a
// silent peer, reported as such.
func noReply(ctx, bctx context.Context, d time.Duration, what string, err error) error {
	if err == nil || ctx.Err() != nil || bctx.Err() == nil {
		return err
	}
	return fmt.Errorf("%s: no reply within %v: %w", what, d, context.DeadlineExceeded)
}

// maxTCPReply bounds a MOUNT or portmap reply read from TCP.
const maxTCPReply = 1 << 20

// tcpRPC is the ONC RPC client of MOUNT and the portmapper: calls of one
// program and version on c, which is a recordCaller over TCP (RFC 5531
// §11), or a caller given by the user (NewMountClientCaller).
type tcpRPC struct {
	c    caller
	conn net.Conn // the TCP connection; nil over a user's caller
	mu   sync.Mutex
	tmpl []byte // call header with XID 0, prog, vers, proc 0 and credential
	xid  uint32
}

func newTCPRPC(conn net.Conn, prog, vers uint32, auth *Auth) *tcpRPC {
	t := newCallerRPC(&recordCaller{conn: conn}, prog, vers, auth)
	t.conn = conn
	return t
}

func newCallerRPC(c caller, prog, vers uint32, auth *Auth) *tcpRPC {
	h := xdr.CallHeader{Prog: prog, Vers: vers}
	return &tcpRPC{c: c, tmpl: append(h.Append(nil)[:6*4], auth.credVerf()...), xid: rand.Uint32()}
}

// recordCaller makes calls over a TCP connection with record marking
// (RFC 5531 §11), one at a time.
type recordCaller struct {
	mu   sync.Mutex
	conn net.Conn
	buf  []byte
}

// Call implements caller: msg is sent as one record and the reply record
// read, within ctx's deadline.
func (t *recordCaller) Call(ctx context.Context, msg, reply []byte) ([]byte, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return reply[:0], err
	}
	// The connection's deadline passes once ctx is done, not at ctx's
	// deadline itself: a read that fails by it then finds ctx.Err() set.
	_ = t.conn.SetDeadline(time.Time{})
	stop := context.AfterFunc(ctx, func() { _ = t.conn.SetDeadline(time.Unix(1, 0)) })
	defer stop()
	t.buf = xdr.AppendRecord(t.buf[:0], msg, 0)
	if _, err := t.conn.Write(t.buf); err != nil {
		return reply[:0], err
	}
	want := binary.BigEndian.Uint32(msg)
	for {
		rec, err := xdr.ReadRecord(t.conn, reply[:0], maxTCPReply)
		if err != nil {
			if ctx.Err() != nil {
				err = ctx.Err()
			}
			return reply[:0], err
		}
		if xid, _, err := xdr.PeekXID(rec); err == nil && xid == want {
			return rec, nil
		}
		reply = rec // a stale reply: skip it
	}
}

// start appends the header of a call of proc to b[:0].
func (t *tcpRPC) start(proc uint32) []byte {
	t.mu.Lock()
	t.xid++
	xid := t.xid
	t.mu.Unlock()
	b := append([]byte(nil), t.tmpl...)
	binary.BigEndian.PutUint32(b[0:], xid)
	binary.BigEndian.PutUint32(b[20:], proc)
	return b
}

// call makes one call of proc with args and returns its results.
func (t *tcpRPC) call(ctx context.Context, prog, proc uint32, args []byte) (*xdr.Reader, error) {
	res, _, err := doCall(ctx, t.c, prog, proc, append(t.start(proc), args...), nil)
	if err != nil {
		return nil, err
	}
	r := xdr.NewReader(res)
	return &r, nil
}

// GetPort asks the portmapper at addr ("host:port"; port 111 when
// missing) for the TCP port of prog version vers (PMAPPROC_GETPORT, RFC
// 1833 §3.2). A program not registered is an error. Connecting and the
// call take at most DefaultMountTimeout together, less if ctx ends
// sooner.
func GetPort(ctx context.Context, addr string, prog, vers uint32) (int, error) {
	return getPort(ctx, addr, prog, vers, 0)
}

// getPort is GetPort with the exchange bounded by timeout (boundCtx).
func getPort(ctx context.Context, addr string, prog, vers uint32, timeout time.Duration) (int, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, strconv.Itoa(portmapPort))
	}
	bctx, cancel, d := boundCtx(ctx, timeout)
	defer cancel()
	conn, err := nfs.DialReserved(bctx, addr)
	if err != nil {
		return 0, fmt.Errorf("nfs: portmapper %s: %w", addr, noReply(ctx, bctx, d, "connect", err))
	}
	defer conn.Close()
	t := newTCPRPC(conn, nfs.ProgPortmap, nfs.PmapVers, &Auth{None: true})
	var args []byte
	for _, v := range [...]uint32{prog, vers, nfs.IPProtoTCP, 0} {
		args = xdr.AppendUint32(args, v)
	}
	r, err := t.call(bctx, nfs.ProgPortmap, nfs.PmapProcGetport, args)
	if err != nil {
		return 0, fmt.Errorf("nfs: portmapper %s: %w", addr, noReply(ctx, bctx, d, "GETPORT", err))
	}
	port, err := r.Uint32()
	if err != nil {
		return 0, badReply("PMAP GETPORT", err)
	}
	if port == 0 || port > 65535 {
		return 0, fmt.Errorf("nfs: portmapper %s: program %d version %d not registered for TCP", addr, prog, vers)
	}
	return int(port), nil
}

// MountClient is a MOUNT version 3 client (RFC 1813 §5) over TCP, as the
// Linux client mounts: MNT gives an export's root handle, UMNT tells the
// server the client is done, EXPORT lists the exports.
type MountClient struct {
	rpc *tcpRPC
	// Timeout bounds each call (Null, Mnt, Umnt, Export): a call waits
	// at most this long for its reply, less if its ctx ends sooner. 0
	// means DefaultMountTimeout; negative means no bound but ctx. Set it
	// before the first call.
	Timeout time.Duration
}

// DialMount connects to the MOUNT server at addr: "host:port", or "host"
// to ask the portmapper on host for mountd's port. auth nil means
// ProcessAuth(); an auth AUTH_SYS cannot carry (Config.Auth) is a
// *transport.ConfigError. Asking the portmapper, and connecting, take at
// most DefaultMountTimeout each, less if ctx ends sooner.
func DialMount(ctx context.Context, addr string, auth *Auth) (*MountClient, error) {
	return dialMount(ctx, addr, auth, 0)
}

// dialMount is DialMount with each exchange bounded by timeout (boundCtx),
// which becomes the MountClient's Timeout.
func dialMount(ctx context.Context, addr string, auth *Auth, timeout time.Duration) (*MountClient, error) {
	if auth != nil {
		if err := auth.check("Auth"); err != nil {
			return nil, err
		}
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" || port == "0" {
		if err != nil {
			host = addr
		}
		p, err := getPort(ctx, host, nfs.ProgMount, 3, timeout)
		if err != nil {
			return nil, err
		}
		addr = net.JoinHostPort(host, strconv.Itoa(p))
	}
	auth = authOrProcess(auth)
	bctx, cancel, d := boundCtx(ctx, timeout)
	defer cancel()
	conn, err := nfs.DialReserved(bctx, addr)
	if err != nil {
		return nil, fmt.Errorf("nfs: mount %s: %w", addr, noReply(ctx, bctx, d, "connect", err))
	}
	return &MountClient{rpc: newTCPRPC(conn, nfs.ProgMount, 3, auth), Timeout: timeout}, nil
}

// call makes one call of proc with args, bounded by m.Timeout.
func (m *MountClient) call(ctx context.Context, proc uint32, args []byte) (*xdr.Reader, error) {
	bctx, cancel, d := boundCtx(ctx, m.Timeout)
	defer cancel()
	r, err := m.rpc.call(bctx, nfs.ProgMount, proc, args)
	if err == nil {
		return r, nil
	}
	what := "nfs: " + nfs.ProcName(nfs.ProgMount, 3, proc)
	if a := m.RemoteAddr(); a != nil {
		what = "nfs: mount " + a.String() + ": " + nfs.ProcName(nfs.ProgMount, 3, proc)
	}
	return r, noReply(ctx, bctx, d, what, err)
}

// NewMountClientCaller returns a MountClient making its calls with rpc,
// for a server that serves MOUNT on another transport than TCP: go-nfs,
// for one, answers MOUNT on its NFS connection, so over RPC-over-RDMA
// too (a *transport.Conn is a Caller). auth nil means ProcessAuth();
// an auth AUTH_SYS cannot carry (Config.Auth) is a
// *transport.ConfigError. Close closes rpc if it is an io.Closer.
func NewMountClientCaller(rpc Caller, auth *Auth) (*MountClient, error) {
	auth = authOrProcess(auth)
	if err := auth.check("Auth"); err != nil {
		return nil, err
	}
	return &MountClient{rpc: newCallerRPC(rpc, nfs.ProgMount, 3, auth)}, nil
}

// Close closes the connection.
func (m *MountClient) Close() error {
	if m.rpc.conn != nil {
		return m.rpc.conn.Close()
	}
	if c, ok := m.rpc.c.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// RemoteAddr is the MOUNT server's address (nil over a Caller that is
// not a net.Conn).
func (m *MountClient) RemoteAddr() net.Addr {
	if m.rpc.conn != nil {
		return m.rpc.conn.RemoteAddr()
	}
	if c, ok := m.rpc.c.(interface{ RemoteAddr() net.Addr }); ok {
		return c.RemoteAddr()
	}
	return nil
}

// Null calls MOUNTPROC3_NULL.
func (m *MountClient) Null(ctx context.Context) error {
	_, err := m.call(ctx, nfs.MountProcNull, nil)
	return err
}

// Mnt calls MOUNTPROC3_MNT (RFC 1813 §5.2.1) and returns the root handle of
// the export at path and the authentication flavors it accepts. A refusal
// is an *Error with the mountstat3 and Mount set ("nfs: MOUNT3 MNT /x:
// permission denied (MNT3ERR_ACCES)").
func (m *MountClient) Mnt(ctx context.Context, path string) (FH, []xdr.AuthFlavor, error) {
	args := nfs3.MntArgs{Path: path}
	r, err := m.call(ctx, nfs.MountProcMnt, args.Append(nil))
	if err != nil {
		return nil, nil, err
	}
	var res nfs3.MntRes // a refusal is its status alone
	if err := res.Decode(r); err != nil {
		return nil, nil, badReply("MOUNT3 MNT", err)
	}
	if res.Status != nfs3.MntOK {
		return nil, nil, &Error{Proc: "MOUNT3 MNT " + path, Status: Status(res.Status), Mount: true}
	}
	flavors := make([]xdr.AuthFlavor, len(res.AuthFlavors))
	for i, f := range res.AuthFlavors {
		flavors[i] = xdr.AuthFlavor(f)
	}
	return cloneFH(res.FH), flavors, nil
}

// Umnt calls MOUNTPROC3_UMNT (RFC 1813 §5.2.3).
func (m *MountClient) Umnt(ctx context.Context, path string) error {
	args := nfs3.UmntArgs{Path: path}
	_, err := m.call(ctx, nfs.MountProcUmnt, args.Append(nil))
	return err
}

// ExportEntry is an exportnode (RFC 1813 §5.2.5): an exported path and the
// groups (host names, netgroups) allowed to mount it.
type ExportEntry struct {
	Dir    string
	Groups []string
}

// Export calls MOUNTPROC3_EXPORT (RFC 1813 §5.2.5).
func (m *MountClient) Export(ctx context.Context) ([]ExportEntry, error) {
	r, err := m.call(ctx, nfs.MountProcExport, nil)
	if err != nil {
		return nil, err
	}
	var res nfs3.ExportRes
	if err := res.Decode(r); err != nil {
		return nil, badReply("MOUNT3 EXPORT", err)
	}
	var out []ExportEntry
	if len(res.Exports) > 0 {
		out = make([]ExportEntry, len(res.Exports))
		for i, e := range res.Exports {
			out[i] = ExportEntry(e)
		}
	}
	return out, nil
}
