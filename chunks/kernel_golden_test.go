package chunks

import (
	"bytes"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// kernelGoldenGlob matches the transport headers the Linux kernel put on
// the wire, captured by e2e.TestKernelCapture (testdata/kernel/README.md
// says how to refresh them).
const kernelGoldenGlob = "testdata/kernel/*.hex"

// kernelGolden is one message of testdata/kernel: see capture.Golden.Format
// in e2e/capture for the format.
type kernelGolden struct {
	call   bool   // "direction call" (client to server) or "direction reply"
	send   string // "send" line: the Send opcode, maybe "invalidate RKEY"
	length int    // bytes of the received Send: header and inline RPC message
	shape  string // "shape" line, written by an independent header walker
	header []byte // the transport header, whole
	rpc    []byte // the first bytes of the inline RPC message
}

// parseKernelGolden reads a golden file; '#' starts a comment.
func parseKernelGolden(text string) (*kernelGolden, error) {
	g := &kernelGolden{length: -1}
	section := ""
	for i, line := range strings.Split(text, "\n") {
		if j := strings.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		bad := func(what string) error { return fmt.Errorf("line %d: %s: %q", i+1, what, line) }
		switch f[0] {
		case "direction":
			if len(f) != 2 || (f[1] != "call" && f[1] != "reply") {
				return nil, bad("want direction call|reply")
			}
			g.call = f[1] == "call"
			continue
		case "send":
			g.send = strings.Join(f[1:], " ")
			continue
		case "length":
			n, err := strconv.Atoi(strings.Join(f[1:], ""))
			if err != nil || n < 0 {
				return nil, bad("bad length")
			}
			g.length = n
			continue
		case "shape":
			g.shape = strings.Join(f[1:], " ")
			continue
		case "header", "rpc":
			if len(f) != 1 {
				return nil, bad("section name alone on its line")
			}
			section = f[0]
			continue
		}
		for _, w := range f {
			b, err := hex.DecodeString(w)
			switch {
			case err != nil:
				return nil, bad("not hexadecimal")
			case section == "header" && len(b) == 4:
				g.header = append(g.header, b...)
			case section == "rpc" && len(b) <= 4:
				g.rpc = append(g.rpc, b...)
			default:
				return nil, bad("unexpected data in section " + strconv.Quote(section))
			}
		}
	}
	switch {
	case g.length < 0 || g.send == "" || g.shape == "" || len(g.header) == 0:
		return nil, fmt.Errorf("missing direction, send, length, shape or header")
	case g.length < len(g.header)+len(g.rpc):
		return nil, fmt.Errorf("length %d, but %d header and %d RPC bytes", g.length, len(g.header), len(g.rpc))
	}
	return g, nil
}

// message rebuilds the received Send: the header, the start of the inline
// RPC message, and zeros up to the original length, so that the checks that
// depend on the message's length and XID see what the receiver saw.
func (g *kernelGolden) message() []byte {
	b := append(bytes.Clone(g.header), g.rpc...)
	return append(b, make([]byte, g.length-len(b))...)
}

// kernelShape formats h like the "shape" line (capture.TransportHeader.Shape).
func kernelShape(h *Header) string {
	reply := "none"
	if h.HasReplyChunk {
		reply = strconv.Itoa(len(h.ReplyChunk))
	}
	c := h.Counts()
	return fmt.Sprintf("%v reads=%d/%d writes=%d/%d reply=%s",
		h.Proc, h.NumReadChunks(), c.ReadSegments, c.WriteChunks, c.WriteSegments, reply)
}

// TestKernelGolden parses every transport header of testdata/kernel, which
// the Linux NFS client and knfsd sent each other over RDMA, as its receiver
// would (ParseCall for calls, ParseReply for replies), and checks that
// Append re-encodes it byte for byte. The kernel is the reference: a header
// it sends that this package rejects is a bug here.
func TestKernelGolden(t *testing.T) {
	files, err := filepath.Glob(kernelGoldenGlob)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no golden files match %s: run RPCRDMA_VM=1 RPCRDMA_UPDATE_GOLDEN=1 go test ./e2e -run KernelCapture", kernelGoldenGlob)
	}
	seen := map[string]int{}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			text, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			g, err := parseKernelGolden(string(text))
			if err != nil {
				t.Fatal(err)
			}
			msg := g.message()

			var h Header
			n, err := h.Unmarshal(msg, nil)
			if err != nil {
				t.Fatalf("Unmarshal: %v\nheader %x", err, g.header)
			}
			if n != len(g.header) {
				t.Fatalf("Unmarshal: header length %d, the file's header has %d bytes", n, len(g.header))
			}
			if got := kernelShape(&h); got != g.shape {
				t.Errorf("shape %q, the file says %q", got, g.shape)
			}
			if enc := h.Append(nil); !bytes.Equal(enc, g.header) {
				t.Errorf("Append:\n got %x\nwant %x", enc, g.header)
			}
			if h.Len() != len(g.header) {
				t.Errorf("Len = %d, want %d", h.Len(), len(g.header))
			}

			var v Header
			if g.call {
				n, err = v.ParseCall(msg, nil)
			} else {
				n, err = v.ParseReply(msg, nil)
			}
			if err != nil {
				t.Fatalf("parse as a %s: %v\nheader %x", map[bool]string{true: "call", false: "reply"}[g.call], err, g.header)
			}
			if n != len(g.header) || !v.Equal(&h) {
				t.Errorf("Parse found %+v (%d bytes), Unmarshal %+v", v, n, h)
			}

			// Every truncation of the header fails cleanly.
			for i := range len(g.header) {
				var x Header
				if _, err := x.Unmarshal(g.header[:i], nil); err == nil {
					t.Errorf("Unmarshal of the first %d of %d bytes succeeded", i, len(g.header))
				}
			}

			dir := "reply"
			if g.call {
				dir = "call"
			}
			seen[dir]++
			switch {
			case len(h.ReadList) > 0:
				seen["Read chunk"]++
			case len(h.WriteList) > 0 && g.call:
				seen["Write chunk offered"]++
			case len(h.WriteList) > 0:
				seen["Write chunk used"]++
			case h.HasReplyChunk && g.call:
				seen["Reply chunk offered"]++
			case h.Proc == ProcNoMsg:
				seen["Long Reply"]++
			default:
				seen["no chunks"]++
			}
			if strings.Contains(g.send, "invalidate") {
				seen["Send With Invalidate"]++
			}
		})
	}
	// The set must stay representative of what Linux sends.
	for _, k := range []string{"call", "reply", "no chunks", "Read chunk", "Write chunk offered",
		"Write chunk used", "Reply chunk offered", "Long Reply", "Send With Invalidate"} {
		if seen[k] == 0 {
			t.Errorf("no golden message with %s in %s", k, kernelGoldenGlob)
		}
	}
}

// TestParseKernelGolden checks that the golden file reader refuses what is
// not a complete golden file, so that a damaged file fails TestKernelGolden
// instead of passing with less checked.
func TestParseKernelGolden(t *testing.T) {
	good := "direction call\nsend SEND_ONLY\nlength 32\nshape RDMA_MSG reads=0/0 writes=0/0 reply=none\n" +
		"header\n00000001\n00000001\n00000080\n00000000\n00000000\n00000000\n00000000  # comment\nrpc\n00000001\n"
	g, err := parseKernelGolden(good)
	if err != nil {
		t.Fatal(err)
	}
	if !g.call || g.length != 32 || len(g.header) != 28 || !bytes.Equal(g.rpc, []byte{0, 0, 0, 1}) || len(g.message()) != 32 {
		t.Fatalf("parsed %+v", g)
	}
	for name, text := range map[string]string{
		"no header":          good[:strings.Index(good, "header\n")] + "rpc\n00000001\n",
		"short word":         strings.Replace(good, "00000080", "0080", 1),
		"not hex":            strings.Replace(good, "00000080", "0000008g", 1),
		"length too small":   strings.Replace(good, "length 32", "length 31", 1),
		"bad direction":      strings.Replace(good, "direction call", "direction up", 1),
		"no shape":           strings.Replace(good, "shape RDMA_MSG reads=0/0 writes=0/0 reply=none\n", "", 1),
		"data before header": "00000001\n" + good,
		"long rpc group":     strings.Replace(good, "rpc\n00000001", "rpc\n0000000100", 1),
	} {
		if _, err := parseKernelGolden(text); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
