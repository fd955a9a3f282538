package soft

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// Provider is the software verbs provider. Its zero value is ready to use.
type Provider struct {
	// Faults, if set, injects failures into every connection the
	// provider makes (see Faults).
	Faults *Faults

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

// Dial connects to a soft listener at addr over TCP: it creates the queue
// pair, runs opts.Setup, sends the connect request (REQ) with the private
// data and waits for the accept (REP) or the reject (REJ), then confirms
// (RTU).
func (p *Provider) Dial(ctx context.Context, addr string, opts *verbs.ConnOptions) (verbs.Conn, error) {
	if opts == nil {
		opts = &verbs.ConnOptions{}
	}
	caps, err := opts.Check(false, maxCaps)
	if err != nil {
		return nil, fmt.Errorf("soft: dial %s: %w", addr, err)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("soft: dial %s: %w: %w", addr, verbs.ErrRefused, err)
		}
		return nil, fmt.Errorf("soft: dial %s: %w", addr, err)
	}
	c := newConn(p, nc, bufio.NewReaderSize(nc, ioBufferSize), caps)
	if opts.Setup != nil {
		if err := opts.Setup(c); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("soft: setup: %w", err)
		}
		if c.isClosed() {
			return nil, errConnClosed
		}
	}
	fail := func(err error) (verbs.Conn, error) {
		_ = c.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("soft: dial %s: %w", addr, ctx.Err())
		}
		return nil, fmt.Errorf("soft: dial %s: handshake: %w: %w", addr, verbs.ErrDisconnected, err)
	}
	stop := watchContext(ctx, nc)
	req := cmMessage{Type: cmREQ, ReadDepth: uint8(caps.ReadDepth), StartSeq: c.sendSeq, PrivateData: opts.PrivateData}
	if _, err := nc.Write(appendCM(nil, &req)); err != nil {
		stop()
		return fail(err)
	}
	m, pd, err := readCM(c.br)
	if err != nil {
		stop()
		return fail(err)
	}
	switch m.Type {
	case cmREJ:
		stop()
		_ = c.Close()
		return nil, fmt.Errorf("soft: dial %s: %w", addr, &verbs.RejectedError{PrivateData: padPrivateData(pd, rejectPrivateDataLen)})
	case cmREP:
	default:
		stop()
		return fail(errHandshake)
	}
	rtu := cmMessage{Type: cmRTU}
	if _, err := nc.Write(appendCM(nil, &rtu)); err != nil {
		stop()
		return fail(err)
	}
	if !stop() {
		return fail(ctx.Err())
	}
	if err := nc.SetDeadline(time.Time{}); err != nil {
		return fail(err)
	}
	c.peerPD = padPrivateData(pd, acceptPrivateDataLen)
	c.expSeq = m.StartSeq
	c.readLimit = min(caps.ReadDepth, int(m.ReadDepth))
	c.start()
	return c, nil
}

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
