package capture

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// DefaultGoldenPrefix is how many bytes of the inline RPC message a golden
// file keeps when Golden.PrefixLen is zero: enough for the RPC header's
// fixed fields (RFC 5531 §9: xid, msg_type, then rpcvers, prog, vers, proc
// and the credential's flavor and length of a call, or reply_stat, the
// verifier and accept_stat of a reply).
const DefaultGoldenPrefix = 32

// Golden describes one RPC-over-RDMA message of a capture as a golden file
// of package chunks (chunks/testdata/kernel/*.hex). The file keeps the whole
// transport header, one annotated XDR word per line, the length of the
// received Send and the first bytes of the inline RPC message, so that a
// test can rebuild a message of the right length that starts with the right
// XID, and run the responder's or the requester's validation on it.
type Golden struct {
	RPC       *RPC
	Operation string // what the peers were doing, e.g. "write 100 KiB (dd, then sync)"
	PrefixLen int    // bytes of the inline message to keep; 0 means DefaultGoldenPrefix
}

// Shape summarizes the chunk lists of h for the "shape" line of a golden
// file: rdma_proc, then "reads=C/S" for C Read chunks (runs of one
// position) of S segments in all, "writes=C/S" for the Write list, and
// "reply=none" or "reply=S" for a Reply chunk of S segments.
func (h *TransportHeader) Shape() string {
	readChunks := 0
	for i := range h.ReadList {
		if i == 0 || h.ReadList[i].Position != h.ReadList[i-1].Position {
			readChunks++
		}
	}
	writeSegs := 0
	for _, wc := range h.WriteList {
		writeSegs += len(wc)
	}
	reply := "none"
	if h.HasReplyChunk {
		reply = fmt.Sprint(len(h.ReplyChunk))
	}
	return fmt.Sprintf("%s reads=%d/%d writes=%d/%d reply=%s",
		RDMAProcName(h.Proc), readChunks, len(h.ReadList), len(h.WriteList), writeSegs, reply)
}

// Format renders the golden file. Its lines are:
//
//	# comments
//	direction call|reply
//	send OPCODE [invalidate 0xRKEY]   the Send that carried the message
//	length N                          bytes of the Send: header and inline RPC message
//	shape ...                         see TransportHeader.Shape
//	header                            then one XDR word per line: the transport header
//	rpc                               then hexadecimal bytes: the start of the inline RPC message
//
// It fails if the RPC was not parsed, or if its words do not encode back to
// the bytes of the Send.
func (g *Golden) Format() ([]byte, error) {
	r := g.RPC
	if r == nil || r.Send == nil || r.Err != nil {
		return nil, errors.New("capture: golden of an unparsed message")
	}
	h := &r.Header
	words := h.Words()
	enc := make([]byte, 0, 4*len(words))
	for _, w := range words {
		enc = binary.BigEndian.AppendUint32(enc, w.Value)
	}
	if !bytes.Equal(enc, r.Send.Payload[:h.Len]) {
		return nil, fmt.Errorf("capture: golden of xid %#08x: annotated words do not encode to the header", h.XID)
	}
	var b strings.Builder
	dir := "reply"
	if r.IsCall {
		dir = "call"
	}
	fmt.Fprintf(&b, "# %s, xid %#08x, %v -> %v, %d-packet %v\n", r.Name(), h.XID, r.Send.Src, r.Send.Dst, r.Send.Packets, r.Send.Opcode)
	if g.Operation != "" {
		fmt.Fprintf(&b, "# operation: %s\n", g.Operation)
	}
	fmt.Fprintf(&b, "direction %s\n", dir)
	fmt.Fprintf(&b, "send %v", r.Send.Opcode)
	if r.Send.Ext&ExtIETH != 0 {
		fmt.Fprintf(&b, " invalidate %#08x", r.Send.InvalidateRKey)
	}
	fmt.Fprintf(&b, "\nlength %d\n", len(r.Send.Payload))
	fmt.Fprintf(&b, "shape %s\n", h.Shape())
	b.WriteString("header\n")
	for _, w := range words {
		fmt.Fprintf(&b, "%08x  # %s\n", w.Value, w.Note)
	}
	n := g.PrefixLen
	if n <= 0 {
		n = DefaultGoldenPrefix
	}
	prefix := r.Send.Payload[h.Len:]
	if len(prefix) > n {
		prefix = prefix[:n]
	}
	fmt.Fprintf(&b, "rpc  # %d of %d bytes inline\n", len(prefix), len(r.Send.Payload)-h.Len)
	for len(prefix) > 0 {
		line := prefix[:min(16, len(prefix))]
		prefix = prefix[len(line):]
		for i := 0; i < len(line); i += 4 {
			if i > 0 {
				b.WriteByte(' ')
			}
			fmt.Fprintf(&b, "%x", line[i:min(i+4, len(line))])
		}
		b.WriteByte('\n')
	}
	return []byte(b.String()), nil
}
