package rpcrdma2

import (
	"bufio"
	"bytes"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// readHexWords reads a golden file of testdata: one message per line of
// hex, '#' starting a comment.
func readHexWords(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][]byte
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		line = strings.Join(strings.Fields(line), "")
		if line == "" {
			continue
		}
		b, err := hex.DecodeString(line)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		out = append(out, b)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// knfsd's answers to version 2 messages (testdata/knfsd-v2-answers.hex,
// captured by e2e.TestKnfsd): version 1's ERR_VERS with the refused
// message's rdma_vers echoed, which only VersionOneErrVers reads.
func TestKnfsdAnswersToVersion2(t *testing.T) {
	answers := readHexWords(t, "testdata/knfsd-v2-answers.hex")
	if len(answers) != 2 {
		t.Fatalf("%d answers in the golden file, want 2 (the CONNPROP's and the MSG's)", len(answers))
	}
	for i, a := range answers {
		xid, vers, ok := VersionOneErrVers(a)
		if !ok || vers != (VersRange{Low: 1, High: 1}) || xid != knfsdProbeXID+uint32(i) {
			t.Errorf("answer %d (%x): VersionOneErrVers %#x, %+v, %v", i, a, xid, vers, ok)
		}
		var h Header
		if _, err := h.Unmarshal(a, nil); err == nil {
			t.Errorf("answer %d parses as version 2: %+v", i, h)
		}
		var h1 chunks.Header
		if _, err := h1.Unmarshal(a, nil); err != chunks.ErrVersion {
			t.Errorf("answer %d: chunks.Unmarshal %v, want ErrVersion", i, err)
		}
	}
}

// knfsdProbeXID is the rdma_xid of the first version 2 message e2e's
// TestKnfsdVersionTwo sends knfsd (the second's is one more).
const knfsdProbeXID = 0x76320001

func TestVersionOneErrVers(t *testing.T) {
	ours := chunks.AppendErrVers(nil, 9, 32) // our version 1 responder's
	if xid, v, ok := VersionOneErrVers(ours); !ok || xid != 9 || v != (VersRange{1, 1}) {
		t.Fatalf("our ERR_VERS: %d %+v %v", xid, v, ok)
	}
	for _, b := range [][]byte{
		AppendErrVers(nil, 9, 32, 1, 2),       // version 2's: a word longer
		chunks.AppendErrChunk(nil, 9, 32),     // ERR_CHUNK
		ours[:len(ours)-4],                    // truncated
		append(bytes.Clone(ours), 0, 0, 0, 0), // too long
		words(9, 1, 32, 4, 1, 3, 2),           // low above high
		words(9, 1, 32, 0, 1, 1, 1),           // RDMA_MSG
	} {
		if _, _, ok := VersionOneErrVers(b); ok {
			t.Errorf("%x taken for version 1's ERR_VERS", b)
		}
	}
}
