package nfsdguest

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestParseReplyChunks runs on the host: the parser of the client's
// xprtrdma_chunk_reply events.
func TestParseReplyChunks(t *testing.T) {
	trace := `# tracer: nop
#
# entries-in-buffer/entries-written: 3/3   #P:2
#
     kworker/1:1-40  [001] .....  10.1: xprtrdma_chunk_reply: task:77@5 4096@0x0000000012340000:0x00000123 (more)
     kworker/1:1-40  [001] .....  10.2: xprtrdma_chunk_reply: task:77@5 2048@0x0000000012350000:0x00000124 (last)
     kworker/1:1-40  [001] .....  10.3: xprtrdma_chunk_reply: task:78@5 8192@0x0000000012360000:0x00000125 (last)
`
	r, err := parseReplyChunks(trace)
	if err != nil {
		t.Fatal(err)
	}
	if r.chunks != 2 || r.bytes != 14336 || len(r.sizes) != 2 || r.sizes[0] != 6144 || r.sizes[1] != 8192 {
		t.Fatalf("got %+v", r)
	}
	if _, err := parseReplyChunks("# entries-in-buffer/entries-written: 2/3   #P:2\n"); err == nil {
		t.Error("a trace that lost events parsed")
	}
	if _, err := parseReplyChunks("no header\n"); err == nil {
		t.Error("a trace without its header parsed")
	}
}

// replyChunks is what the client offered in Reply chunks during a run.
type replyChunks struct {
	chunks int      // Reply chunks (calls that offered one)
	bytes  uint64   // their registered bytes
	sizes  []uint64 // each chunk's bytes, in order
}

func (r replyChunks) String() string {
	return fmt.Sprintf("%d Reply chunks, %s registered", r.chunks, mib(r.bytes))
}

func mib(n uint64) string { return strconv.FormatFloat(float64(n)/(1<<20), 'f', 2, 64) + " MiB" }

var (
	chunkSegment = regexp.MustCompile(` xprtrdma_chunk_reply: task:\S+ (\d+)@0x[0-9a-f]+:0x[0-9a-f]+ \((more|last)\)`)
	traceEntries = regexp.MustCompile(`entries-in-buffer/entries-written: (\d+)/(\d+)`)
)

// parseReplyChunks sums the xprtrdma_chunk_reply events of a trace.
func parseReplyChunks(trace string) (replyChunks, error) {
	var r replyChunks
	if m := traceEntries.FindStringSubmatch(trace); m == nil {
		return r, fmt.Errorf("no entries-in-buffer line in the trace")
	} else if m[1] != m[2] {
		return r, fmt.Errorf("the trace buffer lost events: %s of %s kept", m[1], m[2])
	}
	var cur uint64
	for _, l := range strings.Split(trace, "\n") {
		m := chunkSegment.FindStringSubmatch(l)
		if m == nil {
			continue
		}
		n, err := strconv.ParseUint(m[1], 10, 32)
		if err != nil {
			return r, fmt.Errorf("%q: %w", l, err)
		}
		cur += n
		if m[2] == "last" {
			r.chunks++
			r.bytes += cur
			r.sizes = append(r.sizes, cur)
			cur = 0
		}
	}
	return r, nil
}
