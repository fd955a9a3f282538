package vm

import (
	"debug/elf"
	"errors"
	"io"
	"os"
	"strings"
)

// elfDeps is what the dynamic loader needs to start an ELF file.
type elfDeps struct {
	Interp  string   // PT_INTERP, e.g. /lib64/ld-linux-x86-64.so.2; "" if static
	Needed  []string // DT_NEEDED sonames
	RunPath []string // DT_RUNPATH and DT_RPATH directories
}

// isELF reports whether the file at path starts with the ELF magic.
func isELF(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var magic [4]byte
	_, err = io.ReadFull(f, magic[:])
	return err == nil && string(magic[:]) == elf.ELFMAG
}

// readELFDeps returns the interpreter, needed libraries and run paths of the
// ELF file at path: what `ld.so --list` would follow, read without running
// anything. Relocatable objects (kernel modules) have none.
func readELFDeps(path string) (elfDeps, error) {
	var d elfDeps
	f, err := elf.Open(path)
	if err != nil {
		return d, err
	}
	defer f.Close()
	if f.Type != elf.ET_EXEC && f.Type != elf.ET_DYN {
		return d, nil
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			b, err := io.ReadAll(p.Open())
			if err != nil {
				return d, err
			}
			d.Interp = strings.TrimRight(string(b), "\x00")
		}
	}
	if f.Section(".dynamic") == nil {
		return d, nil // static
	}
	if d.Needed, err = f.DynString(elf.DT_NEEDED); err != nil && !errors.Is(err, elf.ErrNoSymbols) {
		return d, err
	}
	for _, tag := range []elf.DynTag{elf.DT_RUNPATH, elf.DT_RPATH} {
		paths, err := f.DynString(tag)
		if err != nil {
			return d, err
		}
		for _, p := range paths {
			d.RunPath = append(d.RunPath, strings.Split(p, ":")...)
		}
	}
	return d, nil
}
