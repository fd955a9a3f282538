package marshal

import (
	"errors"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// TestPlanReplyHeaderTooLarge: a requester that offers so many Write and
// Reply chunk segments that the reply's header alone exceeds its receive
// size gets ERR_CHUNK, not a message longer than its inline threshold (the
// hostile-peer suite of the transport checks the wire outcome).
func TestPlanReplyHeaderTooLarge(t *testing.T) {
	seg := chunks.Segment{Handle: 1, Length: 64, Offset: 0x1000}
	wc := make(chunks.WriteChunk, 100)
	rc := make(chunks.WriteChunk, 100)
	for i := range wc {
		wc[i], rc[i] = seg, seg
	}
	call := &chunks.Header{WriteList: []chunks.WriteChunk{wc}, ReplyChunk: rc, HasReplyChunk: true}
	in := ReplyInput{MsgLen: 24, Call: call}
	if _, err := PlanReply(in, 1024); !errors.Is(err, ErrReplyHeaderTooLarge) {
		t.Fatalf("PlanReply at 1024: %v, want ErrReplyHeaderTooLarge", err)
	}
	// The same call at a threshold that holds the header: a Long Reply.
	p, err := PlanReply(in, 4096)
	if err != nil || p.Proc != chunks.ProcMsg && p.Proc != chunks.ProcNoMsg {
		t.Fatalf("PlanReply at 4096: %+v, %v", p, err)
	}
	if p.HeaderLen+p.InlineLen > 4096 {
		t.Fatalf("plan %+v exceeds the threshold", p)
	}
}
