package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// The protocol matrix (issue 5): every call and reply form, inline
// thresholds 1024/4096/65536 each way and asymmetric, the four combinations
// of the R bit, RDMA_ERROR of both kinds, and the number of RDMA operations
// each RPC costs. The expected form of every call is computed here from the
// RFC 8166 header sizes, independently of the engine's planner, and checked
// against the engine's counters and against a verbs wrapper that sees every
// work request the engine posts.

// protoOps is what a verbs wrapper saw one side post: work requests by
// opcode and the largest Send. It is ground truth for the engine's Stats.
type protoOps struct {
	mu      sync.Mutex
	ops     map[verbs.Opcode]uint64
	maxSend int
	posts   uint64 // PostSend calls
}

func newProtoOps() *protoOps { return &protoOps{ops: map[verbs.Opcode]uint64{}} }

// postCount returns the PostSend calls seen.
func (o *protoOps) postCount() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.posts
}

func (o *protoOps) snapshot() (map[verbs.Opcode]uint64, int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	m := make(map[verbs.Opcode]uint64, len(o.ops))
	for k, v := range o.ops {
		m[k] = v
	}
	return m, o.maxSend
}

// protoProvider wraps a verbs provider and counts, in ops, the work
// requests posted on its connections.
type protoProvider struct {
	verbs.Provider
	ops *protoOps
	// gate, if set, holds back the completions of the connections it
	// accepts (pollGate); dialGate those of the connections it dials.
	gate, dialGate *pollGate
}

func newProtoProvider(client bool) *protoProvider {
	return &protoProvider{Provider: protoNet.provider(client), ops: newProtoOps()}
}

// protoNet is where the protocol matrix and the reverse-direction tests
// run: the soft provider on loopback; the guest tests in the VM
// (rdmacore_proto_guest_test.go) point it at rdma-core on rxe, the
// responder on rxe0 and the requester on rxe1.
var protoNet = struct {
	provider func(client bool) verbs.Provider
	listen   string
}{func(bool) verbs.Provider { return &soft.Provider{} }, "127.0.0.1:0"}

// wrapOptions makes Setup see the wrapper, since the engine keeps the
// verbs.Conn that Setup is given.
func (p *protoProvider) wrapOptions(opts *verbs.ConnOptions) (*verbs.ConnOptions, *protoConn) {
	w := &protoConn{ops: p.ops}
	o := *opts
	if setup := opts.Setup; setup != nil {
		o.Setup = func(vc verbs.Conn) error {
			w.Conn = vc
			return setup(w)
		}
	}
	return &o, w
}

func (p *protoProvider) Dial(ctx context.Context, addr string, opts *verbs.ConnOptions) (verbs.Conn, error) {
	o, w := p.wrapOptions(opts)
	w.gate = p.dialGate
	vc, err := p.Provider.Dial(ctx, addr, o)
	if err != nil {
		return nil, err
	}
	w.Conn = vc
	return w, nil
}

func (p *protoProvider) Listen(addr string) (verbs.Listener, error) {
	l, err := p.Provider.Listen(addr)
	if err != nil {
		return nil, err
	}
	return &protoListener{Listener: l, p: p}, nil
}

type protoListener struct {
	verbs.Listener
	p *protoProvider
}

func (l *protoListener) Accept(ctx context.Context) (verbs.ConnRequest, error) {
	r, err := l.Listener.Accept(ctx)
	if err != nil {
		return nil, err
	}
	return &protoRequest{ConnRequest: r, p: l.p}, nil
}

type protoRequest struct {
	verbs.ConnRequest
	p *protoProvider
}

func (r *protoRequest) Accept(ctx context.Context, opts *verbs.ConnOptions) (verbs.Conn, error) {
	o, w := r.p.wrapOptions(opts)
	w.gate = r.p.gate
	vc, err := r.ConnRequest.Accept(ctx, o)
	if err != nil {
		return nil, err
	}
	w.Conn = vc
	return w, nil
}

type protoConn struct {
	verbs.Conn
	ops  *protoOps
	gate *pollGate // nil: Poll and Wait as the provider's
}

// PostSend counts before posting: once posted, a Send may be answered
// before PostSend returns.
func (c *protoConn) PostSend(wrs []verbs.WorkRequest) error {
	c.ops.mu.Lock()
	c.ops.posts++
	for i := range wrs {
		c.ops.ops[wrs[i].Op]++
		if op := wrs[i].Op; op == verbs.OpSend || op == verbs.OpSendWithInvalidate {
			n := 0
			for _, sge := range wrs[i].SGL {
				n += sge.Length
			}
			c.ops.maxSend = max(c.ops.maxSend, n)
		}
	}
	c.ops.mu.Unlock()
	if c.gate != nil {
		c.gate.logPost("send", len(wrs))
	}
	return c.Conn.PostSend(wrs)
}

// protoHdrLen is the size of an RPC-over-RDMA version 1 header (RFC 8166
// §4.2): 4 words of fixed part; the Read list, each entry 6 words
// (discriminator, position, handle, length, 2-word offset) and a
// terminating word; the Write list, each chunk a discriminator, a count and
// 4 words per segment, and a terminating word; the Reply chunk, one word if
// absent, else a discriminator, a count and 4 words per segment. Every
// chunk here has one segment.
func protoHdrLen(readChunk, writeChunk, replyChunk bool) int {
	n := 16 + 4 + 4 + 4
	if readChunk {
		n += 24
	}
	if writeChunk {
		n += 24
	}
	if replyChunk {
		n += 20
	}
	return n
}

// The test program's message sizes, AUTH_NONE (RFC 5531 §9): a call header
// is 10 words, an accepted reply header 6.
const (
	protoCallHdr  = 40
	protoReplyHdr = 24
)

// protoWant is the expected conveyance of one call of the test program.
type protoWant struct {
	form     string // "inline", "read-chunk" or "long-call"
	readLen  int    // bytes in the Read chunk
	writeLen int    // size of the Write chunk offered (0: none)
	replyLen int    // size of the Reply chunk offered (0: none)
	// What the responder does with the reply: bytes RDMA-written into the
	// Write chunk, and whether the reply goes through the Reply chunk.
	written     int
	viaReply    bool
	replyMsgLen int // the whole reply
	inlineReply int // the reply without the written result: inline or in the Reply chunk
}

func (w protoWant) chunked() bool { return w.readLen+w.writeLen+w.replyLen > 0 }

// protoPlan computes how a call of proc with n bytes of data must travel,
// from RFC 8166 §3.5 and the header sizes alone, given the requester's
// negotiated thresholds sendInline and recvInline (which are the
// responder's receive and send thresholds). The policy is the cheapest
// correct form, the Linux client's (see the issue): the reply needs no chunk
// if the largest possible reply with a chunk-less header fits recvInline;
// else a Write chunk for a DDP-eligible result (plus a Reply chunk if the
// rest of the reply still might not fit); else a Reply chunk. The call goes
// inline if its header (with those reply chunks) and message fit
// sendInline; else its DDP-eligible argument in a Read chunk if the rest
// fits; else as a Long Call. The responder sends inline whatever fits its
// send threshold.
func protoPlan(proc uint32, n, sendInline, recvInline int) protoWant {
	pad := xdr.RoundUp(n)
	var w protoWant
	msgLen, maxReply, ddpArg, ddpResult := protoCallHdr+4, protoReplyHdr, false, false
	switch proc {
	case procEcho:
		msgLen, maxReply = protoCallHdr+4+pad, protoReplyHdr+4+pad
	case procRead:
		maxReply, ddpResult = protoReplyHdr+4+pad, n > 0
	case procWrite:
		msgLen, maxReply, ddpArg = protoCallHdr+4+pad, protoReplyHdr+4, n > 0
	}
	w.replyMsgLen = maxReply // the test program's replies are as large as announced

	switch {
	case protoHdrLen(false, false, false)+maxReply <= recvInline:
	case ddpResult:
		w.writeLen = n
		if protoHdrLen(false, true, false)+maxReply-pad > recvInline {
			w.replyLen = maxReply
		}
	default:
		w.replyLen = maxReply
	}
	write, reply := w.writeLen > 0, w.replyLen > 0
	switch {
	case protoHdrLen(false, write, reply)+msgLen <= sendInline:
		w.form = "inline"
	case ddpArg && protoHdrLen(true, write, reply)+msgLen-pad <= sendInline:
		w.form, w.readLen = "read-chunk", n
	default:
		w.form, w.readLen = "long-call", msgLen
	}

	w.inlineReply = w.replyMsgLen
	if write {
		w.written = n
		w.inlineReply -= pad
	}
	w.viaReply = protoHdrLen(false, write, false)+w.inlineReply > recvInline
	return w
}

// protoCase is one call of a matrix run.
type protoCase struct {
	proc uint32
	n    int
}

// protoSizes returns calls whose sizes sit on both sides of every boundary
// the thresholds draw: the inline call with and without a Reply chunk in
// its header, the inline reply, the inline WRITE-like call and the inline
// READ-like reply, each at -4, -1, 0, +1 and +4 bytes (the ±1 sizes carry
// XDR padding), plus sizes far beyond.
func protoSizes(sendInline, recvInline int) []protoCase {
	var cs []protoCase
	seen := map[protoCase]bool{}
	add := func(proc uint32, n int) {
		c := protoCase{proc, n}
		if n >= 0 && !seen[c] {
			seen[c] = true
			cs = append(cs, c)
		}
	}
	for _, d := range []int{-4, -1, 0, 1, 4} {
		add(procEcho, sendInline-protoHdrLen(false, false, false)-protoCallHdr-4+d)
		add(procEcho, sendInline-protoHdrLen(false, false, true)-protoCallHdr-4+d)
		add(procEcho, recvInline-protoHdrLen(false, false, false)-protoReplyHdr-4+d)
		add(procWrite, sendInline-protoHdrLen(false, false, false)-protoCallHdr-4+d)
		add(procRead, recvInline-protoHdrLen(false, false, false)-protoReplyHdr-4+d)
	}
	for _, n := range []int{0, 1, 3, 2*max(sendInline, recvInline) + 5} {
		add(procEcho, n)
		add(procWrite, n)
		add(procRead, n)
	}
	return cs
}

// protoConfig is one cell of the matrix.
type protoConfig struct {
	clientSend, clientRecv, serverSend, serverRecv int
	clientR, serverR                               bool
	// v2: both peers speak RPC-over-RDMA version 2 (OfferVersion2,
	// AcceptVersion2).
	v2 bool
}

func (pc protoConfig) String() string {
	r := func(b bool) int {
		if b {
			return 1
		}
		return 0
	}
	return fmt.Sprintf("c%d-%d_s%d-%d_R%d%d", pc.clientSend, pc.clientRecv, pc.serverSend, pc.serverRecv, r(pc.clientR), r(pc.serverR))
}

// protoConfigs are the cells of the matrix, version 1 or version 2.
func protoConfigs(v2 bool) []protoConfig {
	sizes := []int{1024, 4096, 65536}
	var configs []protoConfig
	for _, cs := range sizes {
		for _, cr := range sizes {
			for _, ss := range sizes {
				for _, sr := range sizes {
					for _, r := range [][2]bool{{true, true}, {true, false}, {false, true}, {false, false}} {
						configs = append(configs, protoConfig{cs, cr, ss, sr, r[0], r[1], v2})
					}
				}
			}
		}
	}
	return configs
}

// TestProtocolMatrix runs every call form through every combination of
// inline thresholds (1024, 4096 and 65536 for each of the four sizes the
// two peers offer: symmetric, asymmetric, each way) and of the R bits, and
// checks every reply byte for byte, the negotiated settings (each
// threshold the smaller of the sender's send size and the receiver's
// receive size, RFC 8797 §4.2; Send With Invalidate only when both set R,
// §4.1) and the counters of both sides against the forms computed by
// protoPlan.
func TestProtocolMatrix(t *testing.T) {
	for _, pc := range protoConfigs(false) {
		t.Run(pc.String(), func(t *testing.T) { protoRunMatrixCell(t, pc) })
	}
}

// TestProtocolMatrixVersion2 is TestProtocolMatrix with both peers
// speaking RPC-over-RDMA version 2 (docs/v2.md): the same cells and
// checks, with the differences version 2 makes. Its headers are
// rpcrdma2.HeaderExtra bytes longer, so each form's boundaries move by
// that much (and the largest Sends still fill the thresholds exactly);
// the connection opens with the RDMA2_CONNPROP exchange (a Send and a
// Receive more each side); and the responder uses Send With Invalidate
// for the handle the requester names whenever it names one (the
// requester's R bit), whatever the responder's R and however many rkeys
// the call has: the rest are invalidated locally.
func TestProtocolMatrixVersion2(t *testing.T) {
	for _, pc := range protoConfigs(true) {
		t.Run(pc.String(), func(t *testing.T) { protoRunMatrixCell(t, pc) })
	}
}

func protoRunMatrixCell(t *testing.T, pc protoConfig) {
	cp, sp := newProtoProvider(true), newProtoProvider(false)
	ccfg := &Config{Provider: cp, InlineSend: pc.clientSend, InlineRecv: pc.clientRecv,
		NoRemoteInvalidate: !pc.clientR, Binding: testBinding{ddp: true}, Credits: 4, OfferVersion2: pc.v2}
	scfg := &Config{Provider: sp, InlineSend: pc.serverSend, InlineRecv: pc.serverRecv,
		NoRemoteInvalidate: !pc.serverR, Binding: testBinding{ddp: true}, Credits: 4, AcceptVersion2: pc.v2}
	p := newPairAt(t, protoNet.listen, scfg, ccfg)

	// RFC 8797 §4.2 and §4.1.
	sendInline, recvInline := min(pc.clientSend, pc.serverRecv), min(pc.clientRecv, pc.serverSend)
	swi := pc.clientR && pc.serverR
	vers, extra := uint32(1), 0
	var want struct{ client, server Stats }
	if pc.v2 {
		// The RDMA2_CONNPROP exchange, and the longer headers.
		vers, extra, swi = 2, rpcrdma2.HeaderExtra, pc.clientR
		want.client.Sends, want.client.Recvs, want.server.Sends, want.server.Recvs = 1, 1, 1, 1
	}
	cn, sn := p.client.Stats().Negotiated, p.server.Stats().Negotiated
	assert.Equal(t, Negotiated{PeerPrivateData: "found", SendInline: sendInline, RecvInline: recvInline,
		LocalR: pc.clientR, PeerR: pc.serverR, ExpectRemoteInvalidate: pc.clientR, Credits: cn.Credits, Version: vers}, cn, "requester")
	assert.Equal(t, Negotiated{PeerPrivateData: "found", SendInline: recvInline, RecvInline: sendInline,
		LocalR: pc.serverR, PeerR: pc.clientR, SendWithInvalidate: pc.clientR && pc.serverR, Credits: sn.Credits, Version: vers}, sn, "responder")

	var wrs protoWRs
	forms := map[string]int{}
	for i, c := range protoSizes(sendInline-extra, recvInline-extra) {
		xid := uint32(i + 1)
		w := protoPlan(c.proc, c.n, sendInline-extra, recvInline-extra)
		forms[w.form]++
		if w.writeLen > 0 {
			forms["write-chunk"]++
		}
		if w.viaReply {
			forms["reply-chunk"]++
		}
		protoCheckedCall(t, p, xid, c)
		if t.Failed() {
			t.Fatalf("call %d (%+v, want %+v) failed", xid, c, w)
		}
		protoAccount(&want.client, &want.server, w, swi, pc.v2, &wrs)
	}
	// Every form appears in every cell.
	for _, f := range []string{"inline", "long-call", "read-chunk", "write-chunk", "reply-chunk"} {
		assert.NotZero(t, forms[f], "no %s call in this cell: %v", f, forms)
	}

	got := struct{ client, server Stats }{p.client.Stats(), p.server.Stats()}
	got.client.Negotiated, got.server.Negotiated = Negotiated{}, Negotiated{}
	// Posts (doorbells) are the wrapper's count: each side's work
	// requests went out in at least one post and at most one each.
	want.client.SendPosts, want.server.SendPosts = cp.ops.postCount(), sp.ops.postCount()
	assert.NotZero(t, want.server.SendPosts, "responder posts")
	assert.LessOrEqual(t, want.server.SendPosts, want.server.Sends+want.server.RDMAReads+want.server.RDMAWrites, "responder posts")
	assert.Equal(t, want.client, got.client, "requester stats")
	assert.Equal(t, want.server, got.server, "responder stats")

	// The verbs wrapper saw the same operations, and no Send over the
	// negotiated threshold; the boundary calls fill one exactly.
	cops, cmax := cp.ops.snapshot()
	sops, smax := sp.ops.snapshot()
	assert.Equal(t, want.client.Sends, cops[verbs.OpSend], "requester Sends posted")
	assert.Zero(t, cops[verbs.OpSendWithInvalidate]+cops[verbs.OpRDMARead]+cops[verbs.OpRDMAWrite], "requester RDMA operations")
	assert.Equal(t, wrs.localInv, cops[verbs.OpLocalInvalidate], "requester local invalidations")
	assert.Equal(t, wrs.binds, cops[verbs.OpBindWindow], "one window bound per kind of chunk (read; write and reply)")
	assert.Equal(t, want.server.Sends-want.server.RemoteInvalidations, sops[verbs.OpSend], "responder Sends")
	assert.Equal(t, want.server.RemoteInvalidations, sops[verbs.OpSendWithInvalidate], "responder Sends With Invalidate")
	assert.Equal(t, want.server.RDMAReads, sops[verbs.OpRDMARead], "responder RDMA Reads")
	assert.Equal(t, want.server.RDMAWrites, sops[verbs.OpRDMAWrite], "responder RDMA Writes")
	assert.Zero(t, sops[verbs.OpBindWindow]+sops[verbs.OpLocalInvalidate], "responder binds or invalidates")
	assert.Equal(t, sendInline, cmax, "largest call Send")
	assert.Equal(t, recvInline, smax, "largest reply Send")
}

// protoCheckedCall makes one call and checks its reply byte for byte.
func protoCheckedCall(t *testing.T, p *testPair, xid uint32, c protoCase) {
	t.Helper()
	switch c.proc {
	case procEcho:
		data := pattern(c.n, byte(xid))
		got := p.call(t, xid, procEcho, xdr.AppendOpaque(nil, data))
		require.True(t, bytes.Equal(xdr.AppendOpaque(nil, data), got), "echo of %d bytes: reply differs", c.n)
	case procRead:
		got := p.call(t, xid, procRead, xdr.AppendUint32(nil, uint32(c.n)))
		require.True(t, bytes.Equal(xdr.AppendOpaque(nil, pattern(c.n, byte(xid))), got), "read of %d bytes: reply differs", c.n)
	case procWrite:
		// The responder (serveTest) checks the data it received.
		got := p.call(t, xid, procWrite, xdr.AppendOpaque(nil, pattern(c.n, byte(xid))))
		require.Equal(t, xdr.AppendUint32(nil, uint32(c.n)), got, "write of %d bytes", c.n)
	}
}

// protoWRs counts the requester's window work requests.
type protoWRs struct{ binds, localInv uint64 }

// protoAccount adds to the expected counters of both sides what one call
// conveyed as w costs. The requester exposes a Read chunk through a
// read-only window and the Write and Reply chunks through a write-only one,
// so a call with both has two rkeys, and no Send With Invalidate (RFC 8797
// §4.1: the responder invalidates only a call's single rkey).
func protoAccount(client, server *Stats, w protoWant, swi, v2 bool, wrs *protoWRs) {
	client.Sends++
	client.Recvs++
	server.Sends++
	server.Recvs++
	switch w.form {
	case "inline":
		client.InlineCalls++
	case "read-chunk":
		client.ReadChunkCalls++
	case "long-call":
		client.LongCalls++
	}
	if w.readLen > 0 {
		client.ReadChunks++
		server.ReadChunks++
		server.RDMAReads++
		server.RDMAReadBytes += uint64(w.readLen)
	}
	if w.writeLen > 0 {
		client.WriteChunks++
	}
	if w.written > 0 {
		server.WriteChunks++
		server.RDMAWrites++
		server.RDMAWriteBytes += uint64(w.written)
	}
	if w.replyLen > 0 {
		client.ReplyChunks++
	}
	if w.viaReply {
		server.ReplyChunks++
		server.RDMAWrites++
		server.RDMAWriteBytes += uint64(w.inlineReply)
	}
	client.ChunkBytesOffered += uint64(xdr.RoundUp(w.readLen) + xdr.RoundUp(w.writeLen) + xdr.RoundUp(w.replyLen))
	if w.chunked() {
		windows := uint64(0)
		if w.readLen > 0 {
			windows++
		}
		if w.writeLen > 0 || w.replyLen > 0 {
			windows++
		}
		wrs.binds += windows
		switch {
		case swi && v2:
			// Version 2: the one handle the requester named
			// (rdma_inv_handle); any other window locally.
			client.RemoteInvalidations++
			server.RemoteInvalidations++
			if windows > 1 {
				client.LocalInvalidations++
				wrs.localInv += windows - 1
			}
		case swi && windows == 1:
			client.RemoteInvalidations++
			server.RemoteInvalidations++
		default:
			client.LocalInvalidations++
			wrs.localInv += windows
		}
	}
}

// TestProtocolPlanModel pins protoPlan itself on hand-computed cases, so
// that the matrix does not rest on a model that agrees with the engine by
// sharing its mistakes.
func TestProtocolPlanModel(t *testing.T) {
	cases := []struct {
		proc       uint32
		n          int
		send, recv int
		want       protoWant
	}{
		// 28-byte header + 44-byte call header and length + 952 = 1024.
		{procEcho, 952, 1024, 4096, protoWant{form: "inline", replyMsgLen: 980, inlineReply: 980}},
		{procEcho, 953, 1024, 4096, protoWant{form: "long-call", readLen: 1000, replyMsgLen: 984, inlineReply: 984}},
		// The reply 28+968 plus its 28-byte header is 1024: no chunk.
		{procEcho, 968, 4096, 1024, protoWant{form: "inline", replyMsgLen: 996, inlineReply: 996}},
		// 972 does not fit: a Reply chunk, which lengthens the call's
		// header to 48 bytes.
		{procEcho, 972, 4096, 1024, protoWant{form: "inline", replyLen: 1000, viaReply: true, replyMsgLen: 1000, inlineReply: 1000}},
		{procEcho, 4096 - 48 - 44, 4096, 1024, protoWant{form: "inline", replyLen: 4032, viaReply: true, replyMsgLen: 4032, inlineReply: 4032}},
		{procEcho, 4096 - 48 - 43, 4096, 1024, protoWant{form: "long-call", readLen: 4052, replyLen: 4036, viaReply: true, replyMsgLen: 4036, inlineReply: 4036}},
		// WRITE-like: inline to 952, then the data in a Read chunk at its
		// position (a 52-byte header and the 44 bytes before the data).
		{procWrite, 952, 1024, 1024, protoWant{form: "inline", replyMsgLen: 28, inlineReply: 28}},
		{procWrite, 953, 1024, 1024, protoWant{form: "read-chunk", readLen: 953, replyMsgLen: 28, inlineReply: 28}},
		// READ-like: a Write chunk from 969 on; the rest (28 bytes) fits.
		{procRead, 968, 1024, 1024, protoWant{form: "inline", replyMsgLen: 996, inlineReply: 996}},
		{procRead, 969, 1024, 1024, protoWant{form: "inline", writeLen: 969, written: 969, replyMsgLen: 1000, inlineReply: 28}},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, protoPlan(tc.proc, tc.n, tc.send, tc.recv), "proc %d n %d thresholds %d/%d", tc.proc, tc.n, tc.send, tc.recv)
	}
}

// protoLiarBinding is testBinding with the reply bounds it reports cut
// down: a binding that underestimates the reply, so that the requester
// offers too little room and the responder must answer ERR_CHUNK.
type protoLiarBinding struct {
	testBinding
	maxReply, replyData int
}

func (b protoLiarBinding) Call(h *xdr.CallHeader, msg []byte, args int) CallInfo {
	info := b.testBinding.Call(h, msg, args)
	if b.maxReply > 0 {
		info.MaxReply = b.maxReply
	}
	if b.replyData > 0 && info.ReplyData > 0 {
		info.ReplyData = b.replyData
	}
	return info
}

// TestProtocolErrChunk: a reply the requester left no room for is answered
// with RDMA_ERROR ERR_CHUNK (RFC 8166 §4.5.3), which fails that call only:
// ReadMsg returns a synthesized MSG_ACCEPTED/SYSTEM_ERR reply with a
// *RemoteError of code 2, Read the same reply as a record, and the
// connection goes on. An RDMA_ERROR never uses Send With Invalidate, so the
// requester invalidates the call's memory itself even with both R bits set.
func TestProtocolErrChunk(t *testing.T) {
	cases := []struct {
		name    string
		binding Binding
		proc    uint32
		args    []byte
		chunked bool // the call exposes memory
	}{
		// A Long Call with no Reply chunk: the binding said the reply fits
		// inline.
		{"no-reply-chunk", protoLiarBinding{maxReply: 24}, procEcho, xdr.AppendOpaque(nil, pattern(10000, 1)), true},
		// An inline call without any chunk, whose reply is 10 KB.
		{"inline-call", protoLiarBinding{maxReply: 24}, procRead, xdr.AppendUint32(nil, 10000), false},
		// A Write chunk smaller than the result.
		{"write-chunk-too-small", protoLiarBinding{testBinding: testBinding{ddp: true}, replyData: 100}, procRead, xdr.AppendUint32(nil, 10000), true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cp, sp := newProtoProvider(true), newProtoProvider(false)
			p := newPair(t, &Config{Provider: sp, Binding: testBinding{ddp: true}},
				&Config{Provider: cp, Binding: tc.binding})
			call := append(appendCall(nil, 7, tc.proc), tc.args...)
			require.NoError(t, p.client.WriteMsg(call))
			reply, err := p.client.ReadMsg(nil)
			var re *RemoteError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, &RemoteError{XID: 7, Code: 2}, re)
			assert.Contains(t, re.Error(), "ERR_CHUNK")
			protoRequireSystemErr(t, reply, 7)

			// Through the byte stream: the same reply, as a record.
			_, err = p.client.Write(netconvRecord(append(appendCall(nil, 8, tc.proc), tc.args...)))
			require.NoError(t, err)
			rec, err := netconvReadRecord(p.client)
			require.NoError(t, err)
			protoRequireSystemErr(t, rec, 8)

			// The connection goes on.
			got := p.call(t, 9, procEcho, xdr.AppendOpaque(nil, []byte("after")))
			assert.Equal(t, xdr.AppendOpaque(nil, []byte("after")), got)

			cs, ss := p.client.Stats(), p.server.Stats()
			assert.Equal(t, uint64(2), cs.RemoteErrors)
			assert.Equal(t, uint64(2), ss.ErrChunkSent)
			assert.Zero(t, cs.BadReplies+cs.BadXIDs)
			assert.Zero(t, cs.RemoteInvalidations+ss.RemoteInvalidations, "Send With Invalidate")
			sops, _ := sp.ops.snapshot()
			assert.Zero(t, sops[verbs.OpSendWithInvalidate], "Send With Invalidate posted")
			assert.Zero(t, sops[verbs.OpRDMAWrite], "nothing written for a reply that does not fit")
			if tc.chunked {
				assert.Equal(t, uint64(2), cs.LocalInvalidations)
			} else {
				assert.Zero(t, cs.LocalInvalidations)
			}
		})
	}
}

// protoRequireSystemErr checks that msg is the reply a failed call gets:
// MSG_ACCEPTED, SYSTEM_ERR, for xid (RFC 5531 §9).
func protoRequireSystemErr(t *testing.T, msg []byte, xid uint32) {
	t.Helper()
	var rh xdr.ReplyHeader
	n, err := rh.Unmarshal(msg)
	require.NoError(t, err)
	assert.Equal(t, xid, rh.XID)
	assert.Equal(t, xdr.MsgAccepted, rh.Stat)
	assert.Equal(t, xdr.AcceptSystemErr, rh.AcceptStat)
	assert.Equal(t, len(msg), n, "nothing after the header")
}

// TestProtocolErrVers: a responder that does not speak version 1 answers
// RDMA_ERROR ERR_VERS with the range of versions it supports (RFC 8166
// §4.5.2); the requester fails that call with a *RemoteError of code 1
// carrying the range. The responder here is raw soft verbs.
func TestProtocolErrVers(t *testing.T) {
	for _, vr := range [][2]uint32{{1, 1}, {2, 3}} {
		t.Run(fmt.Sprintf("versions-%d-%d", vr[0], vr[1]), func(t *testing.T) {
			addr := protoRawResponder(t, func(xid uint32, b []byte) []byte {
				h := chunks.Header{XID: xid, Vers: chunks.Version1, Credits: 1, Proc: chunks.ProcError,
					ErrCode: chunks.CodeVers, VersLow: vr[0], VersHigh: vr[1]}
				return h.Append(b)
			})
			c, err := Dial(context.Background(), addr, &Config{Provider: &soft.Provider{}})
			require.NoError(t, err)
			defer func() { _ = c.Close() }()
			require.NoError(t, c.WriteMsg(appendCall(nil, 42, 0)))
			reply, err := c.ReadMsg(nil)
			var re *RemoteError
			require.ErrorAs(t, err, &re)
			assert.Equal(t, &RemoteError{XID: 42, Code: 1, Low: vr[0], High: vr[1]}, re)
			assert.Contains(t, re.Error(), fmt.Sprintf("versions %d..%d", vr[0], vr[1]))
			protoRequireSystemErr(t, reply, 42)
			assert.Equal(t, uint64(1), c.Stats().RemoteErrors)
		})
	}
}

// protoRawResponder accepts one connection with soft verbs, offering
// RFC 8797 private data (R set, 4096 both ways), and answers every message
// it receives with answer(xid of the message, buffer).
func protoRawResponder(t *testing.T, answer func(xid uint32, b []byte) []byte) string {
	t.Helper()
	l, err := (&soft.Provider{}).Listen("127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() {
		cancel()
		_ = l.Close()
		<-done
	})
	go func() {
		defer close(done)
		req, err := l.Accept(ctx)
		if err != nil {
			return
		}
		const nRecv, size = 4, 4096
		var recv, send verbs.Region
		pd := cmpriv.Message{RemoteInvalidate: true, SendSize: size, RecvSize: size}.Append(nil)
		vc, err := req.Accept(ctx, &verbs.ConnOptions{PrivateData: pd, Setup: func(vc verbs.Conn) error {
			var err error
			if recv, err = vc.AllocRegion(nRecv * size); err != nil {
				return err
			}
			if send, err = vc.AllocRegion(size); err != nil {
				return err
			}
			rrs := make([]verbs.RecvRequest, nRecv)
			for i := range rrs {
				rrs[i] = verbs.RecvRequest{ID: uint64(i), SGL: []verbs.SGE{{Region: recv, Offset: i * size, Length: size}}}
			}
			return vc.PostRecv(rrs)
		}})
		if err != nil {
			t.Error(err)
			return
		}
		defer func() { _ = vc.Close() }()
		cs := make([]verbs.Completion, 8)
		for {
			n, err := vc.Poll(cs)
			if err != nil {
				return
			}
			for _, wc := range cs[:n] {
				if wc.Op != verbs.OpRecv || wc.Status != verbs.StatusSuccess || wc.ByteLen < 4 {
					continue
				}
				i := int(wc.ID)
				xid := binary.BigEndian.Uint32(recv.Bytes()[i*size:])
				b := answer(xid, send.Bytes()[:0])
				if err := vc.PostSend([]verbs.WorkRequest{{ID: 100, Op: verbs.OpSend, SGL: []verbs.SGE{{Region: send, Length: len(b)}}}}); err != nil {
					return
				}
				_ = vc.PostRecv([]verbs.RecvRequest{{ID: uint64(i), SGL: []verbs.SGE{{Region: recv, Offset: i * size, Length: size}}}})
			}
			if n == 0 {
				if vc.Wait(ctx) != nil {
					return
				}
			}
		}
	}()
	return l.Addr().String()
}

// protoClass is one size class of TestProtocolOpsPerRPC.
type protoClass struct {
	name string
	ddp  bool
	proc uint32
	n    int
	// RDMA operations one RPC costs, both sides together.
	sends, reads, writes uint64
}

var protoClasses = []protoClass{
	{"inline", true, procEcho, 100, 2, 0, 0},
	// NFS READ-like: the result by RDMA Write into the Write chunk.
	{"ddp-read", true, procRead, 64 << 10, 2, 0, 1},
	// NFS WRITE-like: the argument pulled by RDMA Read from the Read chunk.
	{"ddp-write", true, procWrite, 64 << 10, 2, 1, 0},
	// No DDP: a Long Call and a reply through the Reply chunk (two
	// windows: the call read-only, the Reply chunk write-only).
	{"long-call-long-reply", false, procEcho, 64 << 10, 2, 1, 1},
	{"long-call", false, procWrite, 64 << 10, 2, 1, 0},
	{"long-reply", false, procRead, 64 << 10, 2, 0, 1},
}

// TestProtocolOpsPerRPC asserts the RDMA operations each RPC costs in each
// size class (issue 5: inline 2 Sends; DDP read 1 RDMA Write + 2 Sends; DDP
// write 1 RDMA Read + 2 Sends), counted by the engine (Stats of both Conns)
// and by the verbs wrapper, with and without remote invalidation. Counts
// are not noise: they are exact.
func TestProtocolOpsPerRPC(t *testing.T) {
	const calls = 5
	for _, r := range []bool{true, false} {
		for _, pc := range protoClasses {
			t.Run(fmt.Sprintf("%s/R=%v", pc.name, r), func(t *testing.T) {
				cp, sp := newProtoProvider(true), newProtoProvider(false)
				b := testBinding{ddp: pc.ddp}
				p := newPair(t, &Config{Provider: sp, Binding: b, NoRemoteInvalidate: !r},
					&Config{Provider: cp, Binding: b})
				call := func(xid uint32) {
					protoCheckedCall(t, p, xid, protoCase{pc.proc, pc.n})
				}
				call(1) // warm up: buffers grown, credits granted
				c0, s0 := p.client.Stats(), p.server.Stats()
				cops0, _ := cp.ops.snapshot()
				sops0, _ := sp.ops.snapshot()
				for i := range calls {
					call(uint32(2 + i))
				}
				c1, s1 := p.client.Stats(), p.server.Stats()
				cops1, _ := cp.ops.snapshot()
				sops1, _ := sp.ops.snapshot()
				delta := func(a, b uint64) uint64 { return b - a }

				sends := delta(c0.Sends, c1.Sends) + delta(s0.Sends, s1.Sends)
				reads := delta(c0.RDMAReads, c1.RDMAReads) + delta(s0.RDMAReads, s1.RDMAReads)
				writes := delta(c0.RDMAWrites, c1.RDMAWrites) + delta(s0.RDMAWrites, s1.RDMAWrites)
				assert.Equal(t, [3]uint64{pc.sends, pc.reads, pc.writes}, [3]uint64{sends / calls, reads / calls, writes / calls}, "Sends, RDMA Reads, RDMA Writes per RPC (Stats)")
				assert.Equal(t, [3]uint64{pc.sends * calls, pc.reads * calls, pc.writes * calls}, [3]uint64{sends, reads, writes}, "totals (Stats)")

				wire := func(op verbs.Opcode) uint64 {
					return delta(cops0[op], cops1[op]) + delta(sops0[op], sops1[op])
				}
				assert.Equal(t, pc.sends*calls, wire(verbs.OpSend)+wire(verbs.OpSendWithInvalidate), "Sends posted")
				assert.Equal(t, pc.reads*calls, wire(verbs.OpRDMARead), "RDMA Reads posted")
				assert.Equal(t, pc.writes*calls, wire(verbs.OpRDMAWrite), "RDMA Writes posted")
				// One window per kind of chunk: the Read chunk's
				// read-only, the Write and Reply chunks' write-only;
				// Send With Invalidate only for a call with one rkey.
				windows := uint64(0)
				if pc.reads > 0 {
					windows++
				}
				if pc.writes > 0 {
					windows++
				}
				var binds, swi, localInv uint64
				binds = windows * calls
				if r && windows == 1 {
					swi = calls
				} else {
					localInv = windows * calls
				}
				assert.Equal(t, binds, wire(verbs.OpBindWindow), "windows bound")
				assert.Equal(t, swi, wire(verbs.OpSendWithInvalidate), "Sends With Invalidate")
				assert.Equal(t, localInv, wire(verbs.OpLocalInvalidate), "local invalidations")
			})
		}
	}
}

// BenchmarkProtocolOps reports, next to the time of one RPC per size
// class, the RDMA operations it costs (both sides), from Stats.
func BenchmarkProtocolOps(b *testing.B) {
	for _, pc := range protoClasses {
		b.Run(pc.name, func(b *testing.B) {
			bnd := testBinding{ddp: pc.ddp}
			l, err := Listen("127.0.0.1:0", &Config{Provider: &soft.Provider{}, Binding: bnd})
			if err != nil {
				b.Fatal(err)
			}
			srv := make(chan *Conn, 1)
			go func() {
				c, err := l.AcceptRDMA()
				srv <- c
				if err == nil {
					benchServe(c)
					_ = c.Close()
				}
			}()
			c, err := Dial(b.Context(), l.Addr().String(), &Config{Provider: &soft.Provider{}, Binding: bnd})
			if err != nil {
				b.Fatal(err)
			}
			s := <-srv
			b.Cleanup(func() { _ = c.Close(); _ = l.Close() })
			msg := appendCall(nil, 1, pc.proc)
			switch pc.proc {
			case procRead:
				msg = xdr.AppendUint32(msg, uint32(pc.n))
			default:
				msg = xdr.AppendOpaque(msg, pattern(pc.n, 1))
			}
			reply := make([]byte, 0, 2<<20)
			call := func(xid uint32) {
				binary.BigEndian.PutUint32(msg, xid)
				if err := c.WriteMsg(msg); err != nil {
					b.Fatal(err)
				}
				if reply, err = c.ReadMsg(reply); err != nil {
					b.Fatal(err)
				}
			}
			for i := range 100 {
				call(uint32(i + 1))
			}
			c0, s0 := c.Stats(), s.Stats()
			b.ReportAllocs()
			b.ResetTimer()
			n := 0
			for i := 0; b.Loop(); i++ {
				call(uint32(1000 + i))
				n++
			}
			b.StopTimer()
			c1, s1 := c.Stats(), s.Stats()
			per := func(d uint64) float64 { return float64(d) / float64(n) }
			b.ReportMetric(per(c1.Sends-c0.Sends+s1.Sends-s0.Sends), "sends/op")
			b.ReportMetric(per(c1.RDMAReads-c0.RDMAReads+s1.RDMAReads-s0.RDMAReads), "rdma-reads/op")
			b.ReportMetric(per(c1.RDMAWrites-c0.RDMAWrites+s1.RDMAWrites-s0.RDMAWrites), "rdma-writes/op")
		})
	}
}
