package client

import (
	"context"
	"encoding/binary"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/transport"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Auth is the RPC credential a Client sends with every call (RFC 5531
// §8.2, §Appendix A): AUTH_SYS with the given identity, or AUTH_NONE.
type Auth struct {
	// None sends AUTH_NONE; the other fields are then ignored. false
	// (the zero value) sends AUTH_SYS.
	None bool
	// UID, GID and GIDs are the AUTH_SYS identity (at most 16 groups).
	UID, GID uint32
	GIDs     []uint32
	// MachineName is AUTH_SYS's machinename; "" means the host name.
	MachineName string
}

// authOrProcess returns auth, or ProcessAuth() if auth is nil: what a nil
// Config.Auth, or a nil auth argument, means.
func authOrProcess(auth *Auth) *Auth {
	if auth == nil {
		a := ProcessAuth()
		return &a
	}
	return auth
}

// ProcessAuth is the AUTH_SYS credential of the running process: its
// effective user and group and its supplementary groups (the first 16),
// as the Linux client sends them.
func ProcessAuth() Auth {
	a := Auth{UID: uint32(os.Geteuid()), GID: uint32(os.Getegid())}
	if groups, err := os.Getgroups(); err == nil {
		for _, g := range groups[:min(len(groups), xdr.MaxAuthSysGIDs)] {
			a.GIDs = append(a.GIDs, uint32(g))
		}
	}
	return a
}

// opaqueAuth returns the credential's encoding as a call's cred and verf.
func (a *Auth) credVerf() []byte {
	none := xdr.OpaqueAuth{Flavor: xdr.FlavorNone}
	if a.None {
		return none.Append(none.Append(nil))
	}
	name := a.MachineName
	if name == "" {
		name, _ = os.Hostname()
	}
	if len(name) > xdr.MaxMachineNameLen {
		name = name[:xdr.MaxMachineNameLen]
	}
	sys := xdr.AuthSys{Stamp: uint32(time.Now().Unix()), MachineName: []byte(name), UID: a.UID, GID: a.GID,
		GIDs: a.GIDs[:min(len(a.GIDs), xdr.MaxAuthSysGIDs)]}
	return none.Append(sys.OpaqueAuth(nil).Append(nil))
}

// Config configures a Client. Transport.Provider is required by Dial
// and Mount; every other field's zero value gives the default its comment
// states. Each field's comment also states its range: Dial, New,
// NewCaller and Mount refuse a Config with a field out of it (Check),
// with a *transport.ConfigError naming the field (errors.Is(err,
// transport.ErrConfig)); they never adjust a value silently.
type Config struct {
	// The connection.

	// Transport configures the RPC-over-RDMA connection, its fields in
	// the ranges, and their zero values with the meanings,
	// transport.Config documents, a MaxRPCSize other than 0 at least
	// nfs.MinMaxRPCSize, and these exceptions: a nil Binding means
	// nfs.Binding{} (RFC 8267: READ data and READLINK paths land by RDMA
	// Write in the Write chunk, WRITE data and SYMLINK paths move in a
	// Read chunk), and a zero Reconnect means reconnection with
	// retransmission (Enabled and Retransmit), as the Linux client does.
	Transport transport.Config
	// NoReconnect turns off the reconnection a zero Transport.Reconnect
	// means; false (the zero value) keeps it. It has no effect when
	// Transport.Reconnect is set.
	NoReconnect bool

	// The calls.

	// Auth is the credential of every call; nil means ProcessAuth().
	// AUTH_SYS carries at most 16 GIDs and a MachineName of at most 255
	// bytes (RFC 5531 Appendix A).
	Auth *Auth
	// RSize and WSize cap the READ and WRITE sizes: 0 means
	// DefaultIOSize (1 MiB, or less when Transport.MaxRPCSize cannot
	// carry it); otherwise from MinIOSize to MaxIOSize(Transport.MaxRPCSize).
	// The server's FSINFO rtmax and wtmax cap them too, when the Client
	// learns them (Mount, SetIOSizeFromFSInfo).
	RSize, WSize int
	// MaxInFlight is how many READs or WRITEs a File keeps in flight for
	// read-ahead and write-behind, at most MaxInFlightMax; 0 means 16.
	// The transport's credits bound the connection's total.
	MaxInFlight int
}

// DefaultIOSize is the default largest READ and WRITE: 1 MiB, Linux's
// largest rsize and wsize over RDMA.
const DefaultIOSize = 1 << 20

// Client is an NFS version 3 client (RFC 1813) on one RPC-over-RDMA
// connection (RFC 8166, RFC 8267). Its methods are the NFSv3 procedures;
// each takes a context.Context bounding the call, and any number may run
// at once: calls are pipelined on the connection up to its credits.
//
// Errors: a procedure the server failed is an *Error (its nfsstat3); a
// call the server did not accept is an *RPCError; a call lost with its
// connection wraps ErrCallLost; transport failures are *net.OpError.
type Client struct {
	conn *transport.Conn
	rpc  caller // conn, or a test's fake
	tmpl []byte // an NFSv3 call header with XID and procedure 0
	xid  atomic.Uint32

	mu           sync.Mutex   // serializes the updates of rsize and wsize
	rsize, wsize atomic.Int64 // read on every READ and WRITE
	inFlight     int
}

// Dial connects to the NFS-over-RDMA server at addr ("host:port";
// port 20049 is NFS over RDMA's) and returns a Client for it. A field of
// cfg out of its range (Config.Check) fails it before it connects.
func Dial(ctx context.Context, addr string, cfg *Config) (*Client, error) {
	if cfg == nil {
		cfg = &Config{}
	}
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	tc := cfg.Transport
	if tc.Binding == nil {
		tc.Binding = nfs.Binding{}
	}
	if tc.Reconnect == (transport.ReconnectPolicy{}) && !cfg.NoReconnect {
		tc.Reconnect = transport.ReconnectPolicy{Enabled: true, Retransmit: true}
	}
	conn, err := transport.Dial(ctx, addr, &tc)
	if err != nil {
		return nil, err
	}
	return newClient(conn, cfg, tc.MaxRPCSize), nil
}

// New returns a Client making its calls on conn, a requester whose
// transport.Config.Binding should be nfs.Binding{} (and whose MaxRPCSize,
// if not the default, should be in cfg.Transport). cfg.Transport is
// otherwise not used (its fields are checked all the same). Close closes
// conn. A field of cfg out of its range (Config.Check) is an error.
func New(conn *transport.Conn, cfg *Config) (*Client, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	var maxRPC int
	if cfg != nil {
		maxRPC = cfg.Transport.MaxRPCSize
	}
	return newClient(conn, cfg, maxRPC), nil
}

// NewCaller returns a Client making its calls with rpc instead of
// an RPC-over-RDMA connection: NFSv3 over another RPC transport (a
// record-marked byte stream on a net.Conn, say). Reads and writes then
// carry their data inline in the messages; cfg.Transport.MaxRPCSize, if
// set, caps rsize and wsize. Conn returns nil; Close closes rpc if it is
// an io.Closer. A field of cfg out of its range (Config.Check) is an
// error.
func NewCaller(rpc Caller, cfg *Config) (*Client, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	var maxRPC int
	if cfg != nil {
		maxRPC = cfg.Transport.MaxRPCSize
	}
	c := newClient(nil, cfg, maxRPC)
	c.rpc = rpc
	return c, nil
}

func newClient(conn *transport.Conn, cfg *Config, maxRPC int) *Client {
	if cfg == nil {
		cfg = &Config{}
	}
	auth := authOrProcess(cfg.Auth)
	h := xdr.CallHeader{Prog: nfs.ProgNFS, Vers: 3}
	tmpl := append(h.Append(nil)[:6*4], auth.credVerf()...)
	c := &Client{conn: conn, rpc: conn, tmpl: tmpl, inFlight: 16}
	c.rsize.Store(DefaultIOSize)
	c.wsize.Store(DefaultIOSize)
	if cfg.RSize > 0 {
		c.rsize.Store(int64(cfg.RSize))
	}
	if cfg.WSize > 0 {
		c.wsize.Store(int64(cfg.WSize))
	}
	if cfg.MaxInFlight > 0 {
		c.inFlight = cfg.MaxInFlight
	}
	// Random first XID, as the Linux client (xprt_init_xid): a server's
	// duplicate request cache would take a new client's calls that
	// repeat an old one's XIDs for retransmissions.
	c.xid.Store(rand.Uint32())
	c.capIO(maxRPC)
	return c
}

// ioOverhead bounds everything of a READ reply or WRITE call but its data:
// the RPC header with the largest credential and verifier, the largest
// handle, the attributes and the fixed fields.
const ioOverhead = 2*xdr.MaxAuthBytes + 1024

// capIO caps rsize and wsize so that a READ reply or a WRITE call fits in
// maxRPC (0: transport.DefaultMaxRPCSize): MaxIOSize, which Check bounds
// the configured sizes by, so that only the default is lowered.
func (c *Client) capIO(maxRPC int) {
	limit := int64(MaxIOSize(maxRPC))
	c.mu.Lock()
	c.rsize.Store(min(c.rsize.Load(), limit))
	c.wsize.Store(min(c.wsize.Load(), limit))
	c.mu.Unlock()
}

// Conn returns the Client's connection, for its Stats (nil for a Client
// of NewCaller).
func (c *Client) Conn() *transport.Conn { return c.conn }

// Close closes the connection; calls in progress fail.
func (c *Client) Close() error {
	if c.conn != nil {
		return c.conn.Close()
	}
	if cl, ok := c.rpc.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// IOSize returns the largest READ and WRITE the Client makes: the
// configured sizes capped by the transport and, after SetIOSizeFromFSInfo,
// by the server's rtmax and wtmax.
func (c *Client) IOSize() (rsize, wsize int) {
	return int(c.rsize.Load()), int(c.wsize.Load())
}

// SetIOSizeFromFSInfo caps the READ and WRITE sizes by what FSINFO
// returned (RFC 1813 §3.3.19: rtmax, wtmax), rounded down to its
// preferred multiple when that is a power of two.
func (c *Client) SetIOSizeFromFSInfo(fi *FSInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, w := c.rsize.Load(), c.wsize.Load()
	if fi.RTMax > 0 {
		r = min(r, int64(fi.RTMax))
	}
	if fi.WTMax > 0 {
		w = min(w, int64(fi.WTMax))
	}
	c.rsize.Store(max(r, 512))
	c.wsize.Store(max(w, 512))
}

func (c *Client) maxInFlight() int { return c.inFlight }

// startCall appends the header of a call of proc to b[:0], with a new XID.
func (c *Client) startCall(b []byte, proc uint32) []byte {
	b = append(b[:0], c.tmpl...)
	binary.BigEndian.PutUint32(b[0:], c.xid.Add(1))
	binary.BigEndian.PutUint32(b[20:], proc)
	return b
}

// do makes the call msg (from startCall) of proc and returns the results of
// its reply, which is appended to reply[:0] (returned, for reuse).
func (c *Client) do(ctx context.Context, proc uint32, msg, reply []byte) (results, buf []byte, err error) {
	return doCall(ctx, c.rpc, nfs.ProgNFS, proc, msg, reply)
}

// Caller makes ONC RPC calls (RFC 5531): Call sends the call message msg
// and returns its reply message, in reply's storage when it fits. A
// *transport.Conn is one; any RPC transport can be (TCP with record
// marking, a test's fake), for NewCaller and NewMountClientCaller.
// Calls may be made from several goroutines at once.
type Caller interface {
	Call(ctx context.Context, msg, reply []byte) ([]byte, error)
}

// caller is the package's name for Caller.
type caller = Caller

// doCall makes one call on conn and returns the results of a successful
// (MSG_ACCEPTED, SUCCESS) reply.
func doCall(ctx context.Context, conn caller, prog, proc uint32, msg, reply []byte) (results, buf []byte, err error) {
	reply, err = conn.Call(ctx, msg, reply)
	if err != nil {
		return nil, reply, callErr(nfs.ProcName(prog, 3, proc), err)
	}
	off, err := checkReply(prog, proc, msg, reply)
	if err != nil {
		return nil, reply, err
	}
	return reply[off:], reply, nil
}

// checkReply checks that reply answers msg (its XID) with MSG_ACCEPTED,
// SUCCESS and returns the offset of its results.
func checkReply(prog, proc uint32, msg, reply []byte) (int, error) {
	var h xdr.ReplyHeader
	off, err := h.Unmarshal(reply)
	if err != nil {
		return 0, badReply(nfs.ProcName(prog, 3, proc), err)
	}
	if h.XID != binary.BigEndian.Uint32(msg) {
		return 0, badReply(nfs.ProcName(prog, 3, proc), errors.New("reply XID does not match the call's"))
	}
	if h.Stat != xdr.MsgAccepted || h.AcceptStat != xdr.AcceptSuccess {
		h.Verf.Body = nil
		return 0, &RPCError{Proc: nfs.ProcName(prog, 3, proc), Header: h}
	}
	return off, nil
}

// newCall returns the header of a call of proc (startCall), with room for
// its arguments.
func (c *Client) newCall(proc uint32) []byte {
	return c.startCall(make([]byte, 0, len(c.tmpl)+256), proc)
}

// call makes the call msg of proc (newCall's header, then the arguments
// the codec appended) and returns a reader of its results, for the codec to
// decode from their status on. A status other than NFS3_OK is an *Error;
// the failure arm (attributes, wcc_data) is then not decoded, the client
// having no use for it.
func (c *Client) call(ctx context.Context, proc uint32, msg []byte) (xdr.Reader, error) {
	res, _, err := c.do(ctx, proc, msg, nil)
	if err != nil {
		return xdr.Reader{}, err
	}
	return resultsOK(proc, res)
}

// resultsOK returns a reader of res, the results of proc, if their status
// is NFS3_OK, and an *Error of the status otherwise.
func resultsOK(proc uint32, res []byte) (xdr.Reader, error) {
	r := xdr.NewReader(res)
	st, err := r.Uint32()
	if err != nil {
		return r, badReply(nfs.ProcName(nfs.ProgNFS, 3, proc), err)
	}
	if nfs3.Status(st) != nfs3.OK {
		return r, &Error{Proc: nfs.ProcName(nfs.ProgNFS, 3, proc), Status: Status(st)}
	}
	return xdr.NewReader(res), nil
}

// decodeErr wraps a decoding error of proc's results.
func decodeErr(proc uint32, err error) error {
	if err == nil {
		return nil
	}
	return badReply(nfs.ProcName(nfs.ProgNFS, 3, proc), err)
}
