//go:build e2eguest

package knfsdclient_test

import (
	"context"
	"encoding/hex"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/rpcrdma2"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/verbstest"
	"github.com/go-rpcrdma/rpcrdma/xdr"
	"github.com/stretchr/testify/require"
)

// v2ProbeXID is the rdma_xid of the first version 2 message
// TestKnfsdVersionTwo sends (rpcrdma2's golden test expects it).
const v2ProbeXID = 0x76320001

// TestKnfsdVersionTwo is what knfsd does with RPC-over-RDMA version 2, on a
// raw connection (verbs, no transport): a version 2 requester's first
// message (draft §7), an RDMA2_CONNPROP with both properties of the draft,
// then an RDMA2_MSG carrying an NFS NULL call, then version 1's RDMA_MSG
// with another NULL on the same connection. knfsd (svc_rdma_xdr_decode_req
// refuses every rdma_vers but 1) must answer each version 2 message with
// version 1's ERR_VERS naming versions 1 to 1, with the message's XID, and
// then serve the version 1 call: the fallback of §7.2 works on the
// connection the negotiation was lost on. The answers are logged on
// KNFSDV2 lines, which e2e.TestKnfsd compares with
// rpcrdma2/testdata/knfsd-v2-answers.hex; knfsd's tracepoints must show two
// err_vers.
func TestKnfsdVersionTwo(t *testing.T) {
	clearServerTrace(t)
	ctx, cancel := context.WithTimeout(context.Background(), ioGuard)
	defer cancel()
	const (
		nRecv   = 4
		recvLen = 4096
		sendOff = nRecv * recvLen
	)
	var reg verbs.Region
	caps := verbs.QueueCaps{SendQueue: 8, RecvQueue: nRecv, MaxSGE: 1, ReadDepth: 1}
	c, err := (&rdmacore.Provider{LocalAddr: clientIP}).Dial(ctx, nfsRDMAAddr,
		&verbs.ConnOptions{Caps: caps, Setup: verbstest.RecvSetup(&reg, sendOff+recvLen, nRecv, recvLen)})
	require.NoError(t, err, "dialling knfsd")
	defer c.Close()

	null := func(xid uint32) []byte {
		h := xdr.CallHeader{XID: xid, Prog: nfs.ProgNFS, Vers: 3, Proc: nfs.ProcNull}
		return h.Append(nil)
	}
	// exchange sends msg and returns the message that comes back.
	exchange := func(what string, msg []byte) []byte {
		t.Helper()
		copy(reg.Bytes()[sendOff:], msg)
		require.NoError(t, c.PostSend([]verbs.WorkRequest{{ID: 1, Op: verbs.OpSend,
			SGL: []verbs.SGE{{Region: reg, Offset: sendOff, Length: len(msg)}}}}), "sending the %s", what)
		cs := make([]verbs.Completion, 4)
		for {
			n, err := c.Poll(cs)
			require.NoError(t, err)
			for _, wc := range cs[:n] {
				require.NoError(t, wc.Err(), "completion of %v after the %s", wc.Op, what)
				if wc.Op != verbs.OpRecv {
					continue
				}
				i := int(wc.ID) - 1 // verbstest.RecvSetup: IDs 1..n
				got := append([]byte(nil), reg.Bytes()[i*recvLen:i*recvLen+wc.ByteLen]...)
				require.NoError(t, c.PostRecv([]verbs.RecvRequest{{ID: wc.ID,
					SGL: []verbs.SGE{{Region: reg, Offset: i * recvLen, Length: recvLen}}}}))
				return got
			}
			if n == 0 {
				require.NoError(t, c.Wait(ctx), "waiting for knfsd's answer to the %s", what)
			}
		}
	}

	connprop := rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: v2ProbeXID, Vers: rpcrdma2.Version2, Credit: 32,
		Type: rpcrdma2.HTypeConnProp},
		Props: rpcrdma2.Properties{rpcrdma2.ReceiveBufferSize(recvLen), rpcrdma2.ReverseRequests(rpcrdma2.ReverseNone)}}
	msg2 := rpcrdma2.Header{Prefix: rpcrdma2.Prefix{XID: v2ProbeXID + 1, Vers: rpcrdma2.Version2, Credit: 32,
		Type: rpcrdma2.HTypeMsg}}
	for i, m := range []struct {
		what string
		msg  []byte
	}{
		{"RDMA2_CONNPROP", connprop.Append(nil)},
		{"RDMA2_MSG with a NULL call", append(msg2.Append(nil), null(v2ProbeXID+1)...)},
	} {
		require.LessOrEqual(t, len(m.msg), 1024, "a first version 2 message fits version 1's default inline threshold")
		got := exchange(m.what, m.msg)
		t.Logf("KNFSDV2 answer %d to the %s: %s", i, m.what, hex.EncodeToString(got))
		xid, vers, ok := rpcrdma2.VersionOneErrVers(got)
		require.True(t, ok, "knfsd's answer to the %s is version 1's ERR_VERS: %x", m.what, got)
		require.Equal(t, uint32(v2ProbeXID+i), xid, "its XID")
		require.Equal(t, rpcrdma2.VersRange{Low: 1, High: 1}, vers, "the versions it names")
	}

	// The connection goes on in version 1.
	v1 := chunks.Header{XID: v2ProbeXID + 2, Vers: chunks.Version1, Credits: 32, Proc: chunks.ProcMsg}
	got := exchange("RDMA_MSG with a NULL call", append(v1.Append(nil), null(v2ProbeXID+2)...))
	var rh chunks.Header
	n, err := rh.ParseReply(got, nil)
	require.NoError(t, err, "knfsd's reply to the version 1 NULL: %x", got)
	require.Equal(t, chunks.ProcMsg, rh.Proc)
	var rpc xdr.ReplyHeader
	_, err = rpc.Unmarshal(got[n:])
	require.NoError(t, err)
	require.Equal(t, uint32(v2ProbeXID+2), rpc.XID)
	require.Equal(t, xdr.AcceptSuccess, rpc.AcceptStat)
	t.Logf("KNFSDV2 the version 1 NULL after both refusals: RDMA_MSG, credits %d, accepted", rh.Credits)

	ev := readServerEvents(t)
	t.Logf("knfsd's svcrdma events: %v", ev)
	require.Equal(t, 2, ev.count["err_vers"], "ERR_VERS knfsd sent")
}
