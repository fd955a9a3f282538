package vm

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"
)

// cpioMember is a member read back by readCpio.
type cpioMember struct {
	name                string
	mode, uid, gid, ino uint32
	major, minor, nlink uint32
	data                string
}

// readCpio parses a newc archive strictly (magic, alignment, trailer), as the
// kernel's initramfs unpacker does.
func readCpio(b []byte) ([]cpioMember, error) {
	var out []cpioMember
	off := 0
	field := func(i int) uint32 {
		v, _ := strconv.ParseUint(string(b[off+6+8*i:off+14+8*i]), 16, 32)
		return uint32(v)
	}
	for {
		if off%4 != 0 {
			return nil, fmt.Errorf("header at %d not aligned", off)
		}
		if len(b)-off < 110 || string(b[off:off+6]) != "070701" {
			return nil, fmt.Errorf("bad header at %d", off)
		}
		m := cpioMember{ino: field(0), mode: field(1), uid: field(2), gid: field(3), nlink: field(4),
			major: field(9), minor: field(10)}
		size, namesize := int(field(6)), int(field(11))
		nameEnd := off + 110 + namesize
		if nameEnd > len(b) || b[nameEnd-1] != 0 {
			return nil, fmt.Errorf("bad name at %d", off)
		}
		m.name = string(b[off+110 : nameEnd-1])
		dataOff := (nameEnd + 3) &^ 3
		if dataOff+size > len(b) {
			return nil, fmt.Errorf("member %s overruns the archive", m.name)
		}
		m.data = string(b[dataOff : dataOff+size])
		off = (dataOff + size + 3) &^ 3
		if m.name == "TRAILER!!!" {
			if off != len(b) {
				return nil, fmt.Errorf("%d bytes after the trailer", len(b)-off)
			}
			return out, nil
		}
		out = append(out, m)
	}
}

func TestCpioWriterRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	w := newCpioWriter(&buf)
	members := []struct {
		h    cpioHeader
		data string
	}{
		{cpioHeader{Name: "dev", Mode: modeDir | 0o755}, ""},
		{cpioHeader{Name: "dev/console", Mode: modeCharDev | 0o600, Major: 5, Minor: 1}, ""},
		{cpioHeader{Name: "init", Mode: modeRegular | 0o755}, "#!/bin/bash\necho hi\n"},
		{cpioHeader{Name: "a", Mode: modeRegular | 0o644, UID: 101, GID: 65534}, "x"},
		{cpioHeader{Name: "bin/sh", Mode: modeSymlink | 0o777}, "bash"},
		{cpioHeader{Name: "empty", Mode: modeRegular | 0o644}, ""},
	}
	for _, m := range members {
		h := m.h
		h.Size = int64(len(m.data))
		if err := w.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write([]byte(m.data)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := readCpio(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(members) {
		t.Fatalf("read %d members, wrote %d", len(got), len(members))
	}
	inos := map[uint32]bool{}
	for i, m := range members {
		g := got[i]
		if g.name != m.h.Name || g.mode != m.h.Mode || g.data != m.data || g.uid != m.h.UID || g.gid != m.h.GID ||
			g.major != m.h.Major || g.minor != m.h.Minor {
			t.Errorf("member %d = %+v, want %+v with data %q", i, g, m.h, m.data)
		}
		if inos[g.ino] {
			t.Errorf("member %s reuses inode %d", g.name, g.ino)
		}
		inos[g.ino] = true
		if want := uint32(1 + btoi(m.h.Mode&0o170000 == modeDir)); g.nlink != want {
			t.Errorf("member %s: nlink %d, want %d", g.name, g.nlink, want)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func TestCpioWriterErrors(t *testing.T) {
	w := newCpioWriter(&bytes.Buffer{})
	if err := w.WriteHeader(&cpioHeader{Name: "f", Mode: modeRegular, Size: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("abc")); err == nil {
		t.Error("writing 3 bytes into a 2-byte member succeeded")
	}
	if err := w.WriteHeader(&cpioHeader{Name: "g", Mode: modeRegular}); err == nil {
		t.Error("a new member after a short one succeeded")
	}
	if err := newCpioWriter(&bytes.Buffer{}).WriteHeader(&cpioHeader{Name: "big", Size: 1 << 32}); err == nil {
		t.Error("a 4 GiB member succeeded")
	}
	w = newCpioWriter(&bytes.Buffer{})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteHeader(&cpioHeader{Name: "late"}); err == nil {
		t.Error("WriteHeader after Close succeeded")
	}
}
