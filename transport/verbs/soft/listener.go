package soft

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// listenBacklog is the number of connection requests that may wait for
// Listener.Accept.
const listenBacklog = 128

var errListenerClosed = fmt.Errorf("soft: listener closed: %w", verbs.ErrClosed)

// listener accepts TCP connections and reads their connect requests in the
// background; Accept hands them out.
type listener struct {
	p         *Provider
	nl        net.Listener
	reqs      chan *connRequest
	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	mu         sync.Mutex
	handshakes map[net.Conn]struct{} // connect requests being read
}

// Listen listens on a TCP address ("host:port"; port 0 picks one).
func (p *Provider) Listen(addr string) (verbs.Listener, error) {
	nl, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("soft: listen %s: %w", addr, err)
	}
	l := &listener{
		p:          p,
		nl:         nl,
		reqs:       make(chan *connRequest, listenBacklog),
		closed:     make(chan struct{}),
		handshakes: make(map[net.Conn]struct{}),
	}
	l.wg.Add(1)
	go l.acceptLoop()
	return l, nil
}

func (l *listener) acceptLoop() {
	defer l.wg.Done()
	backoff := time.Millisecond
	for {
		nc, err := l.nl.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors or the like: back off, as net/http does.
			select {
			case <-l.closed:
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, time.Second)
			continue
		}
		backoff = time.Millisecond
		l.mu.Lock()
		select {
		case <-l.closed:
			l.mu.Unlock()
			_ = nc.Close()
			return
		default:
		}
		l.handshakes[nc] = struct{}{}
		l.wg.Add(1)
		l.mu.Unlock()
		go l.handshake(nc)
	}
}

// handshake reads the connect request of nc and queues it for Accept.
func (l *listener) handshake(nc net.Conn) {
	defer l.wg.Done()
	_ = nc.SetDeadline(time.Now().Add(handshakeTimeout))
	br := bufio.NewReaderSize(nc, ioBufferSize)
	m, pd, err := readCM(br)
	l.mu.Lock()
	delete(l.handshakes, nc)
	l.mu.Unlock()
	if err != nil || m.Type != cmREQ || nc.SetDeadline(time.Time{}) != nil {
		_ = nc.Close()
		return
	}
	r := &connRequest{
		p:  l.p,
		nc: nc,
		br: br,
		m:  m,
		pd: padPrivateData(pd, connectPrivateDataLen),
	}
	select {
	case l.reqs <- r:
	case <-l.closed:
		_ = r.Reject(nil)
	}
}

// Accept returns the next connection request.
func (l *listener) Accept(ctx context.Context) (verbs.ConnRequest, error) {
	select {
	case <-l.closed:
		return nil, errListenerClosed
	default:
	}
	select {
	case r := <-l.reqs:
		return r, nil
	case <-l.closed:
		return nil, errListenerClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// Addr returns the TCP address listened on.
func (l *listener) Addr() net.Addr { return l.nl.Addr() }

// Close stops listening, rejects the requests not yet accepted and waits
// for the listener's goroutines.
func (l *listener) Close() error {
	var err error
	l.closeOnce.Do(func() {
		l.mu.Lock()
		close(l.closed)
		for nc := range l.handshakes {
			_ = nc.Close()
		}
		l.mu.Unlock()
		err = l.nl.Close()
		l.wg.Wait()
		for {
			select {
			case r := <-l.reqs:
				_ = r.Reject(nil)
			default:
				return
			}
		}
	})
	return err
}

// connRequest is a connect request waiting for Accept or Reject. Until
// then its TCP connection stays open and the dialer waits (bounded by its
// context and handshakeTimeout).
type connRequest struct {
	p  *Provider
	nc net.Conn
	br *bufio.Reader
	m  cmMessage
	pd []byte

	mu   sync.Mutex
	used bool
}

// PrivateData returns the connect request's private data, zero-padded to
// 56 bytes.
func (r *connRequest) PrivateData() []byte { return bytes.Clone(r.pd) }

// RemoteAddr returns the dialer's TCP address.
func (r *connRequest) RemoteAddr() net.Addr { return r.nc.RemoteAddr() }

// take marks the request used; it fails if it already was.
func (r *connRequest) take() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.used {
		return false
	}
	r.used = true
	return true
}

// Accept creates the queue pair, runs opts.Setup, sends the accept (REP)
// and waits for the dialer's confirmation (RTU). If Setup fails the
// request is rejected.
func (r *connRequest) Accept(ctx context.Context, opts *verbs.ConnOptions) (verbs.Conn, error) {
	if opts == nil {
		opts = &verbs.ConnOptions{}
	}
	caps, err := opts.Check(true, maxCaps)
	if err != nil {
		return nil, fmt.Errorf("soft: accept: %w", err)
	}
	if !r.take() {
		return nil, errRequestUsed
	}
	c := newConn(r.p, r.nc, r.br, caps)
	c.peerPD = r.pd
	c.expSeq = r.m.StartSeq
	c.readLimit = min(caps.ReadDepth, int(r.m.ReadDepth))
	if opts.Setup != nil {
		if err := opts.Setup(c); err != nil {
			rej := cmMessage{Type: cmREJ}
			_ = r.nc.SetWriteDeadline(time.Now().Add(lingerTimeout))
			_, _ = r.nc.Write(appendCM(nil, &rej))
			_ = c.Close()
			return nil, fmt.Errorf("soft: setup: %w", err)
		}
	}
	fail := func(err error) (verbs.Conn, error) {
		_ = c.Close()
		if ctx.Err() != nil {
			return nil, fmt.Errorf("soft: accept: %w", ctx.Err())
		}
		return nil, fmt.Errorf("soft: accept: %w: %w", verbs.ErrDisconnected, err)
	}
	if c.isClosed() {
		return nil, errConnClosed
	}
	stop := watchContext(ctx, r.nc)
	rep := cmMessage{Type: cmREP, ReadDepth: uint8(caps.ReadDepth), StartSeq: c.sendSeq, PrivateData: opts.PrivateData}
	if _, err := r.nc.Write(appendCM(nil, &rep)); err != nil {
		stop()
		return fail(err)
	}
	m, _, err := readCM(r.br)
	if err != nil {
		stop()
		return fail(err)
	}
	if m.Type != cmRTU {
		stop()
		return fail(errHandshake)
	}
	if !stop() {
		return fail(ctx.Err())
	}
	if err := r.nc.SetDeadline(time.Time{}); err != nil {
		return fail(err)
	}
	c.start()
	return c, nil
}

// Reject refuses the request (REJ) with optional private data, at most
// 148 bytes.
func (r *connRequest) Reject(privateData []byte) error {
	if len(privateData) > rejectPrivateDataLen {
		return errRejectPrivateData
	}
	if !r.take() {
		return errRequestUsed
	}
	rej := cmMessage{Type: cmREJ, PrivateData: privateData}
	_ = r.nc.SetWriteDeadline(time.Now().Add(lingerTimeout))
	_, err := r.nc.Write(appendCM(nil, &rej))
	if cerr := r.nc.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("soft: reject: %w", err)
	}
	return nil
}
