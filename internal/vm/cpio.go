package vm

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// File type bits of a cpio mode (the st_mode layout of Linux).
const (
	modeDir     = 0o040000
	modeRegular = 0o100000
	modeSymlink = 0o120000
	modeCharDev = 0o020000
)

// errCpioClosed reports a write after Close.
var errCpioClosed = errors.New("vm: cpio writer closed")

// cpioHeader describes one member of a newc ("070701") archive, the format
// the Linux kernel unpacks into its initial rootfs
// (Documentation/driver-api/early-userspace/buffer-format.rst).
type cpioHeader struct {
	Name  string // path without a leading slash
	Mode  uint32 // type and permission bits
	UID   uint32
	GID   uint32
	Size  int64  // data bytes that follow (regular files, symlink targets)
	Major uint32 // device number of a character or block device
	Minor uint32
}

// cpioWriter writes a newc archive. Every member gets its own inode number and
// a link count of 1, so the kernel never tries to hard-link members, and the
// modification time is 0, so the same tree always gives the same bytes.
type cpioWriter struct {
	w      *bufio.Writer
	off    int64
	ino    uint32
	remain int64 // data bytes still expected for the current member
	pad    int   // padding after the current member's data
	closed bool
}

func newCpioWriter(w io.Writer) *cpioWriter {
	return &cpioWriter{w: bufio.NewWriterSize(w, 1<<20)}
}

// WriteHeader starts a new member; its Size bytes of data must be written next.
func (c *cpioWriter) WriteHeader(h *cpioHeader) error {
	if c.closed {
		return errCpioClosed
	}
	if err := c.finishMember(); err != nil {
		return err
	}
	if h.Size < 0 || h.Size > 0xffffffff {
		return fmt.Errorf("vm: cpio member %q: size %d does not fit newc", h.Name, h.Size)
	}
	c.ino++
	nlink := uint32(1)
	if h.Mode&0o170000 == modeDir {
		nlink = 2
	}
	name := h.Name + "\x00"
	hdr := fmt.Sprintf("070701%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x%08x",
		c.ino, h.Mode, h.UID, h.GID, nlink, 0, h.Size, 0, 0, h.Major, h.Minor, len(name), 0)
	if err := c.write([]byte(hdr + name)); err != nil {
		return err
	}
	if err := c.align(); err != nil {
		return err
	}
	c.remain = h.Size
	c.pad = int(-h.Size & 3)
	return nil
}

// Write writes data of the current member.
func (c *cpioWriter) Write(p []byte) (int, error) {
	if c.closed {
		return 0, errCpioClosed
	}
	if int64(len(p)) > c.remain {
		return 0, fmt.Errorf("vm: cpio: %d bytes written past the member's size", int64(len(p))-c.remain)
	}
	n, err := c.w.Write(p)
	c.off += int64(n)
	c.remain -= int64(n)
	return n, err
}

// Close writes the trailer and flushes; it does not close the underlying writer.
func (c *cpioWriter) Close() error {
	if c.closed {
		return nil
	}
	if err := c.WriteHeader(&cpioHeader{Name: "TRAILER!!!"}); err != nil {
		return err
	}
	if err := c.finishMember(); err != nil {
		return err
	}
	c.closed = true
	return c.w.Flush()
}

func (c *cpioWriter) finishMember() error {
	if c.remain != 0 {
		return fmt.Errorf("vm: cpio: member is %d bytes short", c.remain)
	}
	err := c.write(make([]byte, c.pad))
	c.pad = 0
	return err
}

func (c *cpioWriter) align() error {
	return c.write(make([]byte, int(-c.off&3)))
}

func (c *cpioWriter) write(p []byte) error {
	n, err := c.w.Write(p)
	c.off += int64(n)
	return err
}
