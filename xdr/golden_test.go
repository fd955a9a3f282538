package xdr

import (
	"bytes"
	"encoding/hex"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// goldenHex formats b as one 32-bit word per group, eight groups per line.
func goldenHex(b []byte) string {
	var sb strings.Builder
	for i := 0; i < len(b); i += 4 {
		switch {
		case i == 0:
		case i%32 == 0:
			sb.WriteByte('\n')
		default:
			sb.WriteByte(' ')
		}
		sb.WriteString(hex.EncodeToString(b[i:min(i+4, len(b))]))
	}
	sb.WriteByte('\n')
	return sb.String()
}

// checkGolden compares got with testdata/golden/name.hex, or rewrites the
// file under -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", strings.ReplaceAll(name, " ", "_")+".hex")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(goldenHex(got)), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	want, err := hex.DecodeString(stripSpace(string(data)))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs:\ngot\n%swant\n%s", path, goldenHex(got), goldenHex(want))
	}
}

// TestGolden pins the encodings of the call and reply vectors and of a
// record-marked call (16-byte fragments) to files under testdata/golden.
func TestGolden(t *testing.T) {
	for _, v := range callVectors {
		checkGolden(t, "call "+v.name, v.hdr.Append(nil))
	}
	for _, v := range replyVectors {
		checkGolden(t, "reply "+v.name, v.hdr.Append(nil))
	}
	msg := unhex(t, callVectors[1].hex)
	checkGolden(t, "record 16-byte fragments", AppendRecord(nil, msg, 16))
	checkGolden(t, "record single fragment", AppendRecord(nil, msg, 0))
	checkGolden(t, "record empty", AppendRecord(nil, nil, 0))
}
