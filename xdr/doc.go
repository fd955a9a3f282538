// Package xdr implements the External Data Representation of RFC 4506 and the
// ONC RPC message headers and record marking of RFC 5531, without reflection
// and without allocation on the hot path.
//
// Encoders are append-style: each AppendX function appends the XDR encoding of
// its argument to a byte slice and returns the extended slice, in the manner of
// strconv.AppendInt. Decoding goes through a Reader, a cursor over a []byte
// that never panics, never allocates and reports truncation as ErrShortBuffer.
// Variable-length items returned by a Reader alias the input buffer.
//
// ONC RPC headers (RFC 5531 §9): CallHeader and ReplyHeader decode and
// encode everything of an rpc_msg up to the procedure arguments or results,
// and Unmarshal returns the offset at which those start, so that a transport
// can place them (RPC-over-RDMA read and write chunks are positioned by XDR
// offset). Credentials and verifiers are OpaqueAuth values of any flavor,
// bounded to 400 bytes (RFC 5531 §8.2); AUTH_SYS bodies are parsed by
// AuthSys (RFC 5531 Appendix A). PeekXID reads only the xid and msg_type.
//
// Record marking (RFC 5531 §11): AppendRecord and RecordWriter frame
// messages; Deframer (push) and ReadRecord (pull) reassemble them from a
// byte stream split in any way, with a record size limit that is enforced
// before memory is committed.
//
// All decoders treat their input as hostile: lengths and counts are checked
// against the limit and the bytes present before anything is stored, and
// errors are sentinel values (or static wrappers of them) tested with
// errors.Is.
package xdr
