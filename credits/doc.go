// Package credits implements the credit-based flow control of RPC-over-RDMA
// version 1 (RFC 8166 §3.3): Requester for the side that sends RPC Calls and
// Responder for the side that answers them.
//
// # Why credits exist
//
// An RDMA Send consumes a Receive that the peer posted in advance. If none is
// posted, the Send gets an RNR (Receiver Not Ready) NAK. The Linux client and
// server use an RNR retry count of 0, so a single Send that finds no Receive
// moves the queue pair to the error state and the connection is lost. Credits
// stop that from happening. Every RPC-over-RDMA message carries an rdma_credit
// field (RFC 8166 §4.2.3). In a Call it is the number of credits the requester
// asks for. In a Reply it is the number the responder grants. A requester MUST
// NOT have more calls outstanding than the last grant it received, and a grant
// MUST NOT be zero (RFC 8166 §3.3.1).
//
// # Requester
//
// A Requester starts with a limit of one credit. RFC 8166 §3.3.3 lets a new
// connection carry one RPC before the responder has said how many it can take.
// Linux does the same: rpcrdma_buffer_create sets rb_credits to 1, and
// rpcrdma_reset_cwnd sets it back to 1 on every reconnect. After that, the
// rdma_credit of each Reply becomes the limit (Update, Complete). A grant of 0
// is read as 1 so the connection cannot deadlock, and a grant above the local
// maximum is cut down to that maximum. Linux's rpcrdma_reply_handler does the
// same, with the comment "don't deadlock" on the 0 case.
//
// A grant can shrink while calls are in flight. Those calls are never
// cancelled. TryAcquire just refuses new calls until enough replies have come
// back that the number in flight is below the new limit. The Linux RPC client
// works the same way: xprt->cwnd is set to credits << RPC_CWNDSHIFT, and a task
// may transmit only while xprt->cong is below xprt->cwnd.
//
// A call's credit comes back only when the responder answers it, because each
// Reply is what tells the requester that the Receive the call used has been
// replaced. Abandoning a call (a timeout, a cancelled context) does not return
// its credit. The transport must keep the credit held until the late reply
// arrives, or replace the connection and call Reset. Linux replaces the
// connection when an RPC times out.
//
// # Responder
//
// A Responder keeps count of the Receives posted (Post, Received) and of the
// requests received but not yet answered (Reply, Drop). For each reply it works
// out a grant from a small adaptive Policy and from the requester's own
// request. It then limits that grant to what the posted Receives can back.
// The exact rule is:
//
//	grant ≤ posted Receives + requests received and not yet answered
//
// with the request being answered counted as answered. For this reply to carry
// a grant of at least 1, at least one Receive must be posted or another request
// must still be unanswered. The draft of RPC-over-RDMA version 2 states the
// same rule (draft-cel-nfsv4-rpcrdma-version-two §8.2): "The credit grant
// implies that enough Receives have been posted on the responder to handle the
// credit grant minus the number of pending RPC transactions".
//
// Why the rule prevents RNR: replies reach the requester in the order they
// were sent. Just after the k-th reply (grant g) arrives, the requester has at
// most g calls in flight. So it can have sent at most k+g calls in total. It
// can send more only after a later reply, which is checked in turn. Every call
// that reaches the responder uses up one posted Receive. The sum R+P (calls
// received plus Receives posted) therefore only grows, as Receives are posted.
// Checking k+g ≤ R+P when the k-th reply is sent, which is the rule above with
// R-k unanswered, means every call the requester can ever send finds a
// Receive. Before the first reply the requester may send one call, so post at
// least one Receive before accepting the connection.
//
// This rule is weaker than "grant ≤ posted Receives" and still sound. The
// difference matters when Receives are reposted in batches, as Linux svcrdma
// does (svc_rdma_wc_receive refills sc_recv_batch at a time once
// sc_pending_recvs drops below sc_max_requests). Until the batch comes,
// requests being processed still hold credits that the requester cannot reuse.
// Shrinking a grant is always safe. Growing it is what the rule limits, which
// puts into practice RFC 8166 §3.3.1: more Receives must be in place before
// the reply that advertises a larger grant is sent.
//
// Linux svcrdma always grants sc_max_requests (64 by default) and ignores the
// client's request. A Policy with HighWater 0 does the same. With HighWater
// set, the grant is halved toward Min when the backlog of requests being
// processed passes HighWater, at most once per window of replies. It grows
// back by one credit per reply once the backlog is down to LowWater. The Linux
// client copes with any grant between 1 and what it asked for.
//
// # Concurrency
//
// Requester and Responder are plain values with no locks and no goroutines,
// like the flow-control types of golang.org/x/net/http2. They are not safe for
// concurrent use. The transport's goroutine that owns the connection calls
// them one at a time. None of their methods allocate.
package credits
