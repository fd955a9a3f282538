package transport

import (
	"github.com/go-rpcrdma/rpcrdma/cmpriv"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// connRole is what differs between a requester and a responder (RFC 8166
// §3.5): newConn chooses it once, as crypto/tls chooses its handshake
// function, and the Conn's methods call it instead of asking which role
// they play. *requester and *responder implement it. Methods whose names
// end in Locked are called with Conn.mu held.
type connRole interface {
	// kind is the role (for logs and the requester-only API).
	kind() cmpriv.Role

	// writeMsg is Conn.WriteMsg: a requester's are serialised under
	// Conn.wmu; a responder's run at once.
	writeMsg(msg []byte) error
	// writeMsgDirect is Conn.WriteMsgDirect; done is called exactly once.
	writeMsgDirect(msg []byte, done func()) error
	// send sends one message of the record stream (Write): a call, or a
	// reply. Called with Conn.wmu held.
	send(msg []byte) error
	// sendSkipped handles a record the deframer discarded for exceeding
	// MaxRPCSize. Called with Conn.wmu held.
	sendSkipped(s xdr.Skipped) error

	// slotViewLocked returns the message a queued slot holds, and
	// slotErrLocked what reading it reports with it.
	slotViewLocked(idx int) msgView
	slotErrLocked(idx int) error
	// takeOwnedLocked hands a message assembled in a buffer of the RPC
	// server's (Config.CallBuffers) over to ReadMsgAlloc (alloc).
	takeOwnedLocked(idx int, alloc bool) ([]byte, bool)
	// releaseSlotLocked is called once a queued message has been read.
	releaseSlotLocked(idx int)
	// creditsLocked is the credit figure Stats reports: the requester's
	// limit, or the responder's last grant.
	creditsLocked() uint32
	// versionLocked is the RPC-over-RDMA version the connection runs, as
	// Stats reports it.
	versionLocked() uint32

	// setupEndpoint sets the role's limits on a new endpoint.
	setupEndpoint(ep *endpoint)
	// completionLocked handles one successful completion of ep.
	completionLocked(ep *endpoint, kind uint64, slot, buf int, wc *verbs.Completion) error
	// wokenLocked returns how many callers the completions handled since
	// the last call woke (a requester's Calls and readers: gatherCalls),
	// and starts the count again; a responder's is 0.
	wokenLocked() int
	// trimLocked trims the role's caches when ep's chunk pool was trimmed:
	// idle, the pool was idle for a period; again, it holds more to trim.
	trimLocked(idle, again bool)
	// connLostLocked handles the loss of ep, the connection until now
	// (Conn.ep is already nil). It may release Conn.mu meanwhile.
	connLostLocked(ep *endpoint, err error)

	// lingerLocked runs at Close before the endpoint is taken away.
	lingerLocked()
	// closeLocked runs at Close once ep (nil if none) is taken away, before
	// it is shut down; closed (without Conn.mu) once it is.
	closeLocked(ep *endpoint)
	closed(ep *endpoint)
}

var (
	_ connRole = (*requester)(nil)
	_ connRole = (*responder)(nil)
)
