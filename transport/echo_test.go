package transport

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// Test program: procedure 1 echoes its opaque argument as an opaque result;
// procedure 2 takes a count and returns that many bytes (a READ-like
// procedure); procedure 3 takes opaque data and returns its length (a
// WRITE-like procedure).
const (
	testProg     = 0x20000099
	procEcho     = 1
	procRead     = 2
	procWrite    = 3
	testMaxReply = 1 << 20
)

// testBinding marks the opaque argument of procWrite and the opaque result
// of procRead as DDP-eligible, like NFSv3 WRITE and READ.
type testBinding struct{ ddp bool }

func (b testBinding) Call(h *xdr.CallHeader, msg []byte, args int) CallInfo {
	r := xdr.NewReader(msg[args:])
	switch h.Proc {
	case 0:
		return CallInfo{MaxReply: 24}
	case procEcho:
		n, _ := r.Uint32()
		return CallInfo{MaxReply: 24 + 4 + xdr.RoundUp(int(n))}
	case procRead:
		n, _ := r.Uint32()
		info := CallInfo{MaxReply: 24 + 4 + xdr.RoundUp(int(n))}
		if b.ddp {
			info.ReplyData = int(n)
		}
		return info
	case procWrite:
		n, _ := r.Uint32()
		info := CallInfo{MaxReply: 28}
		if b.ddp {
			info.Arg = DataItem{Off: args + 4, N: int(n), Present: true}
		}
		return info
	}
	return CallInfo{}
}

func (b testBinding) ReplyData(h *xdr.CallHeader, reply []byte, results int) DataItem {
	if !b.ddp || h.Proc != procRead || len(reply) < results+4 {
		return DataItem{}
	}
	r := xdr.NewReader(reply[results:])
	n, _ := r.Uint32()
	return DataItem{Off: results + 4, N: int(n), Present: true}
}

func appendCall(b []byte, xid, proc uint32) []byte {
	h := xdr.CallHeader{XID: xid, Prog: testProg, Vers: 1, Proc: proc}
	return h.Append(b)
}

func appendReply(b []byte, xid uint32) []byte {
	h := xdr.ReplyHeader{XID: xid, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}
	return h.Append(b)
}

// pattern returns n bytes of a pattern that depends on seed.
func pattern(n int, seed byte) []byte {
	p := make([]byte, n)
	for i := range p {
		p[i] = byte(i*7) + seed
	}
	return p
}

// serveTest answers the test program on c until it fails.
func serveTest(c *Conn) error { return serveCalls(c, nil, nil, testResults) }

// testResults answers the test program: NULL, procEcho, procRead (n bytes
// of the xid's pattern) and procWrite (checks the xid's pattern, returns
// the length).
func testResults(h *xdr.CallHeader, args, out []byte) ([]byte, bool, error) {
	r := xdr.NewReader(args)
	switch h.Proc {
	case 0:
	case procEcho:
		return echoOpaque()(h, args, out)
	case procRead:
		n, _ := r.Uint32()
		out = xdr.AppendOpaque(out, pattern(int(n), byte(h.XID)))
	case procWrite:
		p, err := r.Opaque(testMaxReply)
		if err != nil {
			return nil, false, err
		}
		if !bytes.Equal(p, pattern(len(p), byte(h.XID))) {
			return nil, false, fmt.Errorf("procWrite xid %d: data corrupted", h.XID)
		}
		out = xdr.AppendUint32(out, uint32(len(p)))
	}
	return out, true, nil
}

type testPair struct {
	l      *Listener
	client *Conn
	server *Conn
	srvErr chan error
}

// newPair listens and dials with the given configurations and serves the
// test program on the accepted connection.
func newPair(t *testing.T, scfg, ccfg *Config) *testPair {
	t.Helper()
	return newPairAt(t, "127.0.0.1:0", scfg, ccfg)
}

// newPairAt is newPair listening at addr.
func newPairAt(t *testing.T, addr string, scfg, ccfg *Config) *testPair {
	t.Helper()
	l, err := Listen(addr, softConfig(scfg))
	if err != nil {
		t.Fatal(err)
	}
	p := &testPair{l: l, srvErr: make(chan error, 1)}
	accepted := make(chan *Conn, 1)
	go func() {
		c, err := l.AcceptRDMA()
		if err != nil {
			p.srvErr <- err
			close(accepted)
			return
		}
		accepted <- c
		p.srvErr <- serveTest(c)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p.client, err = Dial(ctx, l.Addr().String(), softConfig(ccfg))
	if err != nil {
		t.Fatal(err)
	}
	p.server = <-accepted
	if p.server == nil {
		t.Fatal(<-p.srvErr)
	}
	t.Cleanup(func() {
		_ = p.client.Close()
		_ = p.server.Close()
		_ = l.Close()
	})
	return p
}

// call sends one call and returns the reply's results.
func (p *testPair) call(t *testing.T, xid, proc uint32, args []byte) []byte {
	t.Helper()
	msg := append(appendCall(nil, xid, proc), args...)
	if err := p.client.WriteMsg(msg); err != nil {
		t.Fatalf("WriteMsg: %v", err)
	}
	reply, err := p.client.ReadMsg(nil)
	if err != nil {
		t.Fatalf("ReadMsg: %v", err)
	}
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(reply)
	if err != nil || rh.XID != xid || rh.AcceptStat != xdr.AcceptSuccess {
		t.Fatalf("reply %+v: %v", rh, err)
	}
	return reply[off:]
}

func TestNullAndEcho(t *testing.T) {
	p := newPair(t, nil, &Config{Binding: testBinding{}})
	if got := p.call(t, 1, 0, nil); len(got) != 0 {
		t.Errorf("NULL results = %x", got)
	}
	for i, n := range []int{0, 1, 3, 100, 1000, 3000, 4000, 5000, 70000, 300000} {
		data := pattern(n, byte(i))
		got := p.call(t, uint32(10+i), procEcho, xdr.AppendOpaque(nil, data))
		if want := xdr.AppendOpaque(nil, data); !bytes.Equal(got, want) {
			t.Fatalf("echo %d bytes: reply differs", n)
		}
	}
	s := p.client.Stats()
	if s.InlineCalls == 0 || s.LongCalls == 0 || s.ReplyChunks == 0 {
		t.Errorf("stats %+v: expected inline calls, long calls and reply chunks", s)
	}
	if s.Negotiated.SendInline != 4096 || s.Negotiated.PeerPrivateData != "found" {
		t.Errorf("negotiated %+v", s.Negotiated)
	}
}

func TestDDP(t *testing.T) {
	p := newPair(t, &Config{Binding: testBinding{ddp: true}}, &Config{Binding: testBinding{ddp: true}})
	for i, n := range []int{1, 3, 4097, 65536, 100003} {
		xid := uint32(100 + i)
		got := p.call(t, xid, procWrite, xdr.AppendOpaque(nil, pattern(n, byte(xid))))
		if len(got) != 4 || int(got[3])|int(got[2])<<8|int(got[1])<<16 != n {
			t.Fatalf("write %d: results %x", n, got)
		}
		got = p.call(t, xid+50, procRead, xdr.AppendUint32(nil, uint32(n)))
		if want := xdr.AppendOpaque(nil, pattern(n, byte(xid+50))); !bytes.Equal(got, want) {
			t.Fatalf("read %d: reply differs", n)
		}
	}
	s := p.client.Stats()
	if s.ReadChunkCalls == 0 || s.WriteChunks == 0 {
		t.Errorf("stats %+v: expected read-chunk calls and write chunks", s)
	}
	if s.RemoteInvalidations == 0 {
		t.Errorf("stats %+v: expected Send With Invalidate", s)
	}
}

func TestConcurrentCalls(t *testing.T) {
	p := newPair(t, &Config{Credits: 4}, &Config{Binding: testBinding{}, Credits: 8})
	var wg sync.WaitGroup
	var mu sync.Mutex
	replies := map[uint32]bool{}
	const n = 500
	wg.Add(1)
	go func() {
		defer wg.Done()
		for range n {
			reply, err := p.client.ReadMsg(nil)
			if err != nil {
				t.Error(err)
				return
			}
			xid, _, _ := xdr.PeekXID(reply)
			mu.Lock()
			replies[xid] = true
			mu.Unlock()
		}
	}()
	for i := range n {
		msg := append(appendCall(nil, uint32(1000+i), procEcho), xdr.AppendOpaque(nil, pattern(i*13%5000, 1))...)
		if err := p.client.WriteMsg(msg); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	if len(replies) != n {
		t.Fatalf("%d replies, want %d", len(replies), n)
	}
	if s := p.client.Stats(); s.Negotiated.Credits > 4 {
		t.Errorf("credit limit %d exceeds the grant 4", s.Negotiated.Credits)
	}
}

func TestCloseErrors(t *testing.T) {
	p := newPair(t, nil, nil)
	_ = p.client.Close()
	if _, err := p.client.Read(make([]byte, 10)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Read after Close: %v", err)
	}
	if _, err := p.client.Write([]byte{1}); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Write after Close: %v", err)
	}
	// The server sees EOF.
	if err := <-p.srvErr; err == nil {
		t.Errorf("server: no error after the client closed")
	}
	_ = p.l.Close()
	if _, err := p.l.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept after Close: %v", err)
	}
}

// TestOversizedReply: a reply larger than the responder's MaxRPCSize is
// answered with ERR_CHUNK (as svcrdma does), whether the server writes it as
// a message or through the record stream; the requester's call fails at once
// and both connections stay usable.
func TestOversizedReply(t *testing.T) {
	for _, stream := range []bool{false, true} {
		l, err := Listen("127.0.0.1:0", &Config{Provider: &soft.Provider{}, MaxRPCSize: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			c, err := l.AcceptRDMA()
			if err != nil {
				return
			}
			defer c.Close()
			for {
				msg, err := c.ReadMsg(nil)
				if err != nil {
					return
				}
				var h xdr.CallHeader
				args, _ := h.Unmarshal(msg)
				r := xdr.NewReader(msg[args:])
				n, _ := r.Uint32()
				reply := xdr.AppendOpaque(appendReply(nil, h.XID), pattern(int(n), 0))
				if stream {
					rec := xdr.AppendRecord(nil, reply, 0)
					for len(rec) > 0 { // as a bufio.Writer would: 4 KiB at a time
						k := min(len(rec), 4096)
						if _, err := c.Write(rec[:k]); err != nil {
							t.Errorf("server Write: %v", err)
							return
						}
						rec = rec[k:]
					}
				} else if err := c.WriteMsg(reply); err != nil {
					t.Errorf("server WriteMsg: %v", err)
					return
				}
			}
		}()
		c, err := Dial(context.Background(), l.Addr().String(), &Config{Provider: &soft.Provider{}, Binding: testBinding{}})
		if err != nil {
			t.Fatal(err)
		}
		for i, n := range []int{100 << 10, 1000, 70 << 10, 2000} {
			if err := c.WriteMsg(xdr.AppendUint32(appendCall(nil, uint32(i+1), procRead), uint32(n))); err != nil {
				t.Fatal(err)
			}
			reply, err := c.ReadMsg(nil)
			var re *RemoteError
			if tooBig := n > 64<<10; tooBig != errors.As(err, &re) {
				t.Fatalf("stream %v, read of %d: err %v", stream, n, err)
			}
			if re != nil && (re.Code != 2 || re.XID != uint32(i+1)) {
				t.Fatalf("remote error %+v", re)
			}
			if err == nil && len(reply) != 24+4+xdr.RoundUp(n) {
				t.Fatalf("reply of %d bytes", len(reply))
			}
		}
		_ = c.Close()
		_ = l.Close()
	}
}

// TestStatsAfterClose: both roles keep the settings their connection
// negotiated once it is closed.
func TestStatsAfterClose(t *testing.T) {
	p := newPair(t, &Config{InlineSend: 8192, InlineRecv: 8192}, nil)
	p.call(t, 1, 0, nil)
	_ = p.client.Close()
	_ = p.server.Close()
	for _, c := range []*Conn{p.client, p.server} {
		n := c.Stats().Negotiated
		if n.PeerPrivateData != "found" || n.SendInline != 4096 || n.RecvInline != 4096 {
			t.Errorf("after Close: %+v", n)
		}
	}
}
