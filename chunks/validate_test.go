package chunks

import (
	"errors"
	"fmt"
	"io"
	"math"
	"testing"
)

// Which parser a malformed header goes through.
type role int

const (
	asCall      role = iota // ParseCall, outcome by OutcomeOf
	asReply                 // ParseReply, outcome by ReplyOutcomeOf
	asUnmarshal             // Unmarshal, outcome by OutcomeOf
)

func (r role) String() string { return [...]string{"call", "reply", "unmarshal"}[r] }

const (
	msg   = uint32(ProcMsg)
	nomsg = uint32(ProcNoMsg)
)

// fx is a fixed part with XID 0xabcd, version 1, 32 credits.
func fx(proc uint32) []uint32 { return []uint32{0xabcd, 1, 32, proc} }

// rs is a Read list entry: discriminator, position, segment.
func rs(pos, length uint32) []uint32 { return cat([]uint32{1, pos}, seg(7, length, 0x1000)) }

// ws is a segment of a Write or Reply chunk.
func ws(length uint32) []uint32 { return seg(9, length, 0x2000) }

// rep repeats a word list n times.
func rep(n int, w []uint32) []uint32 {
	var out []uint32
	for range n {
		out = append(out, w...)
	}
	return out
}

// TestMalformed: each malformed header fails with its sentinel error and
// the outcome its receiver acts on (RFC 8166 §4.5; svcrdma and the Linux
// client where the RFC leaves room).
func TestMalformed(t *testing.T) {
	inline := []uint32{0xabcd, 0, 0, 0} // a 16-byte inline RPC message
	small := Limits{MaxReadChunks: 2, MaxWriteChunks: 2, MaxSegments: 2, MaxChunkLength: 8192}
	tests := []struct {
		name    string
		role    role
		lim     *Limits
		b       []byte
		wantErr error
		want    Outcome
	}{
		// The fixed part and the version.
		{"empty message", asCall, nil, nil, ErrShortHeader, OutcomeDrop},
		{"3 words, no rdma_proc", asCall, nil, words(0xabcd, 1, 32), ErrShortHeader, OutcomeDrop},
		{"15 bytes", asCall, nil, words(fx(msg)...)[:15], ErrShortHeader, OutcomeDrop},
		{"rdma_vers 0", asCall, nil, words(0xabcd, 0, 32, msg, 0, 0, 0), ErrVersion, OutcomeErrVers},
		{"rdma_vers 2", asCall, nil, words(0xabcd, 2, 32, msg, 0, 0, 0), ErrVersion, OutcomeErrVers},
		{"rdma_vers 2, fixed part only", asCall, nil, words(0xabcd, 2, 32, msg), ErrVersion, OutcomeErrVers},
		{"rdma_vers checked before rdma_proc", asCall, nil, words(0xabcd, 0xffffffff, 32, 99), ErrVersion, OutcomeErrVers},
		// Procedures.
		{"unknown rdma_proc 5", asCall, nil, words(cat(fx(5), []uint32{0, 0, 0})...), ErrUnknownProc, OutcomeErrChunk},
		{"unknown rdma_proc 0xffffffff", asCall, nil, words(fx(0xffffffff)...), ErrUnknownProc, OutcomeErrChunk},
		{"RDMA_MSGP", asCall, nil, words(cat(fx(uint32(ProcMsgp)), []uint32{4, 1024, 0, 0, 0})...), ErrMsgp, OutcomeErrChunk},
		{"RDMA_DONE", asCall, nil, words(fx(uint32(ProcDone))...), ErrDone, OutcomeDrop},
		{"RDMA_ERROR at a responder", asCall, nil, words(cat(fx(uint32(ProcError)), []uint32{2})...), ErrUnexpectedError, OutcomeDrop},
		{"RDMA_ERROR with garbage at a responder", asCall, nil, words(cat(fx(uint32(ProcError)), []uint32{77, 1, 2, 3})...), ErrUnexpectedError, OutcomeDrop},
		{"RDMA_ERROR carrying a Write list", asUnmarshal, nil, words(cat(fx(uint32(ProcError)), []uint32{2, 1, 1}, ws(4096), []uint32{0})...), ErrTrailingData, OutcomeErrChunk},
		{"RDMA_ERROR carrying a Reply chunk", asUnmarshal, nil, words(cat(fx(uint32(ProcError)), []uint32{1, 1, 1, 1, 1}, ws(4096))...), ErrTrailingData, OutcomeErrChunk},
		{"RDMA_ERROR unknown rdma_err", asUnmarshal, nil, words(cat(fx(uint32(ProcError)), []uint32{3})...), ErrUnknownErrorCode, OutcomeErrChunk},
		{"ERR_VERS without the version range", asUnmarshal, nil, words(cat(fx(uint32(ProcError)), []uint32{1, 1})...), ErrTruncated, OutcomeErrChunk},
		{"RDMA_ERROR without rdma_err", asUnmarshal, nil, words(fx(uint32(ProcError))...), ErrTruncated, OutcomeErrChunk},
		// Structure of the chunk lists.
		{"RDMA_MSG without chunk lists", asCall, nil, words(fx(msg)...), ErrTruncated, OutcomeErrChunk},
		{"Read list discriminator 2", asCall, nil, words(cat(fx(msg), []uint32{2, 0, 0})...), ErrBadDiscriminator, OutcomeErrChunk},
		{"Read segment cut short", asCall, nil, words(cat(fx(msg), []uint32{1, 4, 7, 4096})...), ErrTruncated, OutcomeErrChunk},
		{"Read list without terminator", asCall, nil, words(cat(fx(msg), rs(4, 8))...), ErrTruncated, OutcomeErrChunk},
		{"Write list discriminator 7", asCall, nil, words(cat(fx(msg), []uint32{0, 7, 0})...), ErrBadDiscriminator, OutcomeErrChunk},
		{"Write list without terminator", asCall, nil, words(cat(fx(msg), []uint32{0, 1, 1}, ws(4096))...), ErrTruncated, OutcomeErrChunk},
		{"Write chunk segments overrun the message", asCall, &huge, words(cat(fx(msg), []uint32{0, 1, 3}, ws(4096), ws(4096))...), ErrTruncated, OutcomeErrChunk},
		{"Write chunk claims 2^32-1 segments", asCall, nil, words(cat(fx(msg), []uint32{0, 1, math.MaxUint32}, ws(1))...), ErrTooManySegments, OutcomeErrChunk},
		{"Reply chunk discriminator 2", asCall, nil, words(cat(fx(msg), []uint32{0, 0, 2})...), ErrBadDiscriminator, OutcomeErrChunk},
		{"Reply chunk missing", asCall, nil, words(cat(fx(msg), []uint32{0, 0})...), ErrTruncated, OutcomeErrChunk},
		{"Reply chunk segments overrun the message", asCall, &huge, words(cat(fx(nomsg), rs(0, 64), []uint32{0, 0, 1, 2}, ws(4096))...), ErrTruncated, OutcomeErrChunk},
		// Limits.
		{"too many Read chunks", asCall, &small, words(cat(fx(msg), rs(4, 8), rs(16, 8), rs(28, 8), []uint32{0, 0, 0}, inline)...), ErrTooManyReadChunks, OutcomeErrChunk},
		{"too many segments in a Read chunk", asCall, &small, words(cat(fx(msg), rep(3, rs(4, 8)), []uint32{0, 0, 0}, inline)...), ErrTooManySegments, OutcomeErrChunk},
		{"Read chunk longer than the limit", asCall, &small, words(cat(fx(msg), rs(4, 8000), rs(4, 1000), []uint32{0, 0, 0}, inline)...), ErrChunkTooLong, OutcomeErrChunk},
		{"too many Write chunks", asCall, &small, words(cat(fx(msg), []uint32{0}, rep(3, cat([]uint32{1, 1}, ws(8))), []uint32{0, 0}, inline)...), ErrTooManyWriteChunks, OutcomeErrChunk},
		{"too many segments in a Write chunk", asCall, &small, words(cat(fx(msg), []uint32{0, 1, 3}, rep(3, ws(8)), []uint32{0, 0}, inline)...), ErrTooManySegments, OutcomeErrChunk},
		{"Write chunk longer than the limit", asCall, &small, words(cat(fx(msg), []uint32{0, 1, 2}, ws(8192), ws(1), []uint32{0, 0}, inline)...), ErrChunkTooLong, OutcomeErrChunk},
		{"Write chunk of 2^32-2 bytes", asCall, nil, words(cat(fx(msg), []uint32{0, 1, 2}, ws(math.MaxUint32), ws(math.MaxUint32), []uint32{0, 0}, inline)...), ErrChunkTooLong, OutcomeErrChunk},
		{"too many segments in the Reply chunk", asCall, &small, words(cat(fx(msg), []uint32{0, 0, 1, 3}, rep(3, ws(8)), inline)...), ErrTooManySegments, OutcomeErrChunk},
		{"Reply chunk longer than the limit", asCall, &small, words(cat(fx(msg), []uint32{0, 0, 1, 2}, ws(8000), ws(8000), inline)...), ErrChunkTooLong, OutcomeErrChunk},
		// Read chunk positions (ValidateCall).
		{"position not a multiple of 4", asCall, nil, words(cat(fx(msg), rs(6, 8), []uint32{0, 0, 0}, inline)...), ErrPositionAlign, OutcomeErrChunk},
		{"positions decrease", asCall, nil, words(cat(fx(msg), rs(12, 4), rs(4, 4), []uint32{0, 0, 0}, inline)...), ErrReadListOrder, OutcomeErrChunk},
		{"Read chunk split in the list", asCall, nil, words(cat(fx(msg), rs(4, 4), rs(12, 4), rs(4, 4), []uint32{0, 0, 0}, inline)...), ErrReadListOrder, OutcomeErrChunk},
		{"overlapping Read chunks", asCall, nil, words(cat(fx(msg), rs(4, 16), rs(16, 4), []uint32{0, 0, 0}, inline)...), ErrReadChunkOverlap, OutcomeErrChunk},
		{"position inside an odd-length chunk", asCall, nil, words(cat(fx(msg), rs(4, 13), rs(16, 4), []uint32{0, 0, 0}, inline)...), ErrReadChunkOverlap, OutcomeErrChunk},
		{"position beyond the inline message", asCall, nil, words(cat(fx(msg), rs(20, 8), []uint32{0, 0, 0}, inline)...), ErrPositionBeyondMessage, OutcomeErrChunk},
		{"second chunk beyond the inline message", asCall, nil, words(cat(fx(msg), rs(8, 5), rs(28, 4), []uint32{0, 0, 0}, inline)...), ErrPositionBeyondMessage, OutcomeErrChunk},
		{"chunk beyond the Long Call message", asCall, nil, words(cat(fx(nomsg), rs(0, 64), rs(68, 4), []uint32{0, 0, 0})...), ErrPositionBeyondMessage, OutcomeErrChunk},
		{"position-zero Read chunk in RDMA_MSG", asCall, nil, words(cat(fx(msg), rs(0, 64), []uint32{0, 0, 0}, inline)...), ErrPositionZeroInMsg, OutcomeErrChunk},
		{"RDMA_NOMSG with no chunks at all", asCall, nil, words(cat(fx(nomsg), []uint32{0, 0, 0})...), ErrNoMsgNoCallChunk, OutcomeErrChunk},
		{"RDMA_NOMSG call with only a Reply chunk", asCall, nil, words(cat(fx(nomsg), []uint32{0, 0, 1, 1}, ws(4096))...), ErrNoMsgNoCallChunk, OutcomeErrChunk},
		{"RDMA_NOMSG call with only a data Read chunk", asCall, nil, words(cat(fx(nomsg), rs(4, 8), []uint32{0, 0, 0})...), ErrNoMsgNoCallChunk, OutcomeErrChunk},
		// The inline RPC message.
		{"RDMA_MSG without an RPC message", asCall, nil, words(cat(fx(msg), []uint32{0, 0, 0})...), ErrXIDMismatch, OutcomeErrChunk},
		{"RDMA_MSG with a 3-byte RPC message", asCall, nil, append(words(cat(fx(msg), []uint32{0, 0, 0})...), 0, 0, 0), ErrXIDMismatch, OutcomeErrChunk},
		{"RPC message XID differs from rdma_xid", asCall, nil, words(cat(fx(msg), []uint32{0, 0, 0, 0xabce, 0})...), ErrXIDMismatch, OutcomeErrChunk},
		// Replies, at a requester.
		{"reply: short", asReply, nil, words(0xabcd, 1), ErrShortHeader, OutcomeDrop},
		{"reply: rdma_vers 2", asReply, nil, words(0xabcd, 2, 32, msg, 0, 0, 0), ErrVersion, OutcomeDrop},
		{"reply: truncated", asReply, nil, words(cat(fx(msg), []uint32{0, 1, 1})...), ErrTruncated, OutcomeFailRPC},
		{"reply: RDMA_DONE", asReply, nil, words(fx(uint32(ProcDone))...), ErrDone, OutcomeFailRPC},
		{"reply: unknown rdma_proc", asReply, nil, words(fx(8)...), ErrUnknownProc, OutcomeFailRPC},
		{"reply: Read list", asReply, nil, words(cat(fx(msg), rs(4, 8), []uint32{0, 0, 0}, inline)...), ErrReplyReadList, OutcomeFailRPC},
		{"reply: RDMA_MSG with Reply chunk data", asReply, nil, words(cat(fx(msg), []uint32{0, 0, 1, 1}, ws(100), inline)...), ErrReplyMsgReplyChunk, OutcomeFailRPC},
		{"reply: RDMA_NOMSG without Reply chunk", asReply, nil, words(cat(fx(nomsg), []uint32{0, 0, 0})...), ErrReplyNoMsgNoReplyChunk, OutcomeFailRPC},
		{"reply: RDMA_NOMSG with an empty Reply chunk", asReply, nil, words(cat(fx(nomsg), []uint32{0, 0, 1, 1}, ws(0))...), ErrReplyNoMsgNoReplyChunk, OutcomeFailRPC},
		{"reply: RPC message XID differs", asReply, nil, words(cat(fx(msg), []uint32{0, 0, 0, 0xabce})...), ErrXIDMismatch, OutcomeFailRPC},
		{"reply: unknown rdma_err", asReply, nil, words(cat(fx(uint32(ProcError)), []uint32{9})...), ErrUnknownErrorCode, OutcomeFailRPC},
	}
	if len(tests) < 25 {
		t.Fatalf("only %d malformed headers", len(tests))
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s/%s", tc.role, tc.name), func(t *testing.T) {
			var h Header
			// Fill h first: a failed parse must not depend on, or leave,
			// earlier contents.
			if _, err := h.Unmarshal(goldens[1].h.Append(nil), nil); err != nil {
				t.Fatal(err)
			}
			var (
				n   int
				err error
				got Outcome
			)
			switch tc.role {
			case asCall:
				n, err = h.ParseCall(tc.b, tc.lim)
				got = OutcomeOf(err)
			case asReply:
				n, err = h.ParseReply(tc.b, tc.lim)
				got = ReplyOutcomeOf(err)
			case asUnmarshal:
				n, err = h.Unmarshal(tc.b, tc.lim)
				got = OutcomeOf(err)
			}
			if err != tc.wantErr {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("errors.Is(%v, %v) is false", err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("outcome = %v, want %v", got, tc.want)
			}
			if n != 0 {
				t.Fatalf("hdrLen = %d on error", n)
			}
			// Whenever the fixed part arrived, the XID is there to
			// address an RDMA_ERROR.
			if len(tc.b) >= MinHeaderSize && h.XID != 0xabcd {
				t.Fatalf("XID = %#x after error", h.XID)
			}
			if len(h.ReadList)+len(h.WriteList)+len(h.ReplyChunk) != 0 || h.HasReplyChunk {
				t.Fatalf("failed parse left lists behind: %+v", h)
			}
		})
	}
}

// TestValidCallEdges: the positions ValidateCall must accept, so that the
// checks above are not merely strict.
func TestValidCallEdges(t *testing.T) {
	inline := []uint32{0xabcd, 0, 0, 0} // a 16-byte inline RPC message
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"chunk at the very end of the inline message", words(cat(fx(msg), rs(16, 8), []uint32{0, 0, 0}, inline)...)},
		{"chunk at the very start of the arguments", words(cat(fx(msg), rs(4, 8), []uint32{0, 0, 0}, inline)...)},
		{"odd-length chunk then a chunk right after its roundup", words(cat(fx(msg), rs(8, 13), rs(24, 4), []uint32{0, 0, 0}, inline)...)},
		{"odd-length chunk then a chunk right after its roundup, both at the end", words(cat(fx(msg), rs(16, 13), rs(32, 4), []uint32{0, 0, 0}, inline)...)},
		{"chunk with its XDR pad included", words(cat(fx(msg), rs(8, 16), rs(24, 4), []uint32{0, 0, 0}, inline)...)},
		{"two segments, one chunk", words(cat(fx(msg), rs(12, 4096), rs(12, 7), []uint32{0, 0, 0}, inline)...)},
		{"zero-length segment", words(cat(fx(msg), rs(12, 0), []uint32{0, 0, 0}, inline)...)},
		{"Long Call", words(cat(fx(nomsg), rs(0, 64), rs(0, 36), []uint32{0, 0, 0})...)},
		{"Long Call with a data chunk at its end", words(cat(fx(nomsg), rs(0, 64), rs(64, 4096), []uint32{0, 0, 0})...)},
		{"Long Call followed by stray bytes", words(cat(fx(nomsg), rs(0, 64), []uint32{0, 0, 0, 0xdead})...)},
		{"empty Write chunk", words(cat(fx(msg), []uint32{0, 1, 0, 0, 0}, inline)...)},
		{"present empty Reply chunk", words(cat(fx(msg), []uint32{0, 0, 1, 0}, inline)...)},
		{"Write list and Reply chunk in a Long Call", words(cat(fx(nomsg), rs(0, 64), []uint32{0, 1, 1}, ws(4096), []uint32{0, 1, 1}, ws(4096))...)},
	} {
		var h Header
		if _, err := h.ParseCall(tc.b, nil); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestValidReplyEdges: legal replies that Linux's client would refuse but
// RFC 8166 allows, which ValidateReply leaves to the transport.
func TestValidReplyEdges(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"two Write chunks", words(cat(fx(msg), []uint32{0, 1, 1}, ws(10), []uint32{1, 1}, ws(20), []uint32{0, 0, 0xabcd})...)},
		{"Long Reply with a Write chunk", words(cat(fx(nomsg), []uint32{0, 1, 1}, ws(10), []uint32{0, 1, 1}, ws(200))...)},
		{"RDMA_MSG reply with a zero-length Reply chunk", words(cat(fx(msg), []uint32{0, 0, 1, 1}, ws(0), []uint32{0xabcd})...)},
	} {
		var h Header
		if _, err := h.ParseReply(tc.b, nil); err != nil {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
}

// TestValidateInMemory: the validators also check headers built in memory,
// which never went through Unmarshal's limit checks.
func TestValidateInMemory(t *testing.T) {
	lim := Limits{MaxReadChunks: 1, MaxWriteChunks: 1, MaxSegments: 1, MaxChunkLength: 100}
	for _, tc := range []struct {
		name string
		h    Header
		want error
	}{
		{"vers", Header{Vers: 3, Proc: ProcMsg}, ErrVersion},
		{"error", Header{Vers: 1, Proc: ProcError}, ErrUnexpectedError},
		{"done", Header{Vers: 1, Proc: ProcDone}, ErrDone},
		{"msgp", Header{Vers: 1, Proc: ProcMsgp}, ErrMsgp},
		{"proc", Header{Vers: 1, Proc: 6}, ErrUnknownProc},
		{"read chunks", Header{Vers: 1, Proc: ProcMsg, ReadList: []ReadSegment{{Position: 4}, {Position: 8}}}, ErrTooManyReadChunks},
		{"read segments", Header{Vers: 1, Proc: ProcMsg, ReadList: []ReadSegment{{Position: 4}, {Position: 4}}}, ErrTooManySegments},
		{"read length", Header{Vers: 1, Proc: ProcMsg, ReadList: []ReadSegment{{Position: 4, Segment: Segment{Length: 101}}}}, ErrChunkTooLong},
		{"write chunks", Header{Vers: 1, Proc: ProcMsg, WriteList: []WriteChunk{nil, nil}}, ErrTooManyWriteChunks},
		{"write segments", Header{Vers: 1, Proc: ProcMsg, WriteList: []WriteChunk{{{}, {}}}}, ErrTooManySegments},
		{"write length", Header{Vers: 1, Proc: ProcMsg, WriteList: []WriteChunk{{{Length: 101}}}}, ErrChunkTooLong},
		{"reply length", Header{Vers: 1, Proc: ProcMsg, ReplyChunk: WriteChunk{{Length: 101}}}, ErrChunkTooLong},
		{"ok", Header{Vers: 1, Proc: ProcMsg, ReadList: []ReadSegment{{Position: 4, Segment: Segment{Length: 100}}}}, nil},
	} {
		if err := tc.h.ValidateCall(8, &lim); err != tc.want {
			t.Errorf("%s: ValidateCall = %v, want %v", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		h    Header
		want error
	}{
		{Header{Vers: 0, Proc: ProcMsg}, ErrVersion},
		{Header{Vers: 1, Proc: ProcMsgp}, ErrMsgp},
		{Header{Vers: 1, Proc: ProcDone}, ErrDone},
		{Header{Vers: 1, Proc: 5}, ErrUnknownProc},
		{Header{Vers: 1, Proc: ProcError, ErrCode: CodeChunk}, nil},
		{Header{Vers: 1, Proc: ProcError}, ErrUnknownErrorCode},
	} {
		if err := tc.h.ValidateReply(); err != tc.want {
			t.Errorf("ValidateReply(%+v) = %v, want %v", tc.h, err, tc.want)
		}
	}
}

func TestOutcomeOf(t *testing.T) {
	wrapped := fmt.Errorf("transport: %w", ErrPositionAlign)
	for _, tc := range []struct {
		err         error
		call, reply Outcome
	}{
		{nil, OutcomeOK, OutcomeOK},
		{ErrShortHeader, OutcomeDrop, OutcomeDrop},
		{ErrVersion, OutcomeErrVers, OutcomeDrop},
		{ErrTruncated, OutcomeErrChunk, OutcomeFailRPC},
		{wrapped, OutcomeErrChunk, OutcomeFailRPC},
		{ErrReplyReadList, OutcomeDrop, OutcomeFailRPC},
		{io.EOF, OutcomeDrop, OutcomeDrop},
	} {
		if got := OutcomeOf(tc.err); got != tc.call {
			t.Errorf("OutcomeOf(%v) = %v, want %v", tc.err, got, tc.call)
		}
		if got := ReplyOutcomeOf(tc.err); got != tc.reply {
			t.Errorf("ReplyOutcomeOf(%v) = %v, want %v", tc.err, got, tc.reply)
		}
	}
	if !errors.Is(ErrTruncated, ErrTruncated) || errors.Is(ErrTruncated, ErrChunkTooLong) {
		t.Fatal("sentinel identity")
	}
	if ErrTruncated.Error() != "chunks: truncated transport header" {
		t.Fatalf("Error() = %q", ErrTruncated.Error())
	}
}
