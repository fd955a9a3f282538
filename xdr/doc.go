// Package xdr implements the External Data Representation of RFC 4506 and the
// ONC RPC message headers and record marking of RFC 5531, without reflection
// and without allocation on the hot path.
//
// Encoders are append-style: each AppendX function appends the XDR encoding of
// its argument to a byte slice and returns the extended slice, in the manner of
// strconv.AppendInt. Decoding goes through a Reader, a cursor over a []byte
// that never panics, never allocates and reports truncation as ErrShortBuffer.
// Variable-length items returned by a Reader alias the input buffer.
package xdr
