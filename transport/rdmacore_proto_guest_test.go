//go:build e2eguest && linux && cgo

// The tests in this file run inside the project's Soft-RoCE VM, started by
// e2e/rdmacore_version2_test.go (TestRdmacoreVersion2), over rdma-core
// between rxe1 (10.0.0.2, the requester) and rxe0 (10.0.0.1, the
// responder): the protocol matrix's cells in both RPC-over-RDMA versions,
// and reverse-direction RPC, on real verbs.

package transport

import (
	"fmt"
	"slices"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/rdmacore"
)

// onRdmacore points protoNet at rdma-core on rxe for the test.
func onRdmacore(t *testing.T) {
	saved := protoNet
	t.Cleanup(func() { protoNet = saved })
	protoNet.provider = func(client bool) verbs.Provider {
		if client {
			return &rdmacore.Provider{LocalAddr: "10.0.0.2"}
		}
		return &rdmacore.Provider{}
	}
	protoNet.listen = "10.0.0.1:0"
}

// TestRdmacoreProtocolMatrix runs cells of TestProtocolMatrix and
// TestProtocolMatrixVersion2 on rdma-core: both inline settings the
// kernel uses (1,024 and 4,096 each way), every pair of R bits, in version
// 1 and version 2. Each cell makes every call form (inline, Read chunk,
// Long Call, Write chunk, Reply chunk) at and around its boundaries,
// checks every reply byte, and both sides' counters and the work requests
// posted against the model, Send With Invalidate included.
func TestRdmacoreProtocolMatrix(t *testing.T) {
	onRdmacore(t)
	for _, v2 := range []bool{false, true} {
		for _, size := range []int{1024, 4096} {
			for _, r := range [][2]bool{{true, true}, {true, false}, {false, true}, {false, false}} {
				pc := protoConfig{size, size, size, size, r[0], r[1], v2}
				t.Run(fmt.Sprintf("v%d-%s", vers(v2), pc), func(t *testing.T) { protoRunMatrixCell(t, pc) })
			}
		}
	}
}

// TestRdmacoreReverse runs TestReverseCallback on rdma-core: a callback
// program both ways under eight callers, reverse-direction calls limited
// by their credits.
func TestRdmacoreReverse(t *testing.T) {
	onRdmacore(t)
	testReverseCallback(t)
}

// vers is the RPC-over-RDMA version of a cell.
func vers(v2 bool) int {
	if v2 {
		return 2
	}
	return 1
}

// TestRdmacoreVersion2Responder runs TestVersion2Responder's and
// TestReverseCallRaw's cases on rdma-core: the raw requester of the
// hostile suite on rxe1 sending version 2 headers of every kind, good and
// bad, to our responder on rxe0, and what each must get (every
// RDMA2_ERROR code our responder sends among them), with the suite's
// checks of leaks and memory.
func TestRdmacoreVersion2Responder(t *testing.T) {
	onRdmacore(t)
	runV2ServerCases(t, append(slices.Clone(v2ServerCases), reverseServerCases...))
}

// TestRdmacoreVersion2Requester runs the tests of our requester against a
// raw version 2 responder on rdma-core: the negotiation's outcomes
// (knfsd's answer, bad answers, an RDMA2_CONNPROP answer), every
// RDMA2_ERROR reaching the caller, the hostile cases after negotiation,
// and reverse calls from the raw responder.
func TestRdmacoreVersion2Requester(t *testing.T) {
	onRdmacore(t)
	t.Run("knfsd-answer", TestVersion2KnfsdAnswer)
	t.Run("bad-answers", TestVersion2BadAnswers)
	t.Run("connprop-answer", TestVersion2ConnPropAnswer)
	t.Run("remote-error", TestVersion2RemoteError)
	t.Run("hostile", TestVersion2RequesterHostile)
	t.Run("reverse-serve", TestReverseServeRaw)
}
