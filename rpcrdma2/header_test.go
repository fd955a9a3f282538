package rpcrdma2

import (
	"bytes"
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// words assembles a header from 32-bit words, as the draft's XDR lays
// them out.
func words(ws ...uint32) []byte {
	b := make([]byte, 0, 4*len(ws))
	for _, w := range ws {
		b = append(b, byte(w>>24), byte(w>>16), byte(w>>8), byte(w))
	}
	return b
}

// goldens are headers built word by word from the draft's XDR (§6.3,
// §6.4), with the Header each encodes.
var goldens = []struct {
	name string
	wire []byte
	h    Header
}{
	{"msg, no chunks, a call", words(7, 2, 32, 0, 0, 0, 0, 0, 0),
		Header{Prefix: Prefix{XID: 7, Vers: 2, Credit: 32, Type: HTypeMsg}}},
	{"msg, a reply granting 16", words(7, 2, 16, 0, 1, 0, 0, 0, 0),
		Header{Prefix: Prefix{XID: 7, Vers: 2, Credit: 16, Type: HTypeMsg, Flags: FlagResponse}}},
	{"msg, Write chunk and Reply chunk, inv_handle", words(9, 2, 8, 0, 0,
		0x1234,                   // rdma_inv_handle
		0,                        // no Read list
		1, 1, 0x1234, 4096, 0, 5, // one Write chunk of one segment
		0,                      // end of the Write list
		1, 1, 0x99, 512, 0, 6), // Reply chunk
		Header{Prefix: Prefix{XID: 9, Vers: 2, Credit: 8, Type: HTypeMsg}, InvHandle: 0x1234,
			Chunks: chunks.Header{WriteList: []chunks.WriteChunk{{{Handle: 0x1234, Length: 4096, Offset: 5}}},
				ReplyChunk: chunks.WriteChunk{{Handle: 0x99, Length: 512, Offset: 6}}}}},
	{"nomsg, position-zero Read chunk", words(10, 2, 8, 1, 0,
		0,
		1, 0, 0x77, 8192, 0, 1, // Read list entry at position 0
		0, 0, 0),
		Header{Prefix: Prefix{XID: 10, Vers: 2, Credit: 8, Type: HTypeNoMsg},
			Chunks: chunks.Header{ReadList: []chunks.ReadSegment{{Position: 0, Segment: chunks.Segment{Handle: 0x77, Length: 8192, Offset: 1}}}}}},
	{"error, vers", words(11, 2, 4, 4, 1, 1, 1, 2),
		Header{Prefix: Prefix{XID: 11, Vers: 2, Credit: 4, Type: HTypeError, Flags: FlagResponse}, Error: Error{Code: ErrVers, Vers: VersRange{Low: 1, High: 2}}}},
	{"error, bad xdr", words(12, 2, 4, 4, 1, 2),
		Header{Prefix: Prefix{XID: 12, Vers: 2, Credit: 4, Type: HTypeError, Flags: FlagResponse}, Error: Error{Code: ErrBadXDR}}},
	{"error, inval htype", words(12, 2, 4, 4, 1, 3),
		Header{Prefix: Prefix{XID: 12, Vers: 2, Credit: 4, Type: HTypeError, Flags: FlagResponse}, Error: Error{Code: ErrInvalHType}}},
	{"error, read chunks", words(13, 2, 4, 4, 1, 4, 0),
		Header{Prefix: Prefix{XID: 13, Vers: 2, Credit: 4, Type: HTypeError, Flags: FlagResponse}, Error: Error{Code: ErrReadChunks}}},
	{"error, write chunks", words(13, 2, 4, 4, 1, 5, 1),
		Header{Prefix: Prefix{XID: 13, Vers: 2, Credit: 4, Type: HTypeError, Flags: FlagResponse}, Error: Error{Code: ErrWriteChunks, MaxChunks: 1}}},
	{"error, segments", words(13, 2, 4, 4, 1, 6, 16),
		Header{Prefix: Prefix{XID: 13, Vers: 2, Credit: 4, Type: HTypeError, Flags: FlagResponse}, Error: Error{Code: ErrSegments, MaxSegments: 16}}},
	{"error, write resource", words(13, 2, 4, 4, 1, 7, 1, 65536),
		Header{Prefix: Prefix{XID: 13, Vers: 2, Credit: 4, Type: HTypeError, Flags: FlagResponse}, Error: Error{Code: ErrWriteResource, Write: WriteNeed{ChunkIndex: 1, LengthNeeded: 65536}}}},
	{"error, reply resource", words(13, 2, 4, 4, 1, 8, 9000),
		Header{Prefix: Prefix{XID: 13, Vers: 2, Credit: 4, Type: HTypeError, Flags: FlagResponse}, Error: Error{Code: ErrReplyResource, LengthNeeded: 9000}}},
	{"error, system", words(13, 2, 4, 4, 1, 9),
		Header{Prefix: Prefix{XID: 13, Vers: 2, Credit: 4, Type: HTypeError, Flags: FlagResponse}, Error: Error{Code: ErrSystem}}},
	{"error, a code of an extension (default: void)", words(13, 2, 4, 4, 1, 100),
		Header{Prefix: Prefix{XID: 13, Vers: 2, Credit: 4, Type: HTypeError, Flags: FlagResponse}, Error: Error{Code: 100}}},
	{"connprop, both properties", words(0, 2, 32, 5, 0, 2, 1, 4, 8192, 2, 4, 2),
		Header{Prefix: Prefix{Vers: 2, Credit: 32, Type: HTypeConnProp},
			Props: Properties{ReceiveBufferSize(8192), ReverseRequests(ReverseGeneral)}}},
	{"connprop, defaults and an unknown property", words(0, 2, 32, 5, 1, 3, 1, 0, 77, 3, 0xaabbcc00, 2, 0),
		Header{Prefix: Prefix{Vers: 2, Credit: 32, Type: HTypeConnProp, Flags: FlagResponse},
			Props: Properties{{Which: PropReceiveBufferSize, Data: []byte{}}, {Which: 77, Data: []byte{0xaa, 0xbb, 0xcc}}, {Which: PropReverseRequests, Data: []byte{}}}}},
	{"connprop, empty", words(0, 2, 32, 5, 0, 0),
		Header{Prefix: Prefix{Vers: 2, Credit: 32, Type: HTypeConnProp}}},
}

// equal compares two headers field by field (the lists as
// chunks.Header.Equal does; property data by bytes).
func equal(a, b *Header) bool {
	if a.Prefix != b.Prefix || a.InvHandle != b.InvHandle || a.Error != b.Error || len(a.Props) != len(b.Props) {
		return false
	}
	for i := range a.Props {
		if a.Props[i].Which != b.Props[i].Which || !bytes.Equal(a.Props[i].Data, b.Props[i].Data) {
			return false
		}
	}
	ac, bc := a.Chunks, b.Chunks
	ac.XID, ac.Vers, ac.Credits, ac.Proc = 0, 0, 0, 0
	bc.XID, bc.Vers, bc.Credits, bc.Proc = 0, 0, 0, 0
	return ac.Equal(&bc)
}

func TestGoldens(t *testing.T) {
	var h Header
	for _, g := range goldens {
		t.Run(g.name, func(t *testing.T) {
			if got := g.h.Append(nil); !bytes.Equal(got, g.wire) {
				t.Fatalf("Append:\n got %x\nwant %x", got, g.wire)
			}
			if n := g.h.Len(); n != len(g.wire) {
				t.Fatalf("Len %d, encoding %d bytes", n, len(g.wire))
			}
			n, err := h.Unmarshal(g.wire, nil)
			if err != nil || n != len(g.wire) {
				t.Fatalf("Unmarshal: %d, %v", n, err)
			}
			if !equal(&h, &g.h) {
				t.Fatalf("Unmarshal:\n got %+v\nwant %+v", h, g.h)
			}
		})
	}
}

// Every proper prefix of every golden fails, with the error the draft's
// order of checks gives, and leaves no body behind.
func TestTruncatedPrefixes(t *testing.T) {
	var h Header
	for _, g := range goldens {
		for n := range len(g.wire) {
			_, err := h.Unmarshal(g.wire[:n], nil)
			var want Outcome
			switch {
			case n < CommonSize:
				want = OutcomeDrop
			default:
				want = OutcomeErrBadXDR
			}
			if err == nil && g.h.Type == HTypeMsg && n == len(g.wire) {
				continue
			}
			if err == nil {
				// An RDMA2_MSG's RPC message follows its header: a prefix
				// that ends after the lists is a header with no message.
				if g.h.Type == HTypeMsg && n >= g.h.Len() {
					continue
				}
				t.Fatalf("%s: a prefix of %d bytes of %d parsed", g.name, n, len(g.wire))
			}
			if o := OutcomeOf(err); o != want {
				t.Fatalf("%s, %d bytes: %v, outcome %v, want %v", g.name, n, err, o, want)
			}
			if h.InvHandle != 0 || len(h.Props) != 0 || h.Error != (Error{}) ||
				len(h.Chunks.ReadList)+len(h.Chunks.WriteList)+len(h.Chunks.ReplyChunk) != 0 {
				t.Fatalf("%s, %d bytes: a failed parse left a body: %+v", g.name, n, h)
			}
			if n >= CommonSize && h.XID != g.h.XID {
				t.Fatalf("%s, %d bytes: XID %d not kept for the answer", g.name, n, h.XID)
			}
		}
	}
}

// hostile are headers a peer must not send, with the error and the
// responder's outcome each gets.
var hostile = []struct {
	name string
	wire []byte
	err  error
}{
	{"a version 1 header", words(1, 1, 32, 0, 0, 0, 0), ErrVersion},
	{"version 3", words(1, 3, 32, 0, 0, 0, 0, 0, 0), ErrVersion},
	{"version 0", words(1, 0, 32, 0, 0), ErrVersion},
	{"16 bytes of version 2", words(1, 2, 32, 0), ErrShortPrefix},
	{"header type 2 (v1's RDMA_MSGP)", words(1, 2, 32, 2, 0), ErrHType},
	{"header type 3 (v1's RDMA_DONE)", words(1, 2, 32, 3, 0), ErrHType},
	{"header type 6", words(1, 2, 32, 6, 0, 0, 0, 0, 0), ErrHType},
	{"header type 2^32-1", words(1, 2, 32, 0xffffffff, 0), ErrHType},
	{"an error without F_RESPONSE (from a requester)", words(1, 2, 32, 4, 0, 2), ErrErrorNotResponse},
	{"an error with bytes after its arm", words(1, 2, 32, 4, 1, 6, 16, 0), ErrTrailingData},
	{"an error with no code", words(1, 2, 32, 4, 1), ErrTruncated},
	{"ERR_WRITE_RESOURCE with half its arm", words(1, 2, 32, 4, 1, 7, 1), ErrTruncated},
	{"a property set claiming 2^32-1 properties", words(1, 2, 32, 5, 0, 0xffffffff), ErrTooManyProperties},
	{"a property set claiming 64 properties in 8 bytes", words(1, 2, 32, 5, 0, 64, 1, 0), ErrTruncated},
	{"RBSIZ of 3 bytes", words(1, 2, 32, 5, 0, 1, 1, 3, 0x00100000), ErrPropertyData},
	{"RBSIZ of 8 bytes", words(1, 2, 32, 5, 0, 1, 1, 8, 0, 4096), ErrPropertyData},
	{"BRS of 3 (no such level)", words(1, 2, 32, 5, 0, 1, 2, 4, 3), ErrPropertyData},
	{"a property's data longer than the message", words(1, 2, 32, 5, 0, 1, 77, 400, 0), ErrTruncated},
	{"a property's length 2^32-1", words(1, 2, 32, 5, 0, 1, 77, 0xffffffff), ErrTruncated},
	{"bytes after the property set", words(1, 2, 32, 5, 0, 0, 9), ErrTrailingData},
	{"a chunk-list discriminator of 2", words(1, 2, 32, 0, 0, 0, 2), listError(chunks.ErrBadDiscriminator)},
	{"a Write chunk of 2^32-1 segments", words(1, 2, 32, 0, 0, 0, 0, 1, 0xffffffff, 0), listError(chunks.ErrTooManySegments)},
	{"17 Read chunks", append(words(1, 2, 32, 1, 0, 0), readEntries(17)...), listError(chunks.ErrTooManyReadChunks)},
	{"no rdma_inv_handle", words(1, 2, 32, 0, 0), ErrTruncated},
}

// readEntries returns n Read list entries at distinct positions, and the
// rest of an empty header.
func readEntries(n int) []byte {
	var ws []uint32
	for i := range n {
		ws = append(ws, 1, uint32(4*i), 1, 4, 0, 0)
	}
	return words(append(ws, 0, 0, 0)...)
}

func TestHostile(t *testing.T) {
	var h Header
	for _, c := range hostile {
		t.Run(c.name, func(t *testing.T) {
			n, err := h.Unmarshal(c.wire, nil)
			if !errors.Is(err, c.err) || n != 0 {
				t.Fatalf("Unmarshal: %d, %v; want %v", n, err, c.err)
			}
			if OutcomeOf(err) != c.err.(*ProtocolError).Outcome {
				t.Fatalf("outcome %v", OutcomeOf(err))
			}
			if h.XID != 1 {
				t.Fatalf("XID %d, want 1 (kept for the answer)", h.XID)
			}
		})
	}
}

// Reserved flag bits are decoded and reported, not refused (draft §9.4:
// their meaning is an extension's).
func TestReservedFlags(t *testing.T) {
	var h Header
	if _, err := h.Unmarshal(words(1, 2, 32, 0, 0x80000001, 0, 0, 0, 0), nil); err != nil {
		t.Fatal(err)
	}
	if !h.Response() || h.Reserved() != 0x80000000 {
		t.Fatalf("Response %v, Reserved %#x", h.Response(), h.Reserved())
	}
}

// The properties' accessors: the last valued one wins; empty data is the
// default.
func TestPropertyValues(t *testing.T) {
	ps := Properties{ReceiveBufferSize(1024), {Which: PropReceiveBufferSize, Data: []byte{}}, ReceiveBufferSize(65536)}
	if v, ok := ps.ReceiveBufferSize(); !ok || v != 65536 {
		t.Fatalf("ReceiveBufferSize %d, %v", v, ok)
	}
	if _, ok := ps.ReverseRequests(); ok {
		t.Fatal("ReverseRequests found in a set without it")
	}
	ps = Properties{ReverseRequests(ReverseNone)}
	if v, ok := ps.ReverseRequests(); !ok || v != ReverseNone {
		t.Fatalf("ReverseRequests %v, %v", v, ok)
	}
}

func TestAppendError(t *testing.T) {
	got := AppendErrVers(nil, 5, 8, 1, 2)
	if want := words(5, 2, 8, 4, 1, 1, 1, 2); !bytes.Equal(got, want) {
		t.Fatalf("AppendErrVers %x, want %x", got, want)
	}
	got = AppendError(nil, 5, 8, Error{Code: ErrReplyResource, LengthNeeded: 100})
	if want := words(5, 2, 8, 4, 1, 8, 100); !bytes.Equal(got, want) {
		t.Fatalf("AppendError %x, want %x", got, want)
	}
}

func TestStrings(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{HTypeConnProp.String(), "RDMA2_CONNPROP"}, {HType(6).String(), "RDMA2_HTYPE(6)"},
		{ErrWriteResource.String(), "RDMA2_ERR_WRITE_RESOURCE"}, {ErrorCode(0).String(), "RDMA2_ERR(0)"},
		{ReverseGeneral.String(), "RDMA2_RVREQSUP_GENL"}, {ReverseSupport(4294967295).String(), "RDMA2_RVREQSUP(4294967295)"},
		{OutcomeErrInvalHType.String(), "RDMA2_ERR_INVAL_HTYPE"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}

// AppendMsg writes what Append writes for a header holding the lists, in
// MsgLen bytes, HeaderExtra more than version 1's header.
func TestAppendMsg(t *testing.T) {
	for _, g := range goldens {
		if g.h.Type != HTypeMsg && g.h.Type != HTypeNoMsg {
			continue
		}
		got := AppendMsg(nil, &g.h.Prefix, g.h.InvHandle, &g.h.Chunks)
		if !bytes.Equal(got, g.wire) || len(got) != MsgLen(g.h.Chunks.Counts()) {
			t.Errorf("%s: AppendMsg %x, want %x", g.name, got, g.wire)
		}
		if v1 := chunks.Size(g.h.Chunks.Counts()); len(got)-v1 != HeaderExtra {
			t.Errorf("%s: %d bytes against version 1's %d, HeaderExtra %d", g.name, len(got), v1, HeaderExtra)
		}
		buf := make([]byte, 0, 256)
		if n := testing.AllocsPerRun(50, func() { _ = AppendMsg(buf[:0], &g.h.Prefix, g.h.InvHandle, &g.h.Chunks) }); n != 0 {
			t.Errorf("%s: AppendMsg allocates %v", g.name, n)
		}
	}
}

func TestIsResponse(t *testing.T) {
	for _, tc := range []struct {
		b    []byte
		want bool
	}{
		{words(5, 2, 8, 0, 1, 0, 0, 0, 0), true},  // an RDMA2_MSG reply
		{words(5, 2, 8, 0, 0, 0, 0, 0, 0), false}, // a call
		{words(5, 2, 8, 4, 3), true},              // an RDMA2_ERROR, flags beyond F_RESPONSE
		{words(5, 1, 8, 0, 1), false},             // version 1: word 4 is a list
		{words(5, 2, 8, 0), false},                // no rdma_flags
		{nil, false},
	} {
		if got := IsResponse(tc.b); got != tc.want {
			t.Errorf("IsResponse(%x) = %v, want %v", tc.b, got, tc.want)
		}
	}
}
