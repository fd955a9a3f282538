package rdmacore

import (
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// Provider is the rdma-core verbs provider: reliable connections through
// librdmacm (RDMA_PS_TCP) and libibverbs. Its zero value is ready to use; a
// Provider must not be copied after first use.
//
// A Provider owns one RDMA-CM event channel, shared by its listeners and
// connections and served by one goroutine, and one protection domain per
// RDMA device. Both exist while the provider has a listener or a
// connection, and are released with the last one.
type Provider struct {
	// LocalAddr, if set, is the IP address Dial connects from (the source
	// address of rdma_resolve_addr): it picks the RDMA device and port
	// when the routing table alone would choose another one, as with
	// policy routing. Empty lets the routing table decide.
	LocalAddr string

	// PollBeforeWait is how long a connection's Wait polls the completion
	// queue before it arms the queue and parks on the completion channel
	// (0: DefaultPollBeforeWait; negative: never poll first). A completion
	// that arrives within it — typically the Send just posted — is taken
	// without the completion event, the netpoller's wake-up and the
	// re-arming; the cost is up to this much CPU time per idle Wait.
	// The clock is read every 16 polls, not at each, so Wait polls at
	// least 16 times: where a poll costs more than PollBeforeWait/16 (as
	// under an emulator) that floor, not the setting, is how long it
	// polls.
	// Between polls Wait yields its goroutine and its OS thread
	// (sched_yield), so that polling never keeps a thread that is ready
	// to run (the peer's, on a machine with few CPUs) off the CPU.
	PollBeforeWait time.Duration
	// PollBeforeWaitMax is how long Wait may poll when the connection's
	// recent Waits were short (0: DefaultPollBeforeWaitMax; negative, or
	// not above PollBeforeWait: poll for PollBeforeWait only). Wait then
	// polls for up to twice the median of the last 8 Waits' lengths
	// (from Wait's start to the completion it found), at least
	// PollBeforeWait, at most this; when that median is over this (a
	// connection idle between RPCs), for PollBeforeWait only. With one
	// RPC in flight the next message comes a round trip after the last,
	// and a poll that covers it costs less than the sleep and wake-up it
	// saves.
	PollBeforeWaitMax time.Duration

	state providerState
	// registered counts the bytes of the regions of the provider's
	// connections that are not closed yet, and of its spare regions.
	registered atomic.Int64
	// spareBytes mirrors the spare pool's size, for SpareBytes.
	spareBytes atomic.Int64
}

// SpareLimit is the most bytes of spare regions a Provider keeps: regions
// of connections that closed without ever being established (a handshake
// that failed, timed out or was given up), kept registered and zeroed
// for the next AllocRegion of the same size on the same device, which so
// costs neither ibv_reg_mr nor ibv_dereg_mr (pinning and unpinning every
// page). A region that does not fit is freed at once. The regions of a
// connection that was established are never kept: its peer may still
// hold rkeys of windows bound to them.
const SpareLimit = 16 << 20

// SpareIdle is how long a spare region stays unused before it is
// deregistered and unmapped.
const SpareIdle = 2 * time.Second

// DefaultPollBeforeWait is Provider.PollBeforeWait's default.
const DefaultPollBeforeWait = 50 * time.Microsecond

// DefaultPollBeforeWaitMax is Provider.PollBeforeWaitMax's default.
const DefaultPollBeforeWaitMax = 2 * time.Millisecond

var (
	_ verbs.Provider    = (*Provider)(nil)
	_ verbs.MemoryMeter = (*Provider)(nil)
)

// RegisteredBytes returns the bytes registered with ibv_reg_mr for the
// regions of the provider's connections that are not yet closed (by
// Region.Close or by the connection's Close), and for its spare regions
// (SpareBytes).
func (p *Provider) RegisteredBytes() int64 { return p.registered.Load() }

// SpareBytes returns the bytes of the provider's spare regions, at most
// SpareLimit: registered, counted in RegisteredBytes, and owned by no
// connection (see SpareLimit and SpareIdle).
func (p *Provider) SpareBytes() int64 { return p.spareBytes.Load() }

// Name returns "rdmacore".
func (p *Provider) Name() string { return "rdmacore" }
