// Package cmpriv implements the RDMA-CM private data of RFC 8797, the 8-byte
// message with which RPC-over-RDMA version 1 peers advertise their inline
// thresholds and their support for remote invalidation when a connection is
// established.
//
// # Wire format (RFC 8797 §4)
//
//	 0                   1                   2                   3
//	+---------------+---------------+---------------+---------------+
//	|               Format Identifier 0xf6ab0e18                    |
//	+---------------+-------------+-+---------------+---------------+
//	|  Version = 1  |  Reserved   |R|   Send Size   | Receive Size  |
//	+---------------+-------------+-+---------------+---------------+
//
// R is the least significant bit of the sixth octet, the value 0x01 (the
// RFC's "bit 15", counting from the most significant bit of the second 32-bit
// word); Linux calls it RPCRDMA_CMP_F_SND_W_INV_OK. A size field holds
// bytes/1024 - 1, so the codes 0..255 stand for 1 KiB..256 KiB (§4.2).
//
// # Use
//
// The active side (the RPC-over-RDMA requester) builds its offer with
// [Message.Normalize] and [Message.Append] and passes the bytes to
// rdma_connect. The passive side (the responder) hands the private data of
// the connect request to [Negotiate], then accepts with its own offer. The
// requester hands the private data of the ESTABLISHED event to [Negotiate].
// Each side then has its [Settings]: the inline threshold each way, the size
// of the Receive buffers to post and what to do about Send With Invalidate.
// Settings belong to one connection: a reconnection negotiates afresh, and the
// peer may then offer something else (§4: implementations "MUST be prepared
// for the settings to change upon a reconnection").
//
// # Decisions
//
// Sending: Append writes exactly the 8 bytes, to be placed at offset 0 of the
// private data. Linux (svc_rdma_parse_connect_private on the server,
// rpcrdma_update_cm_private on the client) does not search: it only looks for
// the identifier at the first byte of what the CM delivers. Reserved bits are
// sent as zero (§4: "Senders MUST set these bits to zero").
//
// Receiving: [Parse] follows §5.2 rather than Linux. It searches the whole
// buffer for the identifier at every byte offset, because the offset "is not
// restricted to any alignment" and other layers (for example MPAv2, RFC 6581)
// may put their own data in front. A candidate is accepted only if its
// version is 1 and its 8 bytes lie inside the buffer. If the identifier
// occurs more than once, the first acceptable occurrence wins: an identifier
// that appears by accident in another layer's data is most likely not
// followed by a valid message, and a future sender could place a version-2
// message in front of a version-1 one for older receivers (§6). Reserved bits
// are ignored (§4: "receivers MUST ignore their value").
//
// Defaults: when no acceptable message is present, the peer is taken to have
// sent R=0 and both sizes 1024, exactly as §5.1 demands, and the [Status]
// says why, so that it can be logged and counted. A buffer that holds only
// zero bytes counts as [StatusEmpty]: an InfiniBand CM pads what it delivers
// (56 bytes with a connect request, 196 with an accept) whatever the peer
// sent, so an all-zero buffer is how "no private data" looks there.
//
// Negotiation: see [Negotiate] for the rules, including why a requester that
// offered R=1 must recognise Send With Invalidate even when a Linux server
// answered R=0, and why Receive buffers are sized by one's own offer.
package cmpriv
