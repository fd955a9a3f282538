package client

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// regAttr is the fattr3 of the fake's post_op_attrs: a regular file (RFC
// 1813 has no ftype3 0, which the client's decoding rejects).
var regAttr = nfs3.Fattr{Type: nfs3.TypeReg}

// fakeCaller answers READ, WRITE and COMMIT from canned results, as the
// transport would hand them to Call: the reply appended to reply[:0].
type fakeCaller struct {
	data []byte
}

func (f *fakeCaller) Call(_ context.Context, msg, reply []byte) ([]byte, error) {
	xid := binary.BigEndian.Uint32(msg)
	proc := binary.BigEndian.Uint32(msg[20:])
	h := xdr.ReplyHeader{XID: xid, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}
	reply = h.Append(reply[:0])
	reply = xdr.AppendUint32(reply, 0)
	switch proc {
	case nfs.ProcRead:
		reply = xdr.AppendBool(reply, true)
		reply = regAttr.Append(reply)
		reply = xdr.AppendUint32(reply, uint32(len(f.data)))
		reply = xdr.AppendBool(reply, false)
		reply = xdr.AppendOpaque(reply, f.data)
	case nfs.ProcWrite, nfs.ProcCommit:
		reply = xdr.AppendBool(reply, false) // wcc_data: no before
		reply = xdr.AppendBool(reply, true)
		reply = regAttr.Append(reply)
		if proc == nfs.ProcWrite {
			reply = xdr.AppendUint32(reply, 4096)
			reply = xdr.AppendUint32(reply, uint32(Unstable))
		}
		reply = append(reply, 1, 2, 3, 4, 5, 6, 7, 8)
	}
	return reply, nil
}

// TestClientIOAllocs: READ, WRITE and COMMIT allocate nothing in the
// client (encoding the call, decoding the reply, copying the data), once
// their pooled buffers exist. The transport's Call is faked here; its own
// cost is the transport's.
func TestClientIOAllocs(t *testing.T) {
	fake := &fakeCaller{data: make([]byte, 4096)}
	c := &Client{rpc: fake, tmpl: make([]byte, 40), inFlight: 16}
	c.rsize.Store(1 << 20)
	c.wsize.Store(1 << 20)
	fh := FH(make([]byte, 32))
	buf := make([]byte, 4096)
	ctx := context.Background()
	for name, f := range map[string]func(){
		"READ": func() {
			if n, _, err := c.Read(ctx, fh, 0, buf); err != nil || n != 4096 {
				t.Fatal(n, err)
			}
		},
		"WRITE": func() {
			if r, err := c.Write(ctx, fh, 0, buf, Unstable); err != nil || r.Count != 4096 {
				t.Fatal(r, err)
			}
		},
		"COMMIT": func() {
			if _, err := c.Commit(ctx, fh, 0, 0); err != nil {
				t.Fatal(err)
			}
		},
	} {
		f() // fill the pool
		if n := testing.AllocsPerRun(100, f); n != 0 {
			t.Errorf("%s: %v allocations per call", name, n)
		}
	}
}
