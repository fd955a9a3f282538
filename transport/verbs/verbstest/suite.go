// Package verbstest is the conformance suite of transport/verbs: one set of
// tests that every provider must pass, so that the layers above can be
// tested on the software provider and trusted on real hardware. The
// software provider runs it on the host (transport/verbs/soft), the
// rdma-core provider inside the VM over rxe.
//
// The suite checks RC semantics as the RPC-over-RDMA transport relies on
// them: Send/Receive, RDMA Write and Read of 1 byte to 1 MiB into bound
// windows, in-order execution and completion, CM private data (zero-padded
// delivery, limits, reject), Send With Invalidate and invalidated rkeys,
// the errors that kill a connection (RNR, length, remote access, foreign
// invalidation) and how both sides see them, binds with a chosen rkey,
// windows' access rights, disconnection, queue limits, the registered
// memory count of providers that implement verbs.MemoryMeter, 64
// connections at once, and 10 000 operations.
//
// Where providers legitimately differ (hardware reporting a status
// differently), the test says so and accepts both.
package verbstest

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// Env is the environment of one test: the providers of the two sides and
// the address the server listens on.
type Env struct {
	// Client dials and Server listens; they may be the same provider.
	Client, Server verbs.Provider
	// ListenAddr is the listening address, "host:0" to pick a port
	// ("127.0.0.1:0" for the software provider, the rxe interface's
	// address in the VM).
	ListenAddr string
	// Quirks are the device's known departures from the InfiniBand
	// Architecture in what the suite checks; the zero value checks IBA.
	Quirks Quirks
}

// Quirks name the ways a device is known to depart from the InfiniBand
// Architecture (IBA) in what the suite checks. With a quirk set, the tests
// concerned check the device's documented behaviour instead of IBA's.
type Quirks struct {
	// WindowBoundsUnchecked: an RDMA Read or Write through a window is
	// checked against the bounds of the region the window is bound to,
	// not against the window's own (C10-87 wants the window's): an access
	// outside the window but inside the region succeeds. rxe does this
	// (Linux 6.1 and later: rxe_resp.c, check_rkey calls mr_check_range on
	// the window's MR).
	WindowBoundsUnchecked bool
	// OverlongSendRemoteOpError: a Send longer than the Receive it lands
	// in fails at the sender with IBV_WC_REM_OP_ERR and at the receiver
	// with IBV_WC_LOC_QP_OP_ERR (both StatusOther), not with a remote
	// invalid request and a length error. rxe does this: copy_data
	// returns -EINVAL, not -ENOSPC, for a message longer than the Receive,
	// so the responder takes its malformed-WQE path and NAKs with a remote
	// operational error (rxe_resp.c, send_data_in; rxe_mr.c, copy_data).
	OverlongSendRemoteOpError bool
}

// Run runs the whole suite as subtests of t. newEnv is called by every
// subtest that connects.
func Run(t *testing.T, newEnv func(t *testing.T) Env) {
	cases := []struct {
		name string
		fn   func(*testing.T, Env)
	}{
		{"PingPong", testPingPong},
		{"SendGatherScatter", testSendGatherScatter},
		{"ZeroLengthSend", testZeroLengthSend},
		{"RDMAWriteRead", testRDMAWriteRead},
		{"WriteThenSendOrdering", testWriteThenSendOrdering},
		{"InOrderCompletions", testInOrderCompletions},
		{"ReadDepth", testReadDepth},
		{"PrivateData", testPrivateData},
		{"Reject", testReject},
		{"SetupErrorRejects", testSetupErrorRejects},
		{"Refused", testRefused},
		{"ListenerClose", testListenerClose},
		{"SendWithInvalidate", testSendWithInvalidate},
		{"AccessAfterLocalInvalidate", testAccessAfterLocalInvalidate},
		{"RebindGivesNewRKey", testRebindGivesNewRKey},
		{"BindChosenKey", testBindChosenKey},
		{"WindowAccessRights", testWindowAccessRights},
		{"RemoteAccessErrors", testRemoteAccessErrors},
		{"SendWithInvalidateForeignRKey", testSendWithInvalidateForeignRKey},
		{"BindBoundWindowFails", testBindBoundWindowFails},
		{"RegionCloseWithBoundWindow", testRegionCloseWithBoundWindow},
		{"RNR", testRNR},
		{"RNRFlushesLaterRequests", testRNRFlushesLaterRequests},
		{"LengthError", testLengthError},
		{"LocalProtection", testLocalProtection},
		{"Disconnect", testDisconnect},
		{"QueueFull", testQueueFull},
		{"MemoryMeter", testMemoryMeter},
		{"RegisterRegion", testRegisterRegion},
		{"WaitContext", testWaitContext},
		{"ManyConnections", testManyConnections},
		{"TenThousandOperations", testTenThousandOperations},
		{"ConcurrentPostPollClose", testConcurrentPostPollClose},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, newEnv(t)) })
	}
}
