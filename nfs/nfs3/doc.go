// Package nfs3 is an XDR codec for the NFS version 3 protocol and the
// MOUNT version 3 protocol (RFC 1813): the arguments and results of every
// procedure, as Go values, encoded and decoded without anything but bytes
// in and bytes out. It sends nothing and knows no RPC header (RFC 5531);
// the caller frames the call or reply and hands this package the
// procedure's part.
//
// # Encoding and decoding
//
// Every argument and result type T has
//
//	func (x *T) Append(b []byte) []byte
//	func (x *T) Decode(r *xdr.Reader) error
//
// Append appends the XDR encoding of x to b (RFC 4506) and returns the
// extended slice; it allocates only when b lacks the capacity. It does not
// enforce the limits below: a value that breaks them encodes into bytes that
// Decode (and conforming peers) reject.
//
// Decode reads one value from r, overwriting every field of x. It either
// succeeds, leaving r just past the value, or returns an error, and then x
// is to be discarded (it may hold part of the value). Errors are sentinel
// values: those of package xdr (xdr.ErrShortBuffer when the input ends too
// soon, xdr.ErrTooLong when a length exceeds its bound, xdr.ErrBadBool for a
// boolean other than 0 or 1) and ErrBadEnum here. Decode does not check that
// the input ends after the value; the caller decides what trailing bytes
// mean.
//
// Types are named after the procedure: GetattrArgs and GetattrRes are
// GETATTR3args and GETATTR3res (RFC 1813 §3.3.1), and so on; MntArgs,
// MntRes, UmntArgs, DumpRes and ExportRes are MOUNT's (RFC 1813 §5.2).
// Procedures whose arguments or results are the same share one type, under
// aliases: MkdirRes, SymlinkRes and MknodRes are CreateRes; RmdirArgs and
// RmdirRes are RemoveArgs and RemoveRes. The structures that results share
// (Fattr, PostOpAttr, WccData, Sattr, ...) have Append and Decode too.
//
// For replies built in place, ReadRes.AppendHead stops at the length of
// READ's data, so that the data can be placed by other means (and
// WriteArgs.AppendHead likewise for WRITE); ReaddirRes.AppendHead,
// Entry.Append, Entry.Size and AppendReaddirTail (and their READDIRPLUS
// counterparts) build a READDIR result entry by entry within a budget.
//
// # Aliasing
//
// Decode does not copy variable-length opaque data: file handles (nfs_fh3,
// fhandle3), WRITE and READ data alias the buffer r reads, and stay valid
// only as long as it does. Fixed-size verifiers are arrays ([8]byte) and are
// copied. Names and paths are strings, copied from the buffer after their
// length has been checked; lists (READDIR entries, MOUNT's lists) are
// allocated as they are decoded, one item at a time, never from a count
// that the peer sent. Decoding allocates nothing else.
//
// # Bounds
//
// Lengths are checked before anything is allocated, converted or consumed:
// file handles against FHSize (RFC 1813 §2.4 NFS3_FHSIZE, §5.1.4
// FHSIZE3), file names against NameMax and paths against PathMax (RFC 1813
// leaves filename3 and nfspath3 unbounded; these are Linux's limits),
// MOUNT's dirpath and name against MntPathLen and MntNameLen (RFC 1813
// §5.1.4) and MNT's auth_flavors against MaxAuthFlavors. READ and WRITE
// data are bounded by the bytes present. Each linked-list item takes at
// least four bytes of input, so a list's memory is bounded by the input's
// size.
//
// Enumerations are strict where RFC 1813 lists every value: ftype3 (1..7),
// stable_how, createmode3 and time_how (0..2) outside their range fail with
// ErrBadEnum. Status values (nfsstat3, mountstat3) are not checked: an
// unknown status decodes as its number, and a result's arms are chosen by
// whether it is OK (MntOK).
package nfs3
