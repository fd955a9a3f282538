package verbs

import (
	"context"
	"fmt"
	"net"
)

// CM private data limits as rdma_cm delivers them over the IB CM: the
// REQ's 92 bytes less rdma_cm's 36-byte header, the REP's 196 and the
// REJ's 148 (IB_CM_REQ/REP/REJ_PRIVATE_DATA_SIZE). The CM always delivers
// the whole field, zero-padded, whatever the sender gave (cma.c).
const (
	// ConnectPrivateDataLen is the most private data a connect request
	// carries (ConnOptions.PrivateData of Dial).
	ConnectPrivateDataLen = 56
	// AcceptPrivateDataLen is the most private data an accept carries
	// (ConnOptions.PrivateData of ConnRequest.Accept).
	AcceptPrivateDataLen = 196
	// RejectPrivateDataLen is the most private data a reject carries
	// (ConnRequest.Reject).
	RejectPrivateDataLen = 148
)

// QueueCaps sizes a connection's queues (struct ibv_qp_cap plus the CQ).
type QueueCaps struct {
	// SendQueue is the number of send work requests that may be
	// outstanding (posted and not yet completed).
	SendQueue int
	// RecvQueue is the number of Receives that may be posted at once.
	RecvQueue int
	// MaxSGE is the largest scatter/gather list of one work request.
	MaxSGE int
	// ReadDepth is the number of RDMA Reads this side may have
	// outstanding towards the peer (initiator depth / responder
	// resources).
	ReadDepth int
}

// DefaultQueueCaps are queue sizes that suit an RPC-over-RDMA connection
// with 128 credits.
var DefaultQueueCaps = QueueCaps{SendQueue: 512, RecvQueue: 256, MaxSGE: 4, ReadDepth: 16}

// WithDefaults returns q with every zero field taken from
// DefaultQueueCaps. Providers call it before checking their own limits.
func (q QueueCaps) WithDefaults() QueueCaps {
	d := DefaultQueueCaps
	if q.SendQueue == 0 {
		q.SendQueue = d.SendQueue
	}
	if q.RecvQueue == 0 {
		q.RecvQueue = d.RecvQueue
	}
	if q.MaxSGE == 0 {
		q.MaxSGE = d.MaxSGE
	}
	if q.ReadDepth == 0 {
		q.ReadDepth = d.ReadDepth
	}
	return q
}

// Check fails unless every field of q lies in [0, limit's field]; the
// error matches ErrNotSupported and names the field. Providers call it
// with their own limits on caps resolved by WithDefaults.
func (q QueueCaps) Check(limit QueueCaps) error {
	for _, f := range []struct {
		name     string
		v, limit int
	}{
		{"SendQueue", q.SendQueue, limit.SendQueue},
		{"RecvQueue", q.RecvQueue, limit.RecvQueue},
		{"MaxSGE", q.MaxSGE, limit.MaxSGE},
		{"ReadDepth", q.ReadDepth, limit.ReadDepth},
	} {
		if f.v < 0 || f.v > f.limit {
			return fmt.Errorf("%w: queue capacity %s %d out of range [0, %d]", ErrNotSupported, f.name, f.v, f.limit)
		}
	}
	return nil
}

// ConnOptions apply to both sides of a connection.
type ConnOptions struct {
	// PrivateData is sent with the connect request (at most 56 bytes) or
	// with the accept (at most 196 bytes). The RPC-over-RDMA transport
	// puts its RFC 8797 message here.
	PrivateData []byte
	// Caps sizes the queues; zero fields take DefaultQueueCaps.
	Caps QueueCaps
	// Setup, if set, runs once the queue pair exists and before the
	// connection is established: allocate regions and post Receives
	// here, so that no Send of the peer can find the receive queue
	// empty. Send work requests cannot be posted yet (the queue pair is
	// not ready to send). An error aborts the connection (a listener
	// rejects it).
	Setup func(Conn) error
}

// Check checks o for Provider.Dial (accept false) or ConnRequest.Accept
// (accept true), as both providers do before anything else: the private
// data against the CM's limit (ConnectPrivateDataLen or
// AcceptPrivateDataLen; the error matches ErrPrivateDataTooLong), and the
// queue caps, zero fields taken from DefaultQueueCaps, against the
// provider's limit (QueueCaps.Check). It returns the resolved caps. A nil
// o checks as the zero options.
func (o *ConnOptions) Check(accept bool, limit QueueCaps) (QueueCaps, error) {
	if o == nil {
		o = &ConnOptions{}
	}
	what, max := "connect", ConnectPrivateDataLen
	if accept {
		what, max = "accept", AcceptPrivateDataLen
	}
	if len(o.PrivateData) > max {
		return QueueCaps{}, fmt.Errorf("%w: %s private data of %d bytes, over %d", ErrPrivateDataTooLong, what, len(o.PrivateData), max)
	}
	caps := o.Caps.WithDefaults()
	if err := caps.Check(limit); err != nil {
		return QueueCaps{}, err
	}
	return caps, nil
}

// Conn is one reliable connection (an RC queue pair with its completion
// queue and protection domain). Posting and polling may be called from any
// goroutine; one goroutine should poll.
type Conn interface {
	// PostSend posts work requests to the send queue, in order, in one
	// batch. On error, none from the failing one on was posted.
	PostSend(wrs []WorkRequest) error
	// PostRecv posts Receives in one batch.
	PostRecv(rrs []RecvRequest) error
	// Poll moves up to len(cs) completions into cs without blocking.
	Poll(cs []Completion) (int, error)
	// Wait blocks until a completion may be ready to Poll, the connection
	// is closed, or ctx is done. It parks the goroutine on the Go
	// netpoller (or a channel), never an OS thread.
	Wait(ctx context.Context) error

	// AllocRegion allocates and registers size bytes.
	AllocRegion(size int) (Region, error)
	// AllocWindow allocates an unbound memory window.
	AllocWindow() (Window, error)

	// PeerPrivateData is the private data the peer sent, as delivered by
	// the CM: zero-padded to the CM's length (56 bytes on connect, 196
	// on accept), also when the peer sent none (the IB CM always
	// delivers the whole field: cma.c, cma_set_req_event_data).
	PeerPrivateData() []byte
	// Done is closed when the connection is disconnected, by either side
	// or by a fatal error; Err then tells why.
	Done() <-chan struct{}
	Err() error
	LocalAddr() net.Addr
	RemoteAddr() net.Addr
	// Close disconnects (rdma_disconnect), flushes outstanding work
	// requests and frees every resource of the connection. Idempotent.
	Close() error
}

// ConnRequest is an incoming connection request, seen by the listener
// before it decides to accept.
type ConnRequest interface {
	// PrivateData is the private data of the connect request as
	// delivered: zero-padded to 56 bytes by the IB CM, even if the peer
	// sent none.
	PrivateData() []byte
	RemoteAddr() net.Addr
	// LocalAddr is the address the request was sent to: the local end
	// of the connection it would make (nil if the provider cannot tell).
	// It may differ from the Listener's own: the RDMA CM hands a listener
	// bound to a loopback address the requests sent to its device's
	// other addresses.
	LocalAddr() net.Addr
	// Accept creates the queue pair, runs opts.Setup and accepts with
	// opts.PrivateData.
	Accept(ctx context.Context, opts *ConnOptions) (Conn, error)
	// Reject refuses the request, with optional private data (at most
	// 148 bytes); the dialer's error is a *RejectedError.
	Reject(privateData []byte) error
}

// Listener waits for connection requests on an address in the RDMA-CM TCP
// port space (RDMA_PS_TCP).
type Listener interface {
	// Accept returns the next connection request. After Close it returns
	// an error wrapping ErrClosed.
	Accept(ctx context.Context) (ConnRequest, error)
	Addr() net.Addr
	Close() error
}

// Provider is a verbs implementation.
type Provider interface {
	// Name identifies the provider ("soft", "rdmacore").
	Name() string
	// Dial connects to addr ("host:port"), sending opts.PrivateData with
	// the connect request. A rejected request fails with a
	// *RejectedError (errors.Is ErrRejected).
	Dial(ctx context.Context, addr string, opts *ConnOptions) (Conn, error)
	// Listen listens on addr ("host:port"; port 0 picks one).
	Listen(addr string) (Listener, error)
}
