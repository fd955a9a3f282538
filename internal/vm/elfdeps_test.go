package vm

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// hostTrue is a dynamically linked program of the host (Debian's coreutils).
const hostTrue = "/bin/true"

func TestReadELFDepsDynamic(t *testing.T) {
	d, err := readELFDeps(hostTrue)
	if err != nil {
		t.Fatal(err)
	}
	if d.Interp != "/lib64/ld-linux-x86-64.so.2" || !slices.Contains(d.Needed, "libc.so.6") {
		t.Errorf("readELFDeps(%s) = %+v, want the x86-64 loader and libc.so.6", hostTrue, d)
	}
	if !isELF(hostTrue) {
		t.Errorf("isELF(%s) = false", hostTrue)
	}
}

func TestReadELFDepsNotELF(t *testing.T) {
	p := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if isELF(p) {
		t.Error("a shell script is ELF")
	}
	if _, err := readELFDeps(p); err == nil {
		t.Error("readELFDeps of a shell script succeeded")
	}
}

// writeModule writes a minimal ELF64 relocatable object with a .modinfo
// section holding the given NUL-terminated key=value strings, like a .ko.
func writeModule(t *testing.T, path string, modinfo ...string) {
	t.Helper()
	var info []byte
	for _, kv := range modinfo {
		info = append(append(info, kv...), 0)
	}
	shstr := []byte("\x00.modinfo\x00.shstrtab\x00")
	infoOff := uint64(64)
	strOff := infoOff + uint64(len(info))
	shOff := (strOff + uint64(len(shstr)) + 7) &^ 7
	var buf bytes.Buffer
	hdr := elf.Header64{Type: uint16(elf.ET_REL), Machine: uint16(elf.EM_X86_64), Version: 1,
		Shoff: shOff, Ehsize: 64, Shentsize: 64, Shnum: 3, Shstrndx: 2}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS], hdr.Ident[elf.EI_DATA], hdr.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), 1
	binary.Write(&buf, binary.LittleEndian, hdr)
	buf.Write(info)
	buf.Write(shstr)
	buf.Write(make([]byte, int(shOff)-buf.Len()))
	binary.Write(&buf, binary.LittleEndian, elf.Section64{})
	binary.Write(&buf, binary.LittleEndian, elf.Section64{Name: 1, Type: uint32(elf.SHT_PROGBITS), Off: infoOff, Size: uint64(len(info)), Addralign: 1})
	binary.Write(&buf, binary.LittleEndian, elf.Section64{Name: 10, Type: uint32(elf.SHT_STRTAB), Off: strOff, Size: uint64(len(shstr)), Addralign: 1})
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestModuleName(t *testing.T) {
	for in, want := range map[string]string{
		"kernel/net/9p/9pnet_virtio.ko": "9pnet_virtio", "crc32-generic": "crc32_generic",
		"rdma_rxe.ko.xz": "rdma_rxe", "veth": "veth",
	} {
		if got := moduleName(in); got != want {
			t.Errorf("moduleName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestModuleClosure(t *testing.T) {
	dir := t.TempDir()
	writeModule(t, filepath.Join(dir, "kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko"),
		"license=Dual BSD/GPL", "depends=ib_core,ip6_udp_tunnel,udp_tunnel,ib_uverbs", "name=rdma_rxe")
	writeModule(t, filepath.Join(dir, "kernel/drivers/infiniband/core/ib_core.ko"), "depends=", "name=ib_core")
	writeModule(t, filepath.Join(dir, "kernel/drivers/infiniband/core/ib_uverbs.ko"), "depends=ib_core")
	writeModule(t, filepath.Join(dir, "kernel/net/ipv6/ip6_udp_tunnel.ko"), "name=ip6_udp_tunnel")
	writeModule(t, filepath.Join(dir, "kernel/net/ipv4/udp_tunnel.ko"), "name=udp_tunnel")
	writeModule(t, filepath.Join(dir, "kernel/drivers/net/unrelated.ko"), "depends=")
	if err := os.WriteFile(filepath.Join(dir, "modules.builtin"), []byte("kernel/lib/crc32-generic.ko\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := moduleClosure(dir, []string{"rdma_rxe", "crc32_generic"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"kernel/drivers/infiniband/core/ib_core.ko", "kernel/drivers/infiniband/core/ib_uverbs.ko",
		"kernel/drivers/infiniband/sw/rxe/rdma_rxe.ko", "kernel/net/ipv4/udp_tunnel.ko", "kernel/net/ipv6/ip6_udp_tunnel.ko",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("moduleClosure = %q, want %q", got, want)
	}
	if _, err := moduleClosure(dir, []string{"nosuchmodule"}); err == nil {
		t.Error("a missing module was not reported")
	}
}
