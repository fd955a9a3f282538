package soft

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

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
