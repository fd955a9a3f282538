package xdr_test

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

func ExampleReader() {
	var b []byte
	b = xdr.AppendUint32(b, 7)
	b = xdr.AppendString(b, "nfs")
	b = xdr.AppendUint64(b, 1<<40)

	r := xdr.NewReader(b)
	n, _ := r.Uint32()
	name, _ := r.String(255) // aliases b; no allocation
	size, _ := r.Uint64()
	_, err := r.Uint32() // nothing left
	fmt.Println(n, string(name), size, r.Offset())
	fmt.Println(errors.Is(err, xdr.ErrShortBuffer))
	// Output:
	// 7 nfs 1099511627776 20
	// true
}

func ExampleAppendUint32() {
	b := xdr.AppendUint32(nil, 100003) // NFS program number
	b = xdr.AppendInt32(b, -1)
	b = xdr.AppendBool(b, true)
	fmt.Printf("% x\n", b)
	// Output: 00 01 86 a3 ff ff ff ff 00 00 00 01
}

func ExampleAppendOpaque() {
	b := xdr.AppendOpaque(nil, []byte{0xca, 0xfe, 0xba}) // length, data, one byte of padding
	fmt.Printf("% x\n", b)
	fmt.Println(xdr.Padding(3), xdr.RoundUp(3))
	// Output:
	// 00 00 00 03 ca fe ba 00
	// 1 4
}

func ExampleCallHeader() {
	cred := xdr.AuthSys{Stamp: 1, MachineName: []byte("client"), UID: 1000, GID: 1000, GIDs: []uint32{1000}}
	var credBuf [xdr.MaxAuthBytes]byte
	call := xdr.CallHeader{XID: 42, Prog: 100003, Vers: 3, Proc: 1, Cred: cred.OpaqueAuth(credBuf[:0])}

	msg := call.Append(nil)
	msg = xdr.AppendOpaque(msg, []byte{1, 2, 3, 4}) // GETATTR3args: a file handle

	var h xdr.CallHeader
	argsOff, err := h.Unmarshal(msg)
	if err != nil {
		panic(err)
	}
	var sys xdr.AuthSys
	if err := h.Cred.AuthSys(&sys); err != nil {
		panic(err)
	}
	fmt.Println(h.XID, h.Prog, h.Vers, h.Proc, h.Cred.Flavor, h.Verf.Flavor)
	fmt.Println(string(sys.MachineName), sys.UID, sys.GIDs)
	fmt.Println("args at", argsOff, "=", call.EncodedLen())
	// Output:
	// 42 100003 3 1 AUTH_SYS AUTH_NONE
	// client 1000 [1000]
	// args at 72 = 72
}

// A server answers a call whose rpcvers is not 2 with RPC_MISMATCH.
func ExampleCallHeader_rpcMismatch() {
	msg := (&xdr.CallHeader{XID: 9, RPCVers: 3}).Append(nil)

	var h xdr.CallHeader
	_, err := h.Unmarshal(msg)
	if errors.Is(err, xdr.ErrRPCVersion) {
		reply := xdr.ReplyHeader{XID: h.XID, Stat: xdr.MsgDenied, RejectStat: xdr.RejectRPCMismatch,
			Mismatch: xdr.Mismatch{Low: xdr.RPCVersion, High: xdr.RPCVersion}}
		fmt.Printf("% x\n", reply.Append(nil))
	}
	// Output: 00 00 00 09 00 00 00 01 00 00 00 01 00 00 00 00 00 00 00 02 00 00 00 02
}

func ExampleReplyHeader() {
	reply := xdr.ReplyHeader{XID: 42, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptProgMismatch,
		Mismatch: xdr.Mismatch{Low: 2, High: 4}}
	msg := reply.Append(nil)

	var h xdr.ReplyHeader
	off, err := h.Unmarshal(msg)
	fmt.Println(h.XID, h.Stat, h.AcceptStat, h.Mismatch.Low, h.Mismatch.High, off, err)

	ok := xdr.ReplyHeader{XID: 43, Stat: xdr.MsgAccepted, AcceptStat: xdr.AcceptSuccess}
	msg = xdr.AppendUint32(ok.Append(nil), 0) // results: NFS3_OK
	off, _ = h.Unmarshal(msg)
	fmt.Println(h.AcceptStat, "results at", off)
	// Output:
	// 42 MSG_ACCEPTED PROG_MISMATCH 2 4 32 <nil>
	// SUCCESS results at 24
}

func ExampleAuthSys() {
	a := xdr.AuthSys{Stamp: 7, MachineName: []byte("h"), UID: 0, GID: 0, GIDs: []uint32{0, 1}}
	body := a.Append(nil)

	var b xdr.AuthSys // reuse it: once GIDs has grown, Unmarshal allocates nothing
	err := b.Unmarshal(body)
	fmt.Println(len(body), b.Stamp, string(b.MachineName), b.GIDs, err)

	tooMany := xdr.AuthSys{GIDs: make([]uint32, 17)}
	err = b.Unmarshal(tooMany.Append(nil))
	fmt.Println(errors.Is(err, xdr.ErrTooLong))
	// Output:
	// 32 7 h [0 1] <nil>
	// true
}

func ExampleOpaqueAuth() {
	verf := xdr.OpaqueAuth{Flavor: xdr.FlavorGSS, Body: []byte{1, 2, 3, 4, 5}}
	b := verf.Append(nil)
	r := xdr.NewReader(b)
	var got xdr.OpaqueAuth
	err := got.Decode(&r)
	fmt.Println(got.Flavor, got.Body, verf.EncodedLen(), err)
	// Output: RPCSEC_GSS [1 2 3 4 5] 16 <nil>
}

func ExamplePeekXID() {
	msg := (&xdr.ReplyHeader{XID: 0xbeef, Stat: xdr.MsgAccepted}).Append(nil)
	xid, t, err := xdr.PeekXID(msg)
	fmt.Printf("%#x %v %v\n", xid, t, err)
	// Output: 0xbeef REPLY <nil>
}

func ExampleAppendRecord() {
	rec := xdr.AppendRecord(nil, []byte("hello"), 3) // fragments of at most 3 bytes
	fmt.Printf("% x\n", rec)
	fmt.Println(xdr.RecordLen(5, 3))
	// Output:
	// 00 00 00 03 68 65 6c 80 00 00 02 6c 6f
	// 13
}

// A transport's Read side hands a stream-oriented RPC library a received
// message as one single-fragment record.
func ExampleAppendFragmentHeader() {
	msg := []byte{0, 0, 0, 1, 0, 0, 0, 0} // start of a call
	stream := xdr.AppendFragmentHeader(nil, len(msg), true)
	stream = append(stream, msg...)
	fmt.Printf("% x\n", stream)
	// Output: 80 00 00 08 00 00 00 01 00 00 00 00
}

func ExampleDeframer() {
	var stream []byte
	stream = xdr.AppendRecord(stream, []byte("first"), 2) // three fragments
	stream = xdr.AppendRecord(stream, []byte("second"), 0)

	d := xdr.Deframer{MaxRecord: 1024}
	for _, b := range stream { // the worst split: one byte per Write
		if _, err := d.Write([]byte{b}); err != nil {
			panic(err)
		}
		for rec, ok := d.Next(); ok; rec, ok = d.Next() {
			fmt.Printf("%s\n", rec)
		}
	}

	// A header claiming 2 GiB fails at once, before any memory is committed.
	_, err := d.Write([]byte{0xff, 0xff, 0xff, 0xff})
	fmt.Println(errors.Is(err, xdr.ErrRecordTooLarge), d.Buffered())
	// Output:
	// first
	// second
	// true 0
}

func ExampleReadRecord() {
	var stream bytes.Buffer
	w := xdr.RecordWriter{W: &stream, MaxFragment: 4}
	w.Write([]byte("one record"))
	w.Write([]byte("another"))

	var buf []byte
	for {
		rec, err := xdr.ReadRecord(&stream, buf, 1024)
		if err != nil {
			fmt.Println(err)
			break
		}
		fmt.Printf("%q\n", rec)
		buf = rec // reuse the buffer
	}
	// Output:
	// "one record"
	// "another"
	// EOF
}

func ExampleRecordWriter() {
	var out bytes.Buffer
	w := &xdr.RecordWriter{W: &out}
	w.Write([]byte{0xaa, 0xbb})
	fmt.Printf("% x\n", out.Bytes())
	// Output: 80 00 00 02 aa bb
}

func ExampleAcceptStat_String() {
	fmt.Println(xdr.AcceptGarbageArgs, xdr.RejectAuthError, xdr.AuthTooWeak, xdr.AcceptStat(9))
	// Output: GARBAGE_ARGS AUTH_ERROR AUTH_TOOWEAK accept_stat(9)
}
