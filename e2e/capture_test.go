package e2e

import (
	"bytes"
	"encoding/hex"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rpcrdma/rpcrdma/chunks"
	"github.com/go-rpcrdma/rpcrdma/e2e/capture"
	"github.com/go-rpcrdma/rpcrdma/e2e/vmtest"
	"github.com/go-rpcrdma/rpcrdma/internal/vm"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

var updateKernelGolden = flag.Bool("update-kernel-golden", false,
	"rewrite chunks/testdata/kernel/ and e2e/capture/testdata/ from the capture of TestKernelCapture "+
		"(also enabled by RPCRDMA_UPDATE_GOLDEN=1)")

// Where TestKernelCapture writes when updating, relative to the e2e package.
const (
	kernelGoldenDir = "../chunks/testdata/kernel"
	capturePCAPDir  = "capture/testdata"
	kcapClient      = "10.0.0.2"
	kcapServer      = "10.0.0.1"
)

// kcapPhase is one step of the guest script, captured into its own pcap
// file so that every message can be attributed to the operation that caused
// it.
type kcapPhase struct {
	name string // pcap file name and golden file name part
	op   string // what the step does, for the golden files
	cmd  string // bash command
	// issue marks the operations the issue asks for; their messages are
	// preferred for the golden files.
	issue bool
	keep  bool // commit its pcap under e2e/capture/testdata/ (small ones)
}

// kcapPhases are the operations of the issue: a mount, an ls, a 3-byte
// write, a 100 KiB write and a 100 KiB read, plus a 3000-byte write (an
// inline call in a multi-packet Send) and an 8 KiB write and read (a Read
// chunk and a Write chunk small enough to commit their capture).
var kcapPhases = []kcapPhase{
	{"mount", "mount -o vers=3,proto=rdma,port=20049 (rxevm-nfs-mount)",
		"rxevm-nfs-mount -t rdma /mnt/rdma", true, true},
	{"ls", "ls -l of the export (a directory, a file)",
		"ls -l /mnt/rdma", true, true},
	{"write-3B", "write a 3-byte file (printf abc), then sync",
		"printf abc > /mnt/rdma/f3 && sync", true, false},
	{"write-3000B", "write a 3000-byte file, then sync",
		"head -c 3000 /tmp/pattern > /mnt/rdma/f3000 && sync", false, true},
	{"write-8KiB", "write an 8 KiB file, then sync",
		"head -c 8192 /tmp/pattern > /mnt/rdma/f8k && sync", false, true},
	{"read-8KiB", "drop caches, read the 8 KiB file",
		"echo 3 > /proc/sys/vm/drop_caches && cmp /mnt/rdma/f8k /tmp/pattern8k", false, true},
	{"write-100KiB", "write a 100 KiB file (dd bs=100k count=1), then sync",
		"dd if=/tmp/pattern of=/mnt/rdma/f100k bs=100k count=1 2> /dev/null && sync", true, false},
	{"read-100KiB", "unmount, drop caches, mount again, read the 100 KiB file, unmount",
		"umount /mnt/rdma && echo 3 > /proc/sys/vm/drop_caches && rxevm-nfs-mount -t rdma /mnt/rdma && " +
			"cmp /mnt/rdma/f100k /tmp/pattern && umount /mnt/rdma", true, false},
}

// kcapScript builds the guest script: start knfsd, then run each phase
// under its own tcpdump. The captures are written to the guest's tmpfs and
// copied to the share afterwards: writing them to the 9p share directly
// makes tcpdump drop packets under TCG. Each phase prints
// "KCAP phase NAME status RC N packets dropped by kernel".
func kcapScript() string {
	var b strings.Builder
	b.WriteString(`set -u
rxevm-nfsd-start || { echo "KCAP setup failed"; exit 1; }
mkdir -p /export/subdir /mnt/rdma && echo hello > /export/hello.txt
seq 1 30000 | head -c 102400 > /tmp/pattern
head -c 8192 /tmp/pattern > /tmp/pattern8k
echo "KCAP kernel $(uname -r)"
phase() { # phase NAME COMMAND
	local name=$1 cmd=$2 tpid rc
	tcpdump -Z root -i veth0 -n --immediate-mode -U -B 32768 -w "/tmp/$name.pcap" udp port 4791 2> "/tmp/$name.err" &
	tpid=$!
	for _ in $(seq 100); do grep -q 'listening on' "/tmp/$name.err" && break; sleep 0.1; done
	bash -c "$cmd"
	rc=$?
	sleep 0.3 # the last ACKs
	kill -INT $tpid
	wait $tpid
	echo "KCAP phase $name status $rc $(grep -o '[0-9]* packets dropped by kernel' "/tmp/$name.err")"
	cp "/tmp/$name.pcap" /host/
}
`)
	for _, p := range kcapPhases {
		fmt.Fprintf(&b, "phase %s %s\n", p.name, shellSingleQuote(p.cmd))
		if p.name == "mount" {
			b.WriteString(`grep ' /mnt/rdma ' /proc/mounts | sed 's/^/KCAP mount /'` + "\n")
		}
	}
	return b.String()
}

func shellSingleQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// kcapPattern returns the first n bytes of the guest's /tmp/pattern, the
// output of "seq 1 30000".
func kcapPattern(n int) []byte {
	var b []byte
	for i := 1; len(b) < n; i++ {
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, '\n')
	}
	return b[:n]
}

var kcapPhaseLine = regexp.MustCompile(`^KCAP phase (\S+) status (\d+) (\d+) packets dropped by kernel$`)

// kcapRun is one phase's capture, analyzed.
type kcapRun struct {
	phase kcapPhase
	cap   *capture.Capture
	rpcs  []*capture.RPC
	xfers []capture.Transfer
}

// TestKernelCapture boots the VM once, has the Linux NFS client talk to
// knfsd over RDMA (mount, ls, small and large writes and reads) while
// tcpdump captures the RoCEv2 traffic on veth0, and checks on the host that
// package capture reads every packet, that package chunks accepts every
// transport header the kernel sent (ParseCall for calls, ParseReply for
// replies) and re-encodes it byte for byte, and that the traffic has the
// shapes the golden files are meant to cover: Read chunks (WRITE data),
// Write chunks (READ data), a Reply chunk, multi-packet Sends, remote
// invalidation. With -update-kernel-golden (or RPCRDMA_UPDATE_GOLDEN=1) it
// rewrites chunks/testdata/kernel/ and the small captures under
// e2e/capture/testdata/.
func TestKernelCapture(t *testing.T) {
	update := *updateKernelGolden || os.Getenv("RPCRDMA_UPDATE_GOLDEN") == "1"
	vmtest.Require(t)
	share := vmtest.ShareDir(t)
	r := vmtest.Run(t, vm.Options{Share: share, Timeout: 10 * time.Minute}, kcapScript())

	kernel := "?"
	status := map[string]string{}
	for _, l := range r.Lines() {
		switch {
		case strings.HasPrefix(l, "KCAP kernel "):
			kernel = strings.TrimPrefix(l, "KCAP kernel ")
		case strings.HasPrefix(l, "KCAP "):
			t.Log("guest:", l)
			if m := kcapPhaseLine.FindStringSubmatch(l); m != nil {
				status[m[1]] = m[2] + "/" + m[3]
			}
		}
	}
	if r.Status != 0 {
		t.Fatalf("guest script exited with status %d", r.Status)
	}
	t.Logf("guest kernel %s", kernel)

	var runs []*kcapRun
	for _, p := range kcapPhases {
		if got := status[p.name]; got != "0/0" {
			t.Errorf("phase %s: status/dropped = %q, want 0/0 (command succeeded, tcpdump dropped nothing)", p.name, got)
			continue
		}
		frames, err := vmtest.ReadPCAP(filepath.Join(share, p.name+".pcap"))
		if err != nil {
			t.Errorf("phase %s: %v", p.name, err)
			continue
		}
		data := make([][]byte, len(frames))
		for i, f := range frames {
			data[i] = f.Data
		}
		c := capture.Analyze(data)
		run := &kcapRun{phase: p, cap: c, rpcs: capture.FindRPCs(c.Messages), xfers: capture.Transfers(c.Messages)}
		runs = append(runs, run)
		t.Logf("phase %s: %d frames, %d messages, %d RPC-over-RDMA messages; %+v",
			p.name, len(frames), len(c.Messages), len(run.rpcs), c.Stats)
		kcapCheckCapture(t, run)
		for _, rpc := range run.rpcs {
			kcapCheckChunks(t, p.name, rpc)
		}
	}
	if t.Failed() {
		return
	}
	byName := map[string]*kcapRun{}
	for _, run := range runs {
		byName[run.phase.name] = run
	}
	t.Run("cm_private_data", func(t *testing.T) { kcapCheckCM(t, byName["mount"]) })
	t.Run("reply_chunk", func(t *testing.T) { kcapCheckReplyChunk(t, byName["ls"]) })
	t.Run("inline_write", func(t *testing.T) {
		kcapCheckInlineWrite(t, byName["write-3B"], []byte("abc"), false)
		kcapCheckInlineWrite(t, byName["write-3000B"], kcapPattern(3000), true)
	})
	t.Run("read_chunk", func(t *testing.T) {
		kcapCheckReadChunk(t, byName["write-8KiB"], 8192)
		kcapCheckReadChunk(t, byName["write-100KiB"], 102400)
	})
	t.Run("write_chunk", func(t *testing.T) {
		kcapCheckWriteChunk(t, byName["read-8KiB"], 8192)
		kcapCheckWriteChunk(t, byName["read-100KiB"], 102400)
	})
	t.Run("remote_invalidation", func(t *testing.T) { kcapCheckInvalidation(t, runs) })

	goldens := kcapSelectGoldens(runs)
	t.Logf("%d golden messages selected", len(goldens))
	if len(goldens) < 15 {
		t.Errorf("only %d golden messages selected, want at least 15", len(goldens))
	}
	if update && !t.Failed() {
		kcapWriteGoldens(t, goldens, kernel)
		for _, p := range kcapPhases {
			if p.keep {
				kcapCopyFile(t, filepath.Join(share, p.name+".pcap"), filepath.Join(capturePCAPDir, "kernel-"+p.name+".pcap"))
			}
		}
	}
}

// kcapCheckCapture checks that every frame was a well-formed RoCEv2 packet
// with a good ICRC, and that every Send, Write and Read completed.
func kcapCheckCapture(t *testing.T, run *kcapRun) {
	t.Helper()
	c, name := run.cap, run.phase.name
	if c.Malformed != 0 {
		t.Errorf("phase %s: %d frames not decoded; first: %v", name, c.Malformed, c.Err)
	}
	st := c.Stats
	if st.BadICRC != 0 || st.OutOfSequence != 0 || st.Orphans != 0 || st.Abandoned != 0 || st.Oversize != 0 || c.Incomplete != 0 {
		t.Errorf("phase %s: packets that did not reassemble: %+v, %d incomplete", name, st, c.Incomplete)
	}
	if len(run.rpcs) == 0 {
		t.Errorf("phase %s: no RPC-over-RDMA message captured", name)
	}
	replied := map[uint32]bool{}
	for _, r := range run.rpcs {
		if r.Err != nil {
			t.Errorf("phase %s: Send %v -> %v is not RPC-over-RDMA: %v\n%s", name, r.Send.Src, r.Send.Dst, r.Err, hex.Dump(r.Send.Payload))
			continue
		}
		if !r.IsCall && r.Call != nil {
			replied[r.Header.XID] = true
		}
		if r.IsCall != (r.Send.Src == netip.MustParseAddr(kcapClient)) {
			t.Errorf("phase %s: xid %#08x: %s sent by %v", name, r.Header.XID, r.Name(), r.Send.Src)
		}
	}
	for _, r := range run.rpcs {
		if r.Err == nil && r.IsCall && !replied[r.Header.XID] {
			t.Errorf("phase %s: %s (xid %#08x) has no reply in the capture", name, r.Name(), r.Header.XID)
		}
	}
}

// kcapCheckChunks parses the message with package chunks as its receiver
// would (ParseCall at the server, ParseReply at the client) and checks that
// it finds the header the independent walker found and that Append
// re-encodes it byte for byte. A rejection is a bug in chunks: the kernel is
// the reference.
func kcapCheckChunks(t *testing.T, phase string, r *capture.RPC) {
	t.Helper()
	if r.Err != nil {
		return
	}
	b := r.Send.Payload
	var h chunks.Header
	n, err := h.Unmarshal(b, nil)
	if err == nil {
		if r.IsCall {
			n, err = h.ParseCall(b, nil)
		} else {
			n, err = h.ParseReply(b, nil)
		}
	}
	if err != nil {
		t.Errorf("phase %s: chunks rejects the kernel's %s (xid %#08x): %v\nSend payload (%d bytes):\n%s",
			phase, r.Name(), r.Header.XID, err, len(b), hex.Dump(b[:min(len(b), 256)]))
		return
	}
	if n != r.Header.Len {
		t.Errorf("phase %s: %s: chunks header length %d, the walk found %d", phase, r.Name(), n, r.Header.Len)
	}
	if enc := h.Append(nil); !bytes.Equal(enc, b[:r.Header.Len]) {
		t.Errorf("phase %s: %s: Append does not reproduce the kernel's header:\n got %x\nwant %x", phase, r.Name(), enc, b[:r.Header.Len])
	}
}

// kcapCheckCM finds the RPC-over-RDMA private data (RFC 8797) in the CM
// REQ of the client and the REP of the server.
func kcapCheckCM(t *testing.T, run *kcapRun) {
	seen := map[capture.CMAttr][]byte{}
	for _, m := range run.cap.Messages {
		if m.Kind != capture.KindSend || m.DestQP != 1 {
			continue
		}
		cm, ok := capture.ParseCM(m.Payload)
		if !ok {
			continue
		}
		pd, _ := capture.RPCRDMAPrivateData(cm.PrivateData)
		t.Logf("CM %v %v -> %v, RFC 8797 private data %x", cm.Attr, m.Src, m.Dst, pd)
		seen[cm.Attr] = pd
	}
	for _, a := range []capture.CMAttr{capture.CMREQ, capture.CMREP} {
		if pd := seen[a]; len(pd) != 8 || pd[4] != 1 {
			t.Errorf("CM %v: RFC 8797 private data %x, want 8 bytes, version 1", a, pd)
		}
	}
}

// kcapCheckReplyChunk checks the READDIRPLUS of ls: the client offers a
// Reply chunk, the server answers RDMA_NOMSG and writes the RPC reply into
// the chunk (RFC 8166 §3.5.3, Long Reply).
func kcapCheckReplyChunk(t *testing.T, run *kcapRun) {
	found := false
	for _, r := range run.rpcs {
		if r.IsCall || r.Call == nil || r.Name() != "NFSv3 READDIRPLUS reply" {
			continue
		}
		found = true
		if !r.Call.Header.HasReplyChunk || r.Header.Proc != capture.RDMANoMsg || !r.Header.HasReplyChunk {
			t.Errorf("READDIRPLUS: call offers a Reply chunk %v, reply is %s with a Reply chunk %v; want a Long Reply",
				r.Call.Header.HasReplyChunk, capture.RDMAProcName(r.Header.Proc), r.Header.HasReplyChunk)
			continue
		}
		msg, err := capture.ChunkData(run.xfers, capture.KindWrite, r.Send.Src, r.Send.Dst, r.Header.ReplyChunk)
		if err != nil {
			t.Errorf("READDIRPLUS reply: %v", err)
			continue
		}
		var rh xdr.ReplyHeader
		if _, err := rh.Unmarshal(msg); err != nil || rh.XID != r.Header.XID || rh.AcceptStat != xdr.AcceptSuccess {
			t.Errorf("READDIRPLUS reply chunk holds %d bytes that are not the RPC reply (xid %#08x, %+v, %v)", len(msg), r.Header.XID, rh, err)
		}
		if !bytes.Contains(msg, []byte("hello.txt")) || !bytes.Contains(msg, []byte("subdir")) {
			t.Errorf("READDIRPLUS reply does not list hello.txt and subdir")
		}
		t.Logf("READDIRPLUS Long Reply: %d bytes through a Reply chunk of %d segments", len(msg), len(r.Header.ReplyChunk))
	}
	if !found {
		t.Error("no READDIRPLUS reply captured during ls")
	}
}

// kcapCheckInlineWrite checks a WRITE small enough to go inline (RFC 8166
// §3.5.1): no chunks, the data in the RPC message, and for the 3000-byte one
// a Send of several packets.
func kcapCheckInlineWrite(t *testing.T, run *kcapRun, data []byte, multiPacket bool) {
	for _, r := range run.rpcs {
		if r.Name() != "NFSv3 WRITE call" {
			continue
		}
		if h := r.Header; h.Proc != capture.RDMAMsg || len(h.ReadList) != 0 || len(h.WriteList) != 0 || h.HasReplyChunk {
			t.Errorf("%s: %d-byte WRITE: %s, want RDMA_MSG without chunks", run.phase.name, len(data), h.Shape())
		}
		if !bytes.Contains(r.Inline, data) {
			t.Errorf("%s: the inline WRITE call does not hold the %d bytes written", run.phase.name, len(data))
		}
		if multiPacket && r.Send.Packets < 2 {
			t.Errorf("%s: WRITE call of %d bytes in %d packet(s), want several", run.phase.name, len(r.Send.Payload), r.Send.Packets)
		}
		return
	}
	t.Errorf("%s: no WRITE call", run.phase.name)
}

// kcapCheckReadChunk checks a WRITE whose data goes in a Read chunk (RFC
// 8166 §3.5.4, RFC 8267 §4.2: WRITE data is DDP-eligible): the chunk sits
// at the position of the data in the XDR stream, the server pulls it with
// RDMA Reads, and what it pulls is the file's content.
func kcapCheckReadChunk(t *testing.T, run *kcapRun, size int) {
	var total int
	var got []byte
	for _, r := range run.rpcs {
		if r.Name() != "NFSv3 WRITE call" {
			continue
		}
		h := r.Header
		if len(h.ReadList) == 0 {
			t.Errorf("%s: WRITE call without a Read chunk: %s", run.phase.name, h.Shape())
			continue
		}
		seg := make([]capture.Segment, len(h.ReadList))
		for i, rs := range h.ReadList {
			seg[i] = rs.Segment
			if rs.Position == 0 || rs.Position != h.ReadList[0].Position {
				t.Errorf("%s: WRITE Read segment %d at position %d; want one chunk after the arguments", run.phase.name, i, rs.Position)
			}
		}
		if int(h.ReadList[0].Position) > len(r.Inline) {
			t.Errorf("%s: Read chunk position %d beyond the %d-byte inline call", run.phase.name, h.ReadList[0].Position, len(r.Inline))
		}
		data, err := capture.ChunkData(run.xfers, capture.KindReadRequest, r.Send.Dst, r.Send.Src, seg)
		if err != nil {
			t.Errorf("%s: %v", run.phase.name, err)
		}
		total += int(capture.Length(seg))
		got = append(got, data...)
		t.Logf("%s: WRITE call: Read chunk of %d segment(s), %d bytes at position %d; %d bytes inline",
			run.phase.name, len(seg), capture.Length(seg), h.ReadList[0].Position, len(r.Inline))
	}
	if total != size {
		t.Errorf("%s: Read chunks carry %d bytes, want %d", run.phase.name, total, size)
	}
	if !bytes.Equal(got, kcapPattern(size)) {
		t.Errorf("%s: the RDMA Reads of the server fetched %d bytes that are not the file", run.phase.name, len(got))
	}
}

// kcapCheckWriteChunk checks READs whose data comes back through a Write
// chunk (RFC 8166 §3.5.2, RFC 8267 §4.1): the reply reports the bytes
// written, and the RDMA Writes of the server put the file's content there.
func kcapCheckWriteChunk(t *testing.T, run *kcapRun, size int) {
	file := kcapPattern(size)
	total := 0
	for _, r := range run.rpcs {
		if r.IsCall || r.Name() != "NFSv3 READ reply" {
			continue
		}
		offset, err := kcapReadOffset(r.Call.Inline)
		if err != nil {
			t.Errorf("%s: READ call: %v", run.phase.name, err)
			continue
		}
		if len(r.Call.Header.WriteList) != 1 || len(r.Header.WriteList) != 1 {
			t.Errorf("%s: READ at %d: call %s, reply %s; want one Write chunk each", run.phase.name, offset, r.Call.Header.Shape(), r.Header.Shape())
			continue
		}
		wc := r.Header.WriteList[0]
		data, err := capture.ChunkData(run.xfers, capture.KindWrite, r.Send.Src, r.Send.Dst, wc)
		if err != nil {
			t.Errorf("%s: READ at %d: %v", run.phase.name, offset, err)
			continue
		}
		if end := offset + uint64(len(data)); end > uint64(len(file)) || !bytes.Equal(data, file[offset:end]) {
			t.Errorf("%s: READ at %d: the %d bytes written to the Write chunk are not the file's", run.phase.name, offset, len(data))
		}
		total += len(data)
		t.Logf("%s: READ at %d: Write chunk of %d segment(s) offered for %d bytes, %d written",
			run.phase.name, offset, len(wc), capture.Length(r.Call.Header.WriteList[0]), len(data))
	}
	if total != size {
		t.Errorf("%s: READ replies carry %d bytes through Write chunks, want %d", run.phase.name, total, size)
	}
}

// kcapReadOffset returns the offset argument of an NFSv3 READ call (RFC 1813
// §3.3.6: file handle, offset, count).
func kcapReadOffset(call []byte) (uint64, error) {
	var ch xdr.CallHeader
	off, err := ch.Unmarshal(call)
	if err != nil {
		return 0, err
	}
	rd := xdr.NewReader(call[off:])
	if _, err := rd.Opaque(64); err != nil {
		return 0, err
	}
	return rd.Uint64()
}

// kcapCheckInvalidation checks that each Send With Invalidate of the server
// invalidates a handle of the call it answers (RFC 8797 §3.2: the responder
// may invalidate the requester's memory registration), and that knfsd used
// it for the WRITE and READ replies, whose calls carry a single handle.
func kcapCheckInvalidation(t *testing.T, runs []*kcapRun) {
	n := 0
	for _, run := range runs {
		for _, r := range run.rpcs {
			if r.IsCall || r.Call == nil {
				continue
			}
			handles := r.Call.Header.Handles()
			if r.Send.Ext&capture.ExtIETH != 0 {
				n++
				if len(handles) != 1 || handles[0] != r.Send.InvalidateRKey {
					t.Errorf("%s: %s invalidates %#x, the call's handles are %x", run.phase.name, r.Name(), r.Send.InvalidateRKey, handles)
				}
			} else if len(handles) == 1 {
				t.Logf("%s: %s without remote invalidation although the call has one handle", run.phase.name, r.Name())
			}
		}
	}
	if n == 0 {
		t.Error("no Send With Invalidate from knfsd")
	}
}

// kcapGolden is a message picked for chunks/testdata/kernel/.
type kcapGolden struct {
	file string
	g    capture.Golden
}

// kcapSelectGoldens picks a representative set of messages: the first call
// of each kind (procedure, chunk shape, Send opcode) together with its
// reply, and a call and reply pair whenever the reply is of a new kind. The
// issue's operations come first, so that the 100 KiB WRITE and READ are
// chosen over the 8 KiB ones of the same shape.
func kcapSelectGoldens(runs []*kcapRun) []kcapGolden {
	kind := func(r *capture.RPC) string {
		return r.Name() + "|" + r.Header.Shape() + "|" + r.Send.Opcode.String()
	}
	seen := map[string]bool{}
	var out []kcapGolden
	add := func(run *kcapRun, r *capture.RPC) {
		seen[kind(r)] = true
		dir := "reply"
		if r.IsCall {
			dir = "call"
		}
		slug := strings.ToLower(strings.ReplaceAll(r.Name(), " ", "-"))
		slug = strings.TrimSuffix(slug, "-"+dir)
		out = append(out, kcapGolden{
			file: fmt.Sprintf("%02d-%s-%s-%s.hex", len(out)+1, strings.ToLower(run.phase.name), slug, dir),
			g:    capture.Golden{RPC: r, Operation: run.phase.op},
		})
	}
	for _, issue := range []bool{true, false} {
		for _, run := range runs {
			if run.phase.issue != issue {
				continue
			}
			for _, r := range run.rpcs {
				if r.Err != nil || !r.IsCall || r.Reply == nil {
					continue
				}
				if !seen[kind(r)] || !seen[kind(r.Reply)] {
					add(run, r)
					add(run, r.Reply)
				}
			}
		}
	}
	return out
}

// kcapReadme is written to chunks/testdata/kernel/README.md with the golden
// files; %s is the guest kernel's release.
const kcapReadme = `# Transport headers sent by Linux

Each *.hex file is one RPC-over-RDMA message that the Linux %s NFS client
(xprtrdma, 10.0.0.2) and knfsd (svcrdma, 10.0.0.1) sent each other over
Soft-RoCE in the VM of e2e/, captured with tcpdump on veth0 by
TestKernelCapture (e2e/capture_test.go) during a mount, an ls -l, writes of
3 bytes, 3000 bytes, 8 KiB and 100 KiB, and reads of 8 KiB and 100 KiB. The
first call of each kind (procedure, chunk shape, Send opcode) is kept, with
its reply. chunks.TestKernelGolden parses each as its receiver would and
re-encodes it byte for byte.

Format ('#' starts a comment):

    direction call|reply      call: client to server
    send OPCODE [invalidate R_KEY]   the Send that carried it (IBA opcode name)
    length N                  bytes of the Send: transport header + inline RPC message
    shape PROC reads=C/S writes=C/S reply=none|S   chunks and segments, as an
                              independent walker (e2e/capture) read them
    header                    then the transport header, one XDR word per line
    rpc                       then the first bytes of the inline RPC message

Refresh (XIDs, handles and offsets change on every run):

    RPCRDMA_VM=1 RPCRDMA_UPDATE_GOLDEN=1 go test ./e2e -run KernelCapture
`

// kcapWriteGoldens replaces the golden files.
func kcapWriteGoldens(t *testing.T, goldens []kcapGolden, kernel string) {
	old, _ := filepath.Glob(filepath.Join(kernelGoldenDir, "*.hex"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(kernelGoldenDir, 0o755); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, g := range goldens {
		b, err := g.g.Format()
		if err != nil {
			t.Fatalf("%s: %v", g.file, err)
		}
		if err := os.WriteFile(filepath.Join(kernelGoldenDir, g.file), b, 0o644); err != nil {
			t.Fatal(err)
		}
		total += len(b)
	}
	readme := fmt.Sprintf(kcapReadme, kernel)
	if err := os.WriteFile(filepath.Join(kernelGoldenDir, "README.md"), []byte(readme), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %d golden files (%d bytes) to %s", len(goldens), total, kernelGoldenDir)
}

func kcapCopyFile(t *testing.T, from, to string) {
	b, err := os.ReadFile(from)
	if err == nil {
		err = os.MkdirAll(filepath.Dir(to), 0o755)
	}
	if err == nil {
		err = os.WriteFile(to, b, 0o644)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s (%d bytes)", to, len(b))
}
