package chunks

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// A golden header: a hand-built transport header after the chunk list
// illustrations of RFC 8166 §4.7 ("XDR Examples"), where a plain segment
// reads HLOO (handle, length, 64-bit offset) and a Read segment PHLOO.
// Segment values follow Linux's habits: offsets carry the XID in their upper
// 32 bits, lengths are page-sized.
type golden struct {
	name, desc string
	reply      bool // the header of a reply rather than of a call
	msgLen     int  // length of the inline RPC message of an RDMA_MSG
	h          Header
}

const gxid = 0x5a3c0001 // an XID like Linux's

func gseg(handle, length uint32, off uint64) Segment {
	return Segment{Handle: handle, Length: length, Offset: uint64(gxid)<<32 | off}
}

var goldens = []golden{
	{
		name: "inline_msg", msgLen: 120,
		desc: "RDMA_MSG without chunks: \"after the four fixed fields ... three 32-bit fields that contain zero\"",
		h:    Header{XID: gxid, Vers: 1, Credits: 128, Proc: ProcMsg},
	},
	{
		name: "long_call",
		desc: "Long Call: RDMA_NOMSG, a position-zero Read chunk of three segments (1 PHLOO 1 PHLOO 1 PHLOO 0, P = 0) and a Reply chunk",
		h: Header{XID: gxid, Vers: 1, Credits: 128, Proc: ProcNoMsg,
			ReadList: []ReadSegment{
				{Position: 0, Segment: gseg(0x00100001, 4096, 0x0000)},
				{Position: 0, Segment: gseg(0x00100002, 4096, 0x1000)},
				{Position: 0, Segment: gseg(0x00100003, 808, 0x2000)},
			},
			HasReplyChunk: true,
			ReplyChunk:    WriteChunk{gseg(0x00100004, 4096, 0x3000)},
		},
	},
	{
		name: "write_read_chunk", msgLen: 140,
		desc: "NFSv3 WRITE: RDMA_MSG with the data in one Read chunk of two segments at position 140, the end of the inline arguments",
		h: Header{XID: gxid, Vers: 1, Credits: 128, Proc: ProcMsg,
			ReadList: []ReadSegment{
				{Position: 140, Segment: gseg(0x00200001, 4096, 0x0000)},
				{Position: 140, Segment: gseg(0x00200002, 3001, 0x1000)},
			},
		},
	},
	{
		name: "multi_read_list", msgLen: 300,
		desc: "two Read chunks whose P values vary across the Read list (1 PHLOO 1 PHLOO 1 PHLOO 0)",
		h: Header{XID: gxid, Vers: 1, Credits: 128, Proc: ProcMsg,
			ReadList: []ReadSegment{
				{Position: 160, Segment: gseg(0x00300001, 8192, 0x0000)},
				{Position: 8452, Segment: gseg(0x00300002, 4096, 0x2000)},
				{Position: 8452, Segment: gseg(0x00300003, 4096, 0x3000)},
			},
		},
	},
	{
		name: "read_write_chunk", msgLen: 100,
		desc: "NFSv3 READ: RDMA_MSG with a Write list of one Write chunk with three elements (1 3 HLOO HLOO HLOO 0)",
		h: Header{XID: gxid, Vers: 1, Credits: 128, Proc: ProcMsg,
			WriteList: []WriteChunk{{
				gseg(0x00400001, 4096, 0x0000),
				gseg(0x00400002, 4096, 0x1000),
				gseg(0x00400003, 4096, 0x2000),
			}},
		},
	},
	{
		name: "multi_write_list", msgLen: 200,
		desc: "Write list of a Write chunk with three segments and one with two (1 3 HLOO HLOO HLOO 1 2 HLOO HLOO 0)",
		h: Header{XID: gxid, Vers: 1, Credits: 128, Proc: ProcMsg,
			WriteList: []WriteChunk{
				{gseg(0x00500001, 4096, 0x0000), gseg(0x00500002, 4096, 0x1000), gseg(0x00500003, 4096, 0x2000)},
				{gseg(0x00500004, 4096, 0x3000), gseg(0x00500005, 1024, 0x4000)},
			},
		},
	},
	{
		name: "reply_chunk", msgLen: 96,
		desc: "RDMA_MSG call offering a Reply chunk with two segments (1 2 HLOO HLOO)",
		h: Header{XID: gxid, Vers: 1, Credits: 128, Proc: ProcMsg,
			HasReplyChunk: true,
			ReplyChunk:    WriteChunk{gseg(0x00600001, 4096, 0x0000), gseg(0x00600002, 4096, 0x1000)},
		},
	},
	{
		name: "long_reply", reply: true,
		desc: "Long Reply: RDMA_NOMSG whose Reply chunk reports the bytes written into each segment",
		h: Header{XID: gxid, Vers: 1, Credits: 64, Proc: ProcNoMsg,
			HasReplyChunk: true,
			ReplyChunk:    WriteChunk{gseg(0x00600001, 4096, 0x0000), gseg(0x00600002, 1188, 0x1000)},
		},
	},
	{
		name: "read_reply", reply: true, msgLen: 112,
		desc: "reply to the READ call: the Write chunk echoed with the bytes written (8200), the rest of the reply inline",
		h: Header{XID: gxid, Vers: 1, Credits: 64, Proc: ProcMsg,
			WriteList: []WriteChunk{{
				gseg(0x00400001, 4096, 0x0000),
				gseg(0x00400002, 4096, 0x1000),
				gseg(0x00400003, 8, 0x2000),
			}},
		},
	},
	{
		name: "empty_reply_chunk", reply: true, msgLen: 64,
		desc: "RDMA_MSG reply with a present but empty Reply chunk (1 0)",
		h:    Header{XID: gxid, Vers: 1, Credits: 64, Proc: ProcMsg, HasReplyChunk: true},
	},
	{
		name: "err_vers", reply: true,
		desc: "RDMA_ERROR ERR_VERS, low = high = 1, as a responder sends for rdma_vers != 1",
		h:    Header{XID: gxid, Vers: 1, Credits: 64, Proc: ProcError, ErrCode: CodeVers, VersLow: 1, VersHigh: 1},
	},
	{
		name: "err_chunk", reply: true,
		desc: "RDMA_ERROR ERR_CHUNK",
		h:    Header{XID: gxid, Vers: 1, Credits: 64, Proc: ProcError, ErrCode: CodeChunk},
	},
}

// annotate encodes h word by word with a comment on each word. It is an
// encoder independent of Append, written from RFC 8166 §4.1.2, so that the
// golden files check Append rather than restate it.
func annotate(g *golden) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "# %s\n# %s. Generated by go test ./chunks -update; one XDR word per line.\n", g.name, g.desc)
	w := func(v uint32, format string, args ...any) {
		fmt.Fprintf(&sb, "%08x  # %s\n", v, fmt.Sprintf(format, args...))
	}
	segment := func(indent string, s Segment) {
		w(s.Handle, "%shandle", indent)
		w(s.Length, "%slength", indent)
		w(uint32(s.Offset>>32), "%soffset (high)", indent)
		w(uint32(s.Offset), "%soffset (low)", indent)
	}
	h := &g.h
	w(h.XID, "rdma_xid")
	w(h.Vers, "rdma_vers")
	w(h.Credits, "rdma_credit")
	w(uint32(h.Proc), "rdma_proc: %v", h.Proc)
	switch h.Proc {
	case ProcError:
		w(uint32(h.ErrCode), "rdma_err: %v", h.ErrCode)
		if h.ErrCode == CodeVers {
			w(h.VersLow, "rdma_vers_low")
			w(h.VersHigh, "rdma_vers_high")
		}
	case ProcMsg, ProcNoMsg:
		for _, rs := range h.ReadList {
			w(1, "Read list: a Read segment follows")
			w(rs.Position, "  position")
			segment("  ", rs.Segment)
		}
		w(0, "Read list: end")
		for _, wc := range h.WriteList {
			w(1, "Write list: a Write chunk follows")
			w(uint32(len(wc)), "  segment count")
			for _, s := range wc {
				segment("    ", s)
			}
		}
		w(0, "Write list: end")
		if h.HasReplyChunk || len(h.ReplyChunk) > 0 {
			w(1, "Reply chunk: present")
			w(uint32(len(h.ReplyChunk)), "  segment count")
			for _, s := range h.ReplyChunk {
				segment("    ", s)
			}
		} else {
			w(0, "Reply chunk: absent")
		}
	}
	return sb.String()
}

// readHex decodes a golden file: one hexadecimal word per line, '#' starts
// a comment.
func readHex(t *testing.T, text string) []byte {
	t.Helper()
	var ws []uint32
	for i, line := range strings.Split(text, "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		v, err := strconv.ParseUint(line, 16, 32)
		if err != nil || len(line) != 8 {
			t.Fatalf("line %d: %q is not an 8-digit hex word", i+1, line)
		}
		ws = append(ws, uint32(v))
	}
	return words(ws...)
}

func TestGolden(t *testing.T) {
	for i := range goldens {
		g := &goldens[i]
		t.Run(g.name, func(t *testing.T) {
			path := filepath.Join("testdata", g.name+".hex")
			if *update {
				if err := os.WriteFile(path, []byte(annotate(g)), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			text, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./chunks -update to create it)", err)
			}
			want := readHex(t, string(text))
			if got := g.h.Append(nil); !bytes.Equal(got, want) {
				t.Fatalf("Append:\n got %x\nwant %x", got, want)
			}
			if g.h.Len() != len(want) {
				t.Fatalf("Len = %d, golden has %d bytes", g.h.Len(), len(want))
			}
			in := want
			if g.h.Proc == ProcMsg {
				in = append(want[:len(want):len(want)], rpcMsg(g.h.XID, g.msgLen)...)
			}
			var h Header
			var n int
			if g.reply {
				n, err = h.ParseReply(in, nil)
			} else {
				n, err = h.ParseCall(in, nil)
			}
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if n != len(want) || !h.Equal(&g.h) {
				t.Fatalf("parsed %+v (hdrLen %d)\nwant %+v", h, n, g.h)
			}
		})
	}
}

// TestGoldenLayout checks a few golden files against the RFC 8166 §4.7
// word patterns directly, independently of both encoders.
func TestGoldenLayout(t *testing.T) {
	load := func(name string) []byte {
		text, err := os.ReadFile(filepath.Join("testdata", name+".hex"))
		if err != nil {
			t.Fatal(err)
		}
		return readHex(t, string(text))
	}
	fixed := []uint32{gxid, 1, 128}
	hloo := func(h, l uint32, o uint64) []uint32 { return seg(h, l, uint64(gxid)<<32|o) }
	for name, want := range map[string][]uint32{
		"inline_msg": cat(fixed, []uint32{0, 0, 0, 0}),
		"multi_write_list": cat(fixed, []uint32{0, 0, 1, 3},
			hloo(0x00500001, 4096, 0), hloo(0x00500002, 4096, 0x1000), hloo(0x00500003, 4096, 0x2000),
			[]uint32{1, 2}, hloo(0x00500004, 4096, 0x3000), hloo(0x00500005, 1024, 0x4000),
			[]uint32{0, 0}),
		"reply_chunk": cat(fixed, []uint32{0, 0, 0, 1, 2},
			hloo(0x00600001, 4096, 0), hloo(0x00600002, 4096, 0x1000)),
		"err_chunk": {gxid, 1, 64, 4, 2},
		"err_vers":  {gxid, 1, 64, 4, 1, 1, 1},
	} {
		if got := load(name); !bytes.Equal(got, words(want...)) {
			t.Errorf("%s:\n got %x\nwant %x", name, got, words(want...))
		}
	}
}
