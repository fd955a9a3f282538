package soft

import (
	"context"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// Provider is the software verbs provider. Its zero value is ready to use.
type Provider struct {
	// Faults, if set, injects failures into every connection the
	// provider makes (see Faults).
	Faults *Faults

	// AckTimeout and RetryCount are the transport timer of every queue
	// pair the provider makes, as the local ACK timeout and retry_count
	// of an RC queue pair (IBA 9.7.6.1.3): an RDMA Read, RDMA Write or
	// Send the peer does not answer fails with StatusRetryExceeded (the
	// queue pair goes to the error state, the rest is flushed) once
	// RetryCount + 1 ACK timeouts in a row passed without progress on it:
	// some 7.5 s by default. 0 means DefaultAckTimeout and
	// DefaultRetryCount; a negative AckTimeout waits forever (IBA's
	// timeout 0), a negative RetryCount fails at the first timeout.
	AckTimeout time.Duration
	RetryCount int

	// registered counts the bytes of the regions of the provider's
	// connections that are not closed yet.
	registered atomic.Int64
}

var (
	_ verbs.Provider    = (*Provider)(nil)
	_ verbs.MemoryMeter = (*Provider)(nil)
)

// RegisteredBytes returns the bytes of the regions allocated through the
// provider's connections and not yet closed (by Region.Close or by the
// connection's Close).
func (p *Provider) RegisteredBytes() int64 { return p.registered.Load() }

// Name returns "soft".
func (p *Provider) Name() string { return "soft" }

var (
	errRejectPrivateData = fmt.Errorf("soft: reject private data over %d bytes: %w", rejectPrivateDataLen, verbs.ErrPrivateDataTooLong)
	errHandshake         = fmt.Errorf("soft: unexpected CM message: %w", verbs.ErrDisconnected)
	errRequestUsed       = fmt.Errorf("soft: connection request already accepted or rejected: %w", verbs.ErrClosed)
)

// aLongTimeAgo is a deadline in the past, to abort blocked I/O.
var aLongTimeAgo = time.Unix(1, 0)

// isClosed reports whether Close was called (Setup may do so).
func (c *conn) isClosed() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.closed
}

// watchContext bounds the handshake on nc by handshakeTimeout and by ctx.
// The returned stop reports false if ctx fired, in which case nc's
// deadline is in the past and the connection must be abandoned.
func watchContext(ctx context.Context, nc net.Conn) (stop func() bool) {
	_ = nc.SetDeadline(time.Now().Add(handshakeTimeout))
	return context.AfterFunc(ctx, func() { _ = nc.SetDeadline(aLongTimeAgo) })
}

// readCM reads one CM message; the private data is at most 196 bytes,
// checked before it is read.
func readCM(r io.Reader) (cmMessage, []byte, error) {
	var hdr [cmHeaderLen]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return cmMessage{}, nil, err
	}
	m, n, err := parseCMHeader(hdr[:])
	if err != nil {
		return cmMessage{}, nil, err
	}
	pd := make([]byte, n)
	if _, err := io.ReadFull(r, pd); err != nil {
		return cmMessage{}, nil, err
	}
	return m, pd, nil
}
