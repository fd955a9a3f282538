package vm

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// errNotBzImage reports a kernel file that is not an x86 bzImage with a
// compressed payload this package can unpack.
var errNotBzImage = errors.New("vm: not a bzImage with a known payload")

// bzImagePayload returns the compressed kernel (the payload) of an x86
// bzImage, using the setup header fields of the x86 boot protocol
// (Documentation/arch/x86/boot.rst): setup_sects at 0x1f1 (0 means 4),
// payload_offset at 0x248 and payload_length at 0x24c, the offset counted
// from the start of the protected-mode code, (setup_sects+1)*512.
func bzImagePayload(img []byte) ([]byte, error) {
	if len(img) < 0x250 || string(img[0x202:0x206]) != "HdrS" {
		return nil, errNotBzImage
	}
	setup := int64(img[0x1f1])
	if setup == 0 {
		setup = 4
	}
	off := (setup+1)*512 + int64(binary.LittleEndian.Uint32(img[0x248:]))
	n := int64(binary.LittleEndian.Uint32(img[0x24c:]))
	if n == 0 || off > int64(len(img)) || n > int64(len(img))-off {
		return nil, errNotBzImage
	}
	return img[off : off+n], nil
}

// extractVmlinux writes the uncompressed ELF kernel (vmlinux) held in the
// bzImage at src to dst. qemu boots such an ELF directly through its PVH entry
// point (Debian's kernel has CONFIG_PVH=y), which skips the in-guest
// decompression, slow under TCG for an xz kernel. xz and zstd payloads
// are unpacked with the xz and zstd programs, gzip in Go.
func extractVmlinux(src, dst string) error {
	img, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	payload, err := bzImagePayload(img)
	if err != nil {
		return fmt.Errorf("%s: %w", src, err)
	}
	var out bytes.Buffer
	switch {
	case bytes.HasPrefix(payload, []byte{0xfd, '7', 'z', 'X', 'Z', 0}):
		err = filter(&out, payload, "xz", "-dcq", "--single-stream")
	case bytes.HasPrefix(payload, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		err = filter(&out, payload, "zstd", "-dcq")
	case bytes.HasPrefix(payload, []byte{0x1f, 0x8b}):
		var zr *gzip.Reader
		if zr, err = gzip.NewReader(bytes.NewReader(payload)); err == nil {
			zr.Multistream(false)
			_, err = io.Copy(&out, zr)
		}
	default:
		return fmt.Errorf("%s: %w", src, errNotBzImage)
	}
	if err != nil {
		return fmt.Errorf("%s: unpacking the kernel payload: %w", src, err)
	}
	if !bytes.HasPrefix(out.Bytes(), []byte("\x7fELF")) {
		return fmt.Errorf("%s: the kernel payload is not an ELF file", src)
	}
	return writeFileAtomic(dst, out.Bytes(), 0o644)
}

// filter runs prog with in as its standard input and writes its output to out.
func filter(out io.Writer, in []byte, prog string, args ...string) error {
	cmd := exec.Command(prog, args...)
	cmd.Stdin = bytes.NewReader(in)
	cmd.Stdout = out
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", prog, err, bytes.TrimSpace(stderr.Bytes()))
	}
	return nil
}

// writeFileAtomic writes data to a temporary file next to name and renames it.
func writeFileAtomic(name string, data []byte, perm os.FileMode) error {
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, data, perm); err != nil {
		return err
	}
	return os.Rename(tmp, name)
}
