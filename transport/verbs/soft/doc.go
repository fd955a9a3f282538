// Package soft is a software verbs provider in pure Go: a faithful model
// of a reliable-connected (RC) queue pair, carried over TCP, so that
// everything above transport/verbs can be tested, and can run, on any
// machine: in one process or between two processes.
//
// # Semantics
//
// The provider models what the RPC-over-RDMA transport depends on, as the
// InfiniBand Architecture specification (IBA) and Linux rxe define it:
//
//   - Work requests execute strictly in posting order; a Send posted after
//     an RDMA Write is delivered only once the Write's data is placed.
//     Completions of a send queue are reported in posting order, each one
//     after the peer acknowledged the request (or, for an RDMA Read, when
//     its data arrived).
//   - A Send that finds no Receive posted is refused with an RNR NAK and,
//     as with rnr_retry = 0 (what the Linux client uses), the requester's
//     work request fails with verbs.StatusRNR at once.
//   - A Send longer than the Receive it lands in fails at the requester
//     with StatusRemoteInvalidRequest and at the receiver with
//     StatusLength (IBA class C; rxe reports the receiver's side as
//     remote invalid request).
//   - An RDMA Read or Write outside a bound window, with a stale,
//     invalidated or unknown rkey, or without the access right, fails
//     with StatusRemoteAccess; the target's queue pair fails too.
//   - Memory windows are type 2: OpBindWindow needs a free window and
//     gives it the rkey verbs.BindRKey picks: the one WorkRequest.RKey
//     asks for (same index, another key byte), or verbs.NextRKey of its
//     rkey (the key byte incremented, as ibv_inc_rkey). Window indexes
//     and first key bytes are drawn at random.
//     OpLocalInvalidate, the peer's Send With Invalidate and Close free
//     it, and no byte moves through the old binding once they have
//     returned: an RDMA Write or Read response still in progress is cut
//     short and fails with StatusRemoteAccess (rxe would finish it). A
//     Send With Invalidate naming an rkey that is not one of the
//     receiver's windows fails the receiver's Receive with
//     StatusRemoteInvalidRequest and puts its queue pair in error, while
//     the sender sees success (what rxe does). A region with bound
//     windows cannot be closed (IBA 10.6.7.2.6).
//   - Any failure moves the queue pair to the error state: every
//     outstanding work request and Receive completes with StatusFlushed,
//     Done closes, and the peer is told (as rdma_disconnect would), so
//     that its queue pair fails too. A broken link fails the oldest
//     unanswered request with StatusRetryExceeded.
//   - A request the peer does not answer (an RDMA Read without its
//     response, an RDMA Write or Send never acknowledged) fails with
//     StatusRetryExceeded once the transport timer ran out, as an RC
//     requester's ACK timeout and retry count (IBA 9.7.6.1.3) make it:
//     RetryCount + 1 ACK timeouts in a row without progress on it
//     (Provider.AckTimeout, Provider.RetryCount; about 0.47 s by
//     default). Bytes of the request still being handed to the stream,
//     or of its Read Response being placed, are progress, as the ACKs of
//     a long message's packets are.
//   - Connection management follows the IB CM through rdma_cm: private
//     data of at most 56 bytes on connect, 196 on accept and 148 on
//     reject, delivered zero-padded to exactly those lengths, even when
//     none was sent.
//
// Checks a NIC makes while executing a work request (the local buffers'
// bounds and registration, the window's state) are reported in its
// completion, not by PostSend; PostSend fails only for what ibv_post_send
// refuses (a full queue, too many SGEs, an unknown opcode, a message over
// MaxMessageSize) and for a bind asking for an rkey the window cannot take
// (verbs.ErrInvalidRKey).
//
// Region memory is an anonymous mapping outside the Go heap (mmap), never
// moved or scanned by the garbage collector and unmapped by Close.
// Region.Addr reports per-connection virtual addresses, not the mapping's.
//
// # Concurrency
//
// Each established connection has two goroutines. The reader executes the
// peer's requests as the responder, without involving the user (placing
// Sends into Receives, checking rkeys and bounds, copying RDMA Write data
// into windows, queuing RDMA Read responses), and handles the answers to
// the local requests. The writer transmits work requests and the
// responder's answers, batching frames into one buffer. Wait parks the
// caller on a channel. Posting, polling and the data path allocate
// nothing in steady state. Close waits for both goroutines.
//
// # Wire protocol
//
// A TCP connection carries the CM exchange, then frames.
//
// CM messages: a 16-byte header ("SRDM", version 1, type, read depth,
// zero, starting sequence number, private data length, zero) and the
// private data. The dialer sends REQ; the listener answers REP or REJ; the
// dialer confirms a REP with RTU. A refused TCP connect is
// verbs.ErrRefused; a REJ is a *verbs.RejectedError.
//
// Frames: a 24-byte header (type, NAK code, flags, zero, sequence number,
// rkey, length, address; big-endian) and, for Send, RDMA Write and RDMA
// Read Response, the payload and a one-byte trailer that can void a
// message whose source memory vanished while it was being sent. Requests
// (Send, Write, Read Request) carry consecutive sequence numbers that the
// responder checks; ACK is cumulative; NAK names the request it refuses;
// DISCONNECT ends the stream. Every length is checked against
// MaxMessageSize and every field a type does not use must be zero before
// anything is allocated or read; payloads stream into registered memory
// through a fixed buffer, so a hostile peer cannot make the provider
// allocate. A peer that breaks the protocol loses the connection.
//
// # Fault injection
//
// Provider.Faults injects failures for the tests of the layers above: a
// dropped link, a link that drops at the n-th Send, delayed completions,
// a corrupted received length, failing posts. See Faults.
package soft
