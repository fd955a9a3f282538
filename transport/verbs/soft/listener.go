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

// Limits of a listener. A TCP connection whose connect request is still
// being read, and a request read but not yet taken by Accept, each hold a
// place in the backlog. A connection arriving while all listenBacklog
// places are taken takes the place of the oldest connection whose request
// is still being read, which is closed: silent connections (TCP, never a
// connect request) so churn the places but cannot keep a dialer out, whose
// request follows its TCP handshake at once. If every place holds a
// request read and not yet taken, the new connection is rejected at once
// (REJ, then closed) without a goroutine or a buffer spent on it, as an IB
// CM answers a REQ it has no room for. 128 is the rdma_listen backlog of
// the rdmacore provider and Linux's SOMAXCONN before 5.4.
const listenBacklog = 128

// reqTimeout bounds the wait for a connection's connect request: a peer
// that opens a connection and stays silent loses its place after it. A
// variable for the tests.
var reqTimeout = 10 * time.Second

var errListenerClosed = fmt.Errorf("soft: listener closed: %w", verbs.ErrClosed)

// listener accepts TCP connections and reads their connect requests in the
// background, at most listenBacklog at a time; Accept hands them out.
type listener struct {
	p         *Provider
	nl        net.Listener
	reqs      chan *connRequest // never blocks a sender: see pending
	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup

	mu sync.Mutex
	// handshakes holds the connections whose connect request is being
	// read, each with its arrival number (smaller is older); one evicted
	// or closed is no longer in it.
	handshakes map[net.Conn]uint64
	arrivals   uint64
	// pending counts the connections holding a place in the backlog:
	// those in handshakes and the requests in reqs (at most
	// listenBacklog, reqs' capacity).
	pending int
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
		handshakes: make(map[net.Conn]uint64),
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
		if l.pending >= listenBacklog {
			if !l.evictOldestLocked() {
				l.mu.Unlock()
				_ = rejectConn(nc, nil)
				continue
			}
		} else {
			l.pending++
		}
		l.arrivals++
		l.handshakes[nc] = l.arrivals
		l.wg.Add(1)
		l.mu.Unlock()
		go l.handshake(nc)
	}
}

// rejectConn sends a REJ on nc, whatever it sent, and closes it. The write
// of a few bytes on a connection with nothing else to send does not block
// (and is bounded by lingerTimeout if it does).
func rejectConn(nc net.Conn, privateData []byte) error {
	rej := cmMessage{Type: cmREJ, PrivateData: privateData}
	_ = nc.SetWriteDeadline(time.Now().Add(lingerTimeout))
	_, err := nc.Write(appendCM(nil, &rej))
	if cerr := nc.Close(); err == nil {
		err = cerr
	}
	return err
}

// evictOldestLocked closes the oldest connection whose connect request is
// being read, and reports whether there was one; its place in the backlog
// passes to the caller. l.mu is held.
func (l *listener) evictOldestLocked() bool {
	var oldest net.Conn
	var n uint64
	for nc, a := range l.handshakes {
		if oldest == nil || a < n {
			oldest, n = nc, a
		}
	}
	if oldest == nil {
		return false
	}
	delete(l.handshakes, oldest)
	_ = oldest.Close()
	return true
}

// release gives back a place in the backlog.
func (l *listener) release() {
	l.mu.Lock()
	l.pending--
	l.mu.Unlock()
}

// handshake reads the connect request of nc and queues it for Accept. It
// reads through a buffer of one CM message, not a stream buffer, so that a
// silent peer costs little: a dialer sends nothing after its REQ until it
// got the answer (bytes past the REQ are a protocol violation).
func (l *listener) handshake(nc net.Conn) {
	defer l.wg.Done()
	_ = nc.SetDeadline(time.Now().Add(reqTimeout))
	br := bufio.NewReaderSize(nc, cmMaxLen)
	m, pd, err := readCM(br)
	l.mu.Lock()
	_, mine := l.handshakes[nc]
	delete(l.handshakes, nc)
	l.mu.Unlock()
	if !mine {
		// Evicted (Close closes but leaves them in handshakes): the
		// place went to a newer connection.
		_ = nc.Close()
		return
	}
	if err != nil || m.Type != cmREQ || br.Buffered() > 0 || nc.SetDeadline(time.Time{}) != nil {
		_ = nc.Close()
		l.release()
		return
	}
	r := &connRequest{
		p:      l.p,
		nc:     nc,
		m:      m,
		pd:     padPrivateData(pd, connectPrivateDataLen),
		queued: time.Now(),
	}
	select {
	case l.reqs <- r:
	case <-l.closed:
		_ = r.Reject(nil)
		l.release()
	default: // cannot happen: pending bounds the queue
		_ = r.Reject(nil)
		l.release()
	}
}

// Accept returns the next connection request. A request that waited
// longer than the dialer does (handshakeTimeout) is rejected instead: its
// dialer gave up.
func (l *listener) Accept(ctx context.Context) (verbs.ConnRequest, error) {
	for {
		select {
		case <-l.closed:
			return nil, errListenerClosed
		default:
		}
		select {
		case r := <-l.reqs:
			l.release()
			if time.Since(r.queued) > handshakeTimeout {
				_ = r.Reject(nil)
				continue
			}
			return r, nil
		case <-l.closed:
			return nil, errListenerClosed
		case <-ctx.Done():
			return nil, ctx.Err()
		}
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
				l.release()
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
	p      *Provider
	nc     net.Conn
	m      cmMessage
	pd     []byte
	queued time.Time // when the listener read it

	mu   sync.Mutex
	used bool
}

// PrivateData returns the connect request's private data, zero-padded to
// 56 bytes.
func (r *connRequest) PrivateData() []byte { return bytes.Clone(r.pd) }

// RemoteAddr returns the dialer's TCP address.
func (r *connRequest) RemoteAddr() net.Addr { return r.nc.RemoteAddr() }

// LocalAddr returns the address the request was sent to.
func (r *connRequest) LocalAddr() net.Addr { return r.nc.LocalAddr() }

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
	br := bufio.NewReaderSize(r.nc, ioBufferSize)
	c := newConn(r.p, r.nc, br, caps)
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
	m, _, err := readCM(br)
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
	if err := rejectConn(r.nc, privateData); err != nil {
		return fmt.Errorf("soft: reject: %w", err)
	}
	return nil
}
