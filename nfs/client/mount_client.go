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
	dl, _ := ctx.Deadline()
	_ = t.conn.SetDeadline(dl)
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
// 1833 §3.2). A program not registered is an error.
func GetPort(ctx context.Context, addr string, prog, vers uint32) (int, error) {
	if _, _, err := net.SplitHostPort(addr); err != nil {
		addr = net.JoinHostPort(addr, strconv.Itoa(DefaultPortmapPort))
	}
	conn, err := nfs.DialReserved(ctx, addr)
	if err != nil {
		return 0, fmt.Errorf("nfs: portmapper %s: %w", addr, err)
	}
	defer conn.Close()
	t := newTCPRPC(conn, nfs.ProgPortmap, nfs.PmapVers, &Auth{None: true})
	var args []byte
	for _, v := range [...]uint32{prog, vers, nfs.IPProtoTCP, 0} {
		args = xdr.AppendUint32(args, v)
	}
	r, err := t.call(ctx, nfs.ProgPortmap, nfs.PmapProcGetport, args)
	if err != nil {
		return 0, fmt.Errorf("nfs: portmapper %s: GETPORT: %w", addr, err)
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
}

// DialMount connects to the MOUNT server at addr: "host:port", or "host"
// to ask the portmapper on host for mountd's port. auth nil means
// ProcessAuth(); an auth AUTH_SYS cannot carry (Config.Auth) is a
// *transport.ConfigError.
func DialMount(ctx context.Context, addr string, auth *Auth) (*MountClient, error) {
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
		p, err := GetPort(ctx, host, nfs.ProgMount, 3)
		if err != nil {
			return nil, err
		}
		addr = net.JoinHostPort(host, strconv.Itoa(p))
	}
	if auth == nil {
		a := ProcessAuth()
		auth = &a
	}
	conn, err := nfs.DialReserved(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("nfs: mount %s: %w", addr, err)
	}
	return &MountClient{rpc: newTCPRPC(conn, nfs.ProgMount, 3, auth)}, nil
}

// NewMountClientCaller returns a MountClient making its calls with rpc,
// for a server that serves MOUNT on another transport than TCP: go-nfs,
// for one, answers MOUNT on its NFS connection, so over RPC-over-RDMA
// too (a *transport.Conn is a Caller). auth nil means ProcessAuth();
// an auth AUTH_SYS cannot carry (Config.Auth) is a
// *transport.ConfigError. Close closes rpc if it is an io.Closer.
func NewMountClientCaller(rpc Caller, auth *Auth) (*MountClient, error) {
	if auth == nil {
		a := ProcessAuth()
		auth = &a
	}
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
	_, err := m.rpc.call(ctx, nfs.ProgMount, nfs.MountProcNull, nil)
	return err
}

// Mnt calls MOUNTPROC3_MNT (RFC 1813 §5.2.1) and returns the root handle of
// the export at path and the authentication flavors it accepts. A refusal
// is an *Error with the mountstat3.
func (m *MountClient) Mnt(ctx context.Context, path string) (FH, []xdr.AuthFlavor, error) {
	args := nfs3.MntArgs{Path: path}
	r, err := m.rpc.call(ctx, nfs.ProgMount, nfs.MountProcMnt, args.Append(nil))
	if err != nil {
		return nil, nil, err
	}
	var res nfs3.MntRes // a refusal is its status alone
	if err := res.Decode(r); err != nil {
		return nil, nil, badReply("MOUNT3 MNT", err)
	}
	if res.Status != nfs3.MntOK {
		return nil, nil, &Error{Proc: "MOUNT3 MNT " + path, Status: Status(res.Status)}
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
	_, err := m.rpc.call(ctx, nfs.ProgMount, nfs.MountProcUmnt, args.Append(nil))
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
	r, err := m.rpc.call(ctx, nfs.ProgMount, nfs.MountProcExport, nil)
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
