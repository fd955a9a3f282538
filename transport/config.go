package transport

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"github.com/go-rpcrdma/rpcrdma/credits"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// Defaults of Config.
const (
	// DefaultInline is the inline send and receive size offered in the
	// RFC 8797 private data, as the Linux client and server offer.
	DefaultInline = 4096
	// DefaultMaxRPCSize bounds one RPC message: 1 MiB of payload and a
	// few pages of headers, as Linux's svcrdma (RPCSVC_MAXPAYLOAD).
	DefaultMaxRPCSize = 1<<20 + 16<<10
	// DefaultDirectPlacementMin is Config.DirectPlacementMin's default.
	DefaultDirectPlacementMin = 32 << 10
	// DefaultPostAsyncMin is Config.PostAsyncMin's default.
	DefaultPostAsyncMin = 32 << 10
	// DefaultDirectPlacementCache is Config.DirectPlacementCache's default.
	DefaultDirectPlacementCache = 32 << 20
	// DefaultCallTimeout is ReconnectPolicy.CallTimeout's default: the
	// Linux NFS client's timeo over RDMA (600 deciseconds).
	DefaultCallTimeout = 60 * time.Second
)

// ErrNoProvider: Dial or Listen was given a nil Config or a Config without a
// Provider. There is no default provider: the caller chooses the software
// provider (transport/verbs/soft) or a real one (transport/verbs/rdmacore).
var ErrNoProvider = errors.New("rpcrdma: no verbs provider (Config.Provider is nil)")

// Config configures a requester (Dial) or a responder (Listen). Provider is
// required; every other field's zero value gives the defaults a Linux peer
// uses, as each field's comment says. Each field's comment also states its
// range: Dial and Listen refuse a Config with a field out of it (Check),
// with an error that names the field and matches ErrConfig; they never
// adjust a value silently.
//
// The fields come in groups: those of both roles, then those only a
// requester uses, those only a responder uses, and those of a Listener. A
// field of the other role is checked all the same, and otherwise not used.
type Config struct {
	// Provider is the verbs provider, for example &soft.Provider{}
	// (transport/verbs/soft) or &rdmacore.Provider{} (transport/verbs/rdmacore).
	// It is required: Dial and Listen fail with ErrNoProvider without one.
	Provider verbs.Provider

	// Both roles: what is offered to the peer (RFC 8797, RFC 8166 §3.3).

	// InlineSend and InlineRecv are the inline sizes offered to the peer
	// in the RFC 8797 private data: multiples of 1024 from 1024 to
	// 262144 (cmpriv.MinSize to cmpriv.MaxSize, what the private data can
	// carry). 0 means DefaultInline.
	InlineSend, InlineRecv int
	// NoRemoteInvalidate clears the R bit we send. A requester then hands
	// out rkeys it invalidates itself; a responder never uses Send With
	// Invalidate. false (the zero value) sets it, as the Linux client
	// does: a requester accepts Send With Invalidate, a responder uses it
	// when the requester set R too (RFC 8797 §4.1).
	NoRemoteInvalidate bool
	// NoPrivateData sends no RFC 8797 private data at all, as NFS-Ganesha
	// does: both sides then fall back to 1024-byte thresholds and no remote
	// invalidation (RFC 8797 §5.1). false (the zero value) sends it.
	NoPrivateData bool
	// Credits is, for a requester, the credits requested in every call
	// and so the most calls in flight; for a responder, the largest grant
	// (RFC 8166 §3.3.1). 0 means credits.DefaultRequest (128, like the
	// Linux client) for a requester and credits.DefaultMaxGrant (64, like
	// svcrdma) for a responder; at most MaxCredits.
	Credits uint32

	// Both roles: bounds on what a connection receives and sends.

	// Limits bounds what a received transport header may hold; the zero
	// value means chunks.DefaultLimits. Otherwise each field is taken as
	// it is (a zero field accepts no such chunk), none negative, the
	// chunk counts at most math.MaxInt32 and MaxChunkLength at most
	// math.MaxUint32 (a segment's length is 32 bits).
	Limits chunks.Limits
	// MaxRPCSize bounds one RPC message either way, from MaxRPCSizeMin
	// to MaxRPCSizeMax. 0 means DefaultMaxRPCSize. A call whose reply
	// may carry a DDP-eligible result larger than it (an NFS READ of a
	// larger count) fails with ErrMessageTooLarge before any memory is
	// registered for it.
	MaxRPCSize int

	// Both roles: where chunk data is placed, and how work is posted.

	// DirectPlacementMin is, for a requester, the smallest Write chunk for
	// which CallInto registers the caller's buffer, so that the
	// responder's RDMA Write places the DDP-eligible result (the data of
	// an NFS READ) straight into it (RFC 8166 §3.5.5; Linux's xprtrdma
	// registers the pages of the request the same way). A smaller Write
	// chunk is exposed from the call's slot memory, registered once, and
	// copied into the buffer: registering and deregistering the caller's
	// memory (ibv_reg_mr and ibv_dereg_mr: system calls that pin and
	// unpin its pages) costs more than copying a small buffer. The
	// provider must implement verbs.Registrar (both of ours do). For a
	// responder, it is the smallest DDP-eligible result that
	// WriteMsgDirect writes to the Write chunk from the caller's buffer
	// rather than through a copy, and the smallest Read chunk pulled into
	// a buffer of CallBuffers. 0 means DefaultDirectPlacementMin;
	// negative never registers; any other value is a size in bytes.
	DirectPlacementMin int
	// DirectPlacementCache bounds the bytes of callers' buffers a
	// connection keeps registered after their calls (CallInto) or replies
	// (WriteMsgDirect), to reuse the registration when the same buffer (or
	// a part of it) comes again (a File's read-ahead blocks, a loop's
	// buffer). A cached buffer stays pinned, and so alive, until evicted
	// (least recently used first), unused for two to four seconds (so an
	// idle connection keeps none), or the connection closes; the peer
	// cannot reach it without a window bound for a call. A responder also
	// bounds what it holds registered, in use and cached together
	// (MemoryLimits.Registered, ListenerRegistered). 0 means
	// DefaultDirectPlacementCache; negative keeps none; any other value is
	// a size in bytes.
	DirectPlacementCache int
	// PostAsyncMin is the size from which a batch of work requests (the
	// bytes its Sends, RDMA Writes and RDMA Reads move) is posted by the
	// connection's posting goroutine rather than by the goroutine that
	// built it (a responder's WriteMsg, the poll loop pulling Read
	// chunks), which goes on at once. Software providers move the data
	// in the posting thread (rxe runs a user queue pair's requests inline
	// in ibv_post_send), and a server that answers its calls one by one
	// would otherwise wait for each. Smaller batches are posted inline,
	// without a goroutine hand-off. 0 means DefaultPostAsyncMin; negative
	// posts every batch inline; any other value is a size in bytes.
	PostAsyncMin int

	// Both roles: the upper layer and the log.

	// Binding is the upper-layer binding (RFC 8166 §6), which says which
	// data items of a message are DDP-eligible; nil means NullBinding
	// (none: every message goes inline, as a Long Call or through the
	// Reply chunk).
	Binding Binding
	// Logger receives connection events (negotiated settings, protocol
	// errors); nil discards them.
	Logger *slog.Logger

	// Requester only (Dial).

	// Reconnect, for a requester, re-establishes a connection that died,
	// with a fresh RFC 8797 exchange, instead of failing the Conn. The
	// zero ReconnectPolicy does not reconnect: the Conn fails with its
	// connection; its CallTimeout still applies (0 means
	// DefaultCallTimeout).
	Reconnect ReconnectPolicy

	// OfferVersion2 makes a requester offer RPC-over-RDMA version 2
	// (draft-cel-nfsv4-rpcrdma-version-two-09 §7; docs/v2.md) on each new
	// connection: its first message is an RDMA2_CONNPROP, and a version 2
	// answer makes the connection version 2. Version 1's ERR_VERS (what
	// knfsd answers), or no answer within 10 s, makes it version 1, on the
	// same connection, and the address is not offered version 2 again by
	// this process. false (the zero value) speaks version 1 only.
	OfferVersion2 bool
	// ReverseHandler, with OfferVersion2, serves the reverse-direction
	// calls the responder makes on a version 2 connection (draft §4.2.2,
	// Conn.ReverseCall; docs/v2.md): our RDMA2_CONNPROP then says
	// RDMA2_RVREQSUP_INLINE and 4 more Receives are posted for them. nil
	// (the zero value) takes none: RDMA2_RVREQSUP_NONE, and a reverse
	// call that comes anyway is dropped (Stats.ReverseDropped).
	ReverseHandler ReverseHandler

	// Responder only (the connections a Listener accepts).

	// GrantPolicy refines how a responder chooses its grant (RFC 8166
	// §3.3.1). Its Max, at most MaxCredits, is taken from Credits when 0;
	// its other fields are as credits.Policy documents them. The zero
	// Policy grants Credits all the time, as svcrdma does.
	GrantPolicy credits.Policy
	// AcceptVersion2 lets a responder serve RPC-over-RDMA version 2
	// (draft-cel-nfsv4-rpcrdma-version-two-09; docs/v2.md): a connection
	// whose first message has rdma_vers 2 runs version 2 (its calls
	// answered in version 2, an RDMA2_CONNPROP with this side's
	// properties, Send With Invalidate only for a call's
	// rdma_inv_handle); any other connection runs version 1 as before.
	// Each connection then posts 4 more Receives and Send buffers for
	// reverse-direction calls (Conn.ReverseCall), made once the
	// requester's RDMA2_CONNPROP offered them. false (the zero value)
	// answers a version 2 message with version 1's ERR_VERS, as Linux's
	// svcrdma does.
	AcceptVersion2 bool
	// InlineReplies makes a responder send a reply inline whenever it fits,
	// even when the requester offered a Reply chunk (RFC 8166 §3.5.6 lets
	// it choose). false (the zero value) uses an offered Reply chunk, as
	// Linux's svcrdma does: the requester gets the reply where it wants it
	// (the Linux client copies an inline reply into its pages, counted as
	// fixup_copy_count) and the Send may invalidate the call's rkey.
	InlineReplies bool
	// CallBuffers, if not nil, gives a responder the memory its large
	// calls are pulled into: a call whose one Read chunk (the data of an
	// NFS WRITE, a Long Call) holds at least DirectPlacementMin bytes is
	// laid out whole in a buffer from GetCallBuffer, its chunk placed by
	// the RDMA Reads at its XDR position (RFC 8166 §3.4.5) and the inline
	// part copied around it, and ReadMsgAlloc hands that buffer over
	// instead of copying the call out of the transport's memory: the data
	// crosses user space no more. The buffer is registered through the
	// connection's registration cache (DirectPlacementCache), so a server
	// that pools its buffers registers each once per connection. Other
	// calls, and any call on a provider that cannot register its caller's
	// memory (verbs.Registrar), go through the connection's own memory
	// as without it. nil means every call goes through the connection's
	// own memory.
	CallBuffers CallBuffers
	// Memory bounds a responder's memory for chunk data (Read chunks
	// pulled, replies staged for RDMA Write); a zero field takes its
	// default (see MemoryLimits for each field's default and range).
	Memory MemoryLimits
	// SlowReply is how long a responder's call may wait, from its
	// arrival to its reply's posting, before the connection counts it
	// in Stats.SlowReplies and logs it (at Warn, at most one line a
	// second a connection): a server that sits on a call longer than its
	// client's timeout makes the client reconnect. A call still
	// unanswered when its connection closes is counted in
	// Stats.Unanswered and logged with its age. 0 means
	// DefaultSlowReply; negative counts and logs no slow reply.
	SlowReply time.Duration

	// Listener only (Listen). See Listener.

	// AcceptBacklog bounds, as listen(2)'s backlog does, the connections
	// a Listener holds for Accept: handshakes in progress plus
	// connections established but not yet returned by Accept. A
	// connection request beyond it takes the place of a handshake in
	// progress (whose dialer sees its connection fail: the oldest of the
	// source holding the most), or is rejected at once if there is none
	// (see Listener). 0 (or less) means DefaultAcceptBacklog; more than
	// MaxAcceptBacklog means MaxAcceptBacklog (listen(2) truncates to
	// net.core.somaxconn). HandshakeMemory bounds the handshakes in
	// progress too.
	AcceptBacklog int
	// HandshakeMemory bounds the memory a Listener's handshakes hold
	// registered. A handshake registers its Receive and Send buffers (for
	// each credit it may grant, GrantPolicy.Max, one of each of the
	// inline sizes offered: 0.5 MiB at the defaults) before it sends the
	// accept (RFC 8797 §4.2), and an evicted one holds them until it has
	// ended; so at most HandshakeMemory / (2 × that) handshakes are in
	// progress at once, at least one whatever its size and at most
	// AcceptBacklog (ListenerLimits.Handshakes): a request beyond them
	// takes the place of one, as beyond the backlog. 0 (or less) means
	// DefaultHandshakeMemory.
	HandshakeMemory int
	// MaxConns, if positive, caps the Listener's connections: those in
	// its backlog plus those returned by Accept and not yet closed. A
	// connection request beyond it takes the place of the oldest
	// handshake in progress, or is rejected at once if there is none;
	// closing a connection frees its place. 0 (or less) means no cap, as
	// for TCP.
	MaxConns int
	// HandshakeTimeout bounds one handshake of a Listener, from the
	// connection request to the peer's confirmation (the RTU of the IB
	// CM); a peer silent for longer loses its place. 0 (or less) means
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
}

// DefaultSlowReply is Config.SlowReply's default: a second, well under
// the Linux client's shortest usual RPC timeout over RDMA (timeo=50, 5 s)
// and far above what a call takes on a server that keeps up.
const DefaultSlowReply = time.Second

// Defaults of a Listener's limits.
const (
	// DefaultAcceptBacklog is 128, Linux's SOMAXCONN before 5.4
	// (net.core.somaxconn is 4096 since) and the rdma_listen backlog of
	// the rdmacore provider. It is lower than today's somaxconn because a
	// handshake in progress holds far more than a SYN: its queue pair
	// exists and its receive and send buffers (a Receive and a Send of
	// the inline sizes per credit: 0.5 MiB at the defaults) are
	// registered and posted before the accept is sent (RFC 8797 §4.2).
	// A flood of half-open peers, of any size, can so pin the resources
	// of at most 2 x AcceptBacklog handshakes (see Listener), 128 MiB
	// registered at the defaults (DefaultHandshakeMemory); the flood
	// cannot keep new requests out, each of which evicts a handshake.
	DefaultAcceptBacklog = 128
	// MaxAcceptBacklog is the largest AcceptBacklog: a larger one is
	// truncated to it, as listen(2) truncates to net.core.somaxconn.
	MaxAcceptBacklog = 65535
	// DefaultHandshakeMemory is Config.HandshakeMemory's default, 128
	// MiB: room for DefaultAcceptBacklog handshakes in progress and as
	// many ending, at the default credits and inline sizes (0.5 MiB each).
	DefaultHandshakeMemory = 128 << 20
	// DefaultHandshakeTimeout is the time a peer has to confirm an
	// accept.
	DefaultHandshakeTimeout = 10 * time.Second
)

// ReconnectPolicy says what a requester does when its connection dies.
//
// While it reconnects, reads wait and writes block (within their
// deadlines). Each new connection is negotiated afresh (RFC 8797: the
// responder may offer other sizes, or no private data at all) and starts
// again from a credit limit of 1 (RFC 8166 §3.3.3); the calls to
// retransmit go first, as credits allow, then new calls. A call written
// just as the connection died (its post failed because the connection was
// down) counts as in flight, not as a failed write. Close stops
// a reconnection in progress, cancelling its connection attempt, and
// returns once it has ended.
type ReconnectPolicy struct {
	// Enabled turns reconnection on; false (the zero value) fails the
	// Conn when its connection dies, and the other fields but
	// CallTimeout are then not used.
	Enabled bool
	// Retransmit resends the calls that were in flight on the new
	// connection, with their original XIDs, as the Linux client does
	// (the responder may so execute a call twice, as over TCP: duplicate
	// detection is the upper layer's). Each call is then kept in memory
	// until its reply was read. Otherwise each of them fails with a
	// synthesized SYSTEM_ERR reply.
	Retransmit bool
	// Backoff is the wait before the first attempt, doubled after each
	// failed one up to MaxBackoff (0: the defaults, 100 ms and 5 s).
	// Neither may be negative, nor Backoff longer than MaxBackoff.
	Backoff, MaxBackoff time.Duration
	// MaxAttempts bounds consecutive failed attempts; 0 (or less) means
	// 10. When they are spent the Conn fails: reads and writes return an
	// error saying so, wrapping the last attempt's error.
	MaxAttempts int
	// CallTimeout takes a call still without a reply after this long as
	// the sign of a stuck connection, as the Linux client takes an RPC
	// timeout: xprtrdma's xprt_rdma_timer disconnects, and NFS mounts
	// default to timeo=600 (60 s) over RDMA. The connection is dropped;
	// with Enabled it is established again and the calls in flight are
	// retransmitted or failed as above, without it the Conn fails with
	// ErrCallTimeout. Without a timeout, a call the responder dropped
	// (RFC 8166 leaves it no other choice for some malformed messages),
	// or whose Call was cancelled and whose reply never comes, would hold
	// its credit and XID forever. A watchdog ticking every quarter of
	// CallTimeout (at least every 10 ms) finds such a call between
	// CallTimeout and one tick later; no clock is read per call. 0 means
	// DefaultCallTimeout; a negative value disables it. It applies to
	// requesters whether or not Enabled is set.
	CallTimeout time.Duration
}

// MemoryLimits bounds the memory a responder spends on what its peers'
// chunks carry. A peer cannot make a responder hold more than these, however
// many calls naming large chunks it sends: calls and replies beyond a limit
// of Calls or Replies wait (their RDMA Reads or Writes are posted later),
// they are never refused for it; beyond Registered, their data is copied
// rather than placed in the RPC server's buffers. Registered memory is
// held only while data moves, or cached for a few seconds, and falls back
// once a burst is over.
//
// Each limit given (not 0) must be at least Config.MaxRPCSize, so that one
// call or reply of the largest size can always proceed, and a listener's
// limit at least a connection's (the default when that is 0): a smaller
// one, or a negative one, is an error of Dial and Listen.
//
// Half of each listener budget is kept for first shares: the bytes a
// connection holds beyond one message (MaxRPCSize) must leave that half
// free. Connections whose calls or replies never finish (a peer that stops
// answering our RDMA Reads, or acknowledging our RDMA Writes, until the
// queue pair's retries run out and the connection fails) so hold at most
// the other half, and every other connection still finds room for one
// message. Extra bytes that do not fit wait, in
// order, until there is room again.
type MemoryLimits struct {
	// Calls bounds, per connection, the bytes of Read chunk data of calls
	// from their first RDMA Read until the RPC server read them (registered
	// memory while the data is pulled, the Go heap after). 0 means
	// 8 × MaxRPCSize: like Linux's svcrdma, whose eight nfsd threads
	// (the default) each hold at most one call's pages.
	Calls int
	// Replies bounds, per connection, the registered memory staging
	// replies' RDMA Writes (the DDP-eligible result and the Reply chunk)
	// from the Write until the reply's Send completed, counting a result
	// written from the caller's own buffer (Conn.WriteMsgDirect) as if
	// it were staged. 0 means 8 × MaxRPCSize.
	Replies int
	// ListenerCalls and ListenerReplies bound the same over all
	// connections of a Listener. 0 means 64 × MaxRPCSize each.
	ListenerCalls, ListenerReplies int
	// Registered bounds, per connection, the bytes of the RPC server's
	// buffers registered at once, in use by calls and replies or cached
	// for reuse (Config.CallBuffers' call buffers, WriteMsgDirect's
	// replies: a pooled buffer stays registered, pinned and alive, in
	// the cache of every connection that used it). A registration beyond
	// it first evicts the connection's unused cached ones; if it still
	// does not fit, the call is pulled into, or the reply copied through,
	// the connection's pool memory instead (within Calls and Replies), as
	// without CallBuffers or WriteMsgDirect: the peer gets its reply,
	// only a copy is added (Stats.RegisterLimited). A cached registration
	// unused for two to four seconds is released, so an idle connection holds
	// none. 0 means 16 × MaxRPCSize (what Calls and Replies let be in
	// use at once, doubled for buffers rounded up to a pool's size
	// class); at least MaxRPCSize. The cache keeps at most
	// Config.DirectPlacementCache bytes of it unused.
	Registered int
	// ListenerRegistered bounds the same over all connections of a
	// Listener (ListenerStats.Registered); beyond it, as beyond
	// Registered, and every connection releases its unused cached
	// registrations within two seconds, so that the room goes to the
	// connections that need it now. 0 means 64 × MaxRPCSize; at least
	// Registered.
	ListenerRegistered int
}

// withDefaults returns m with every zero field set for a MaxRPCSize of
// maxRPC, and every limit raised to what one message of maxRPC bytes needs.
func (m MemoryLimits) withDefaults(maxRPC int) MemoryLimits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&m.Calls, 8*maxRPC)
	def(&m.Replies, 8*maxRPC)
	def(&m.ListenerCalls, 64*maxRPC)
	def(&m.ListenerReplies, 64*maxRPC)
	def(&m.Registered, 16*maxRPC)
	def(&m.ListenerRegistered, 64*maxRPC)
	m.Calls = max(m.Calls, maxRPC)
	m.Replies = max(m.Replies, maxRPC)
	m.ListenerCalls = max(m.ListenerCalls, m.Calls)
	m.ListenerReplies = max(m.ListenerReplies, m.Replies)
	m.Registered = max(m.Registered, maxRPC)
	m.ListenerRegistered = max(m.ListenerRegistered, m.Registered)
	return m
}

// checkAt returns the error Dial and Listen (op "dial" or "listen") return
// for a nil Config, a Config without a Provider (ErrNoProvider) or with a
// field out of its range (Check, ErrConfig), as a *net.OpError; or nil.
func (c *Config) checkAt(op, addr string) error {
	err := c.Check()
	if c == nil || c.Provider == nil {
		err = ErrNoProvider
	}
	if err != nil {
		return &net.OpError{Op: op, Net: "rdma", Addr: stringAddr(addr), Err: err}
	}
	return nil
}

// withDefaults returns a copy of c with every zero field set.
func (c *Config) withDefaults(role cmpriv.Role) Config {
	var cfg Config
	if c != nil {
		cfg = *c
	}
	if cfg.InlineSend == 0 {
		cfg.InlineSend = DefaultInline
	}
	if cfg.InlineRecv == 0 {
		cfg.InlineRecv = DefaultInline
	}
	if cfg.Credits == 0 {
		if role == cmpriv.Requester {
			cfg.Credits = credits.DefaultRequest
		} else {
			cfg.Credits = credits.DefaultMaxGrant
		}
	}
	if cfg.GrantPolicy.Max == 0 {
		cfg.GrantPolicy.Max = cfg.Credits
	}
	if cfg.Limits == (chunks.Limits{}) {
		cfg.Limits = chunks.DefaultLimits
	}
	if cfg.MaxRPCSize == 0 {
		cfg.MaxRPCSize = DefaultMaxRPCSize
	}
	if cfg.DirectPlacementMin == 0 {
		cfg.DirectPlacementMin = DefaultDirectPlacementMin
	}
	if cfg.DirectPlacementCache == 0 {
		cfg.DirectPlacementCache = DefaultDirectPlacementCache
	}
	if cfg.SlowReply == 0 {
		cfg.SlowReply = DefaultSlowReply
	}
	if cfg.PostAsyncMin == 0 {
		cfg.PostAsyncMin = DefaultPostAsyncMin
	}
	cfg.Memory = cfg.Memory.withDefaults(cfg.MaxRPCSize)
	if cfg.Binding == nil {
		cfg.Binding = NullBinding{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.Reconnect.Backoff == 0 {
		cfg.Reconnect.Backoff = defaultBackoff
	}
	if cfg.Reconnect.MaxBackoff == 0 {
		cfg.Reconnect.MaxBackoff = defaultMaxBackoff
	}
	if cfg.Reconnect.CallTimeout == 0 {
		cfg.Reconnect.CallTimeout = DefaultCallTimeout
	}
	if cfg.Reconnect.MaxAttempts <= 0 {
		cfg.Reconnect.MaxAttempts = 10
	}
	if cfg.AcceptBacklog <= 0 {
		cfg.AcceptBacklog = DefaultAcceptBacklog
	}
	cfg.AcceptBacklog = min(cfg.AcceptBacklog, MaxAcceptBacklog)
	if cfg.MaxConns < 0 {
		cfg.MaxConns = 0
	}
	if cfg.HandshakeMemory <= 0 {
		cfg.HandshakeMemory = DefaultHandshakeMemory
	}
	if cfg.HandshakeTimeout <= 0 {
		cfg.HandshakeTimeout = DefaultHandshakeTimeout
	}
	return cfg
}

// offer is the RFC 8797 message this configuration sends.
func (c *Config) offer() cmpriv.Message {
	m, _ := cmpriv.Message{RemoteInvalidate: !c.NoRemoteInvalidate, SendSize: c.InlineSend, RecvSize: c.InlineRecv}.Normalize()
	return m
}
