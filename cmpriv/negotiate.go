package cmpriv

import "strconv"

// Role is the part a peer plays in establishing the connection
// (RFC 8797 §4): the client actively establishes it, the server passively
// accepts it. They are the requester and the responder of the forward
// channel; on a backchannel (RFC 8167) the RPC roles reverse but the
// connection, and the private data exchanged on it, stay as they were.
type Role uint8

const (
	// Requester is the RPC-over-RDMA client, the CM's active side: it sends
	// its offer with the connect request and learns the server's from the
	// ESTABLISHED event.
	Requester Role = iota
	// Responder is the RPC-over-RDMA server, the CM's passive side: it
	// learns the client's offer from the connect request and sends its own
	// with the accept.
	Responder
)

// String returns "requester" or "responder".
func (r Role) String() string {
	switch r {
	case Requester:
		return "requester"
	case Responder:
		return "responder"
	}
	return "role(" + strconv.Itoa(int(r)) + ")"
}

// Settings is the outcome of the RFC 8797 exchange for one side of one
// connection. All sizes are in bytes and count the whole RPC-over-RDMA
// message (transport header included), as inline thresholds do (RFC 8166
// §3.3.2). No threshold is below 1024 (RFC 8166 §3.3.3).
type Settings struct {
	// Role is the role the settings were computed for.
	Role Role

	// Local is our own offer, normalized as it went on the wire.
	Local Message

	// Peer is the peer's message, or Default() when PeerStatus is not
	// StatusFound (RFC 8797 §5.1).
	Peer Message

	// PeerStatus says what Parse found in the peer's private data.
	PeerStatus Status

	// SendInline is the largest message we may convey with one RDMA Send:
	// the smaller of our send size and the peer's receive size (RFC 8797
	// §4.2). Anything larger must use chunks (RFC 8166 §3.5).
	SendInline int

	// RecvInline is the largest message the peer may convey to us with one
	// RDMA Send: the smaller of our receive size and the peer's send size,
	// which is what the peer computes as its SendInline. A requester must
	// provide a Reply chunk (or Write list) for any call whose reply could
	// exceed it: Linux knfsd does not limit its replies by the client's
	// advertised receive size, it relies on the client doing so.
	RecvInline int

	// RecvBuffer is the size of each Receive buffer to post: our own
	// advertised receive size, whatever the peer said. See Negotiate.
	RecvBuffer int

	// SendWithInvalidate says that we, as responder, may reply with RDMA
	// Send With Invalidate: both peers set R (RFC 8797 §4.1). Each such
	// Send "MUST invalidate an STag associated only with the XID" of the
	// reply. Always false for a requester.
	SendWithInvalidate bool

	// ExpectRemoteInvalidate says that we, as requester, must be prepared
	// for replies that arrive by Send With Invalidate, and check which
	// STag they invalidated: we set R. It does not depend on the peer's R,
	// because Linux knfsd sends R=0 yet uses Send With Invalidate whenever
	// the client set R. Always false for a responder.
	ExpectRemoteInvalidate bool
}

// Negotiate computes the Settings of one side of a connection from its own
// offer (normalized as by [Message.Normalize], as [Message.Append] encodes
// it) and the private data received from the peer, parsed by [Parse]. It
// never allocates.
//
// Inline thresholds (RFC 8797 §4.2): each direction's threshold is the
// smaller of the sender's send size and the receiver's receive size, so both
// ends compute the same value for each direction: the requester's SendInline
// is the responder's RecvInline and vice versa. Without a usable message from
// the peer, its sizes are 1024 (§5.1) and so are both thresholds. A peer
// offering more than we offered never raises our thresholds; Linux behaves
// the same way.
//
// Receive buffers: a requester posts its Receives before it connects. Once
// the responder has accepted it may Send at once (a backchannel call,
// RFC 8167), and with the RNR retry count of 0 that Linux uses a Send that
// finds no Receive posted breaks the connection. When those buffers are
// posted the responder's private data is not yet known, so they must be as
// large as the receive size the requester offered. A responder learns the
// requester's data before it accepts and could in principle post buffers of
// only RecvInline bytes, but a peer that sent no private data may still have
// been configured for more than 1024 bytes, and a Receive that is too small
// kills the connection. RecvBuffer is therefore our offered receive size in
// both roles; a responder that wants smaller buffers should offer less.
// Linux knfsd likewise posts buffers of its offered size before accepting.
//
// Remote invalidation (§4.1): the responder may use Send With Invalidate only
// when both peers set R; when either clears it "the responder MUST use only
// RDMA Send". Linux knfsd deviates on its own side: it advertises R=0 but
// enables Send With Invalidate when the client's R is set. A requester that
// offered R=1 must therefore recognise remotely invalidated STags whatever
// the responder advertised (ExpectRemoteInvalidate), while our own responder
// keeps to the RFC.
//
// A role other than Requester or Responder yields thresholds as above and
// neither invalidation flag.
func Negotiate(role Role, local Message, peerData []byte) Settings {
	local, _ = local.Normalize()
	peer, st := Parse(peerData)
	s := Settings{
		Role:       role,
		Local:      local,
		Peer:       peer,
		PeerStatus: st,
		SendInline: min(local.SendSize, peer.RecvSize),
		RecvInline: min(local.RecvSize, peer.SendSize),
		RecvBuffer: local.RecvSize,
	}
	switch role {
	case Requester:
		s.ExpectRemoteInvalidate = local.RemoteInvalidate
	case Responder:
		s.SendWithInvalidate = local.RemoteInvalidate && peer.RemoteInvalidate
	}
	return s
}
