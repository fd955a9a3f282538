package vm

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// fakeBzImage returns a minimal bzImage: setup_sects sectors of setup code
// after the boot sector, the "HdrS" magic, and payload placed at offset 16
// of the protected-mode code.
func fakeBzImage(setupSects byte, payload []byte) []byte {
	sects := int(setupSects)
	if sects == 0 {
		sects = 4
	}
	pm := (sects + 1) * 512
	img := make([]byte, pm+16+len(payload)+32)
	img[0x1f1] = setupSects
	copy(img[0x202:], "HdrS")
	binary.LittleEndian.PutUint32(img[0x248:], 16)
	binary.LittleEndian.PutUint32(img[0x24c:], uint32(len(payload)))
	copy(img[pm+16:], payload)
	return img
}

func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

func TestBzImagePayload(t *testing.T) {
	for _, sects := range []byte{0, 4, 27} {
		img := fakeBzImage(sects, []byte("PAYLOAD"))
		p, err := bzImagePayload(img)
		if err != nil || string(p) != "PAYLOAD" {
			t.Errorf("setup_sects %d: payload %q, %v", sects, p, err)
		}
	}
	bad := fakeBzImage(4, []byte("PAYLOAD"))
	binary.LittleEndian.PutUint32(bad[0x24c:], 1<<30) // length past the end
	if _, err := bzImagePayload(bad); !errors.Is(err, errNotBzImage) {
		t.Errorf("overlong payload: %v, want errNotBzImage", err)
	}
	if _, err := bzImagePayload([]byte("short")); !errors.Is(err, errNotBzImage) {
		t.Errorf("short file: %v, want errNotBzImage", err)
	}
	noMagic := fakeBzImage(4, []byte("PAYLOAD"))
	copy(noMagic[0x202:], "XXXX")
	if _, err := bzImagePayload(noMagic); !errors.Is(err, errNotBzImage) {
		t.Errorf("no HdrS: %v, want errNotBzImage", err)
	}
}

func TestExtractVmlinuxGzip(t *testing.T) {
	dir := t.TempDir()
	elf := append([]byte("\x7fELF"), bytes.Repeat([]byte("kernel"), 1000)...)
	src := filepath.Join(dir, "vmlinuz")
	if err := os.WriteFile(src, fakeBzImage(4, gzipped(elf)), 0o644); err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(dir, "vmlinux")
	if err := extractVmlinux(src, dst); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(dst); !bytes.Equal(got, elf) {
		t.Errorf("vmlinux differs from the packed ELF (%d bytes, want %d)", len(got), len(elf))
	}
	// a payload that unpacks to something other than ELF is refused
	if err := os.WriteFile(src, fakeBzImage(4, gzipped([]byte("not an elf"))), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := extractVmlinux(src, dst+"2"); err == nil {
		t.Error("a non-ELF payload was accepted")
	}
	if err := os.WriteFile(src, fakeBzImage(4, []byte("uncompressed?")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := extractVmlinux(src, dst+"3"); !errors.Is(err, errNotBzImage) {
		t.Errorf("unknown compression: %v, want errNotBzImage", err)
	}
}
