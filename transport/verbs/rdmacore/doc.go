// Package rdmacore is the verbs provider for real RDMA devices: reliable
// connections (RC queue pairs) set up through librdmacm in the TCP port
// space (RDMA_PS_TCP) and driven through libibverbs, both from Debian's
// rdma-core packages (libibverbs-dev, librdmacm-dev; nothing is vendored).
// It implements transport/verbs and passes its conformance suite
// (transport/verbs/verbstest) over Soft-RoCE (rxe) in the project's VM.
//
// It needs linux and cgo. Other builds have the same API and fail every
// Dial and Listen with an error matching verbs.ErrNotSupported; so does a
// host without RDMA devices. No C type leaves the package.
//
// # Connection management
//
// A Provider owns one RDMA-CM event channel. Its fd is non-blocking and
// its one goroutine parks on the Go netpoller (the fd wrapped in an
// *os.File, read through SyscallConn) and hands each event, copied and
// acknowledged at once, to the listener or connection whose cm_id it names.
// Dial resolves the address and route (from Provider.LocalAddr if set),
// creates the queue pair, runs ConnOptions.Setup and connects with
// retry_count 6 (rxe takes 7 as "retry forever") and rnr_retry_count 0 (a
// Send that finds no Receive fails at once, as with the Linux RPC-over-RDMA
// client; the count applies to the peer's queue pair). Private data is
// delivered as the IB CM carries it: 56 bytes on connect, 196 on accept,
// 148 on reject, zero-padded. A consumer reject is a *verbs.RejectedError;
// any other (nothing listening: IB CM reason 8) is verbs.ErrRefused.
//
// RDMA_CM_EVENT_DISCONNECTED, DEVICE_REMOVAL and ADDR_CHANGE close Done.
// A queue pair can also fail on one side only (rxe: an RNR, an access
// error, a foreign Send With Invalidate); the first failed completion the
// user polls closes Done and calls rdma_disconnect, which moves the queue
// pair to the error state and tells the peer, whose Done closes in turn.
//
// # Memory
//
// A Region is an anonymous mapping (outside the Go heap, MADV_DONTFORK)
// registered with IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND at its
// virtual address, which is what Addr reports. Remote access goes through
// type 2 memory windows only: OpBindWindow posts IBV_WR_BIND_MW with the
// rkey verbs.BindRKey gives: WorkRequest.RKey (the window's index with a
// key byte the requester chose), or verbs.NextRKey (ibv_inc_rkey) when it
// is 0; the window's remote rights are the bind's (IBV_ACCESS_REMOTE_READ,
// IBV_ACCESS_REMOTE_WRITE). All connections of a provider
// on one device share its protection domain; regions and windows still
// belong to the connection that made them and are freed by its Close,
// except the regions of a connection that closes without ever being
// established: those stay registered, zeroed, as spares for the next
// AllocRegion of the same size on the device (at most SpareLimit bytes,
// each freed after SpareIdle unused), so that a flood of handshakes that
// never complete does not pin and unpin pages for each.
//
// # Work requests and completions
//
// PostSend and PostRecv write a batch into C memory allocated per
// connection (sized by QueueCaps) and post it with one cgo call; Poll
// reads up to 32 completions per cgo call. None of them allocates. The
// provider enforces QueueCaps exactly (a device may round queues up) and
// identifies every completion by its wr_id, so that a failed completion,
// whose opcode is undefined, still reports the opcode that was posted.
// Statuses map one to one where verbs has a name for them
// (IBV_WC_LOC_LEN_ERR is StatusLength, IBV_WC_REM_ACCESS_ERR
// StatusRemoteAccess, ...); the others are StatusOther, and Conn.Err names
// the device's status.
//
// Wait arms the completion queue, polls once more (a completion that came
// before the arming is kept for the next Poll), then parks the goroutine
// on the completion channel's fd through the netpoller; the connection's
// failure, Close and the context wake it through the fd's read deadline.
// Idle connections cost no OS thread.
//
// # rxe
//
// What rxe (Linux 6.1, rdma-core 44) does differently, found by the
// conformance suite and handled here or declared to it (verbstest.Quirks):
//
//   - A bound type 2 window holds a reference on its queue pair, and
//     rxe_destroy_qp waits for it: Close frees windows first.
//   - rxe checks a bind against the window's rkey as user space last knew
//     it (ibv_mw.rkey), which libibverbs never updates for a bind posted
//     with ibv_post_send: the provider updates it after each bind.
//   - The Receive completion of a Send With Invalidate carries the kernel's
//     IB_WC_WITH_INVALIDATE bit (1 << 2), not IBV_WC_WITH_INV (1 << 3);
//     the provider accepts that bit on rxe only (vendor_id 0xffffff).
//   - An RDMA access through a window is checked against the bounds of the
//     window's memory region, not of the window (WindowBoundsUnchecked).
//   - A Send longer than the Receive fails with IBV_WC_REM_OP_ERR at the
//     sender and IBV_WC_LOC_QP_OP_ERR at the receiver
//     (OverlongSendRemoteOpError).
package rdmacore
