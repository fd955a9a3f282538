package server

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"
)

// HandleKeySize is the size of the key LoadHandleKey keeps: 32 bytes,
// the size of HMAC-SHA256's hash.
const HandleKeySize = 32

// LoadHandleKey returns the handle key kept in the file name
// (DirHandlerOptions.HandleKey), creating the file with HandleKeySize
// random bytes if there is none; created says it did. A new key makes
// every handle made under another key, and so every handle from before
// the file was made, NFS3ERR_BADHANDLE.
//
// The file must be a regular file of exactly HandleKeySize bytes, owned
// by the process's effective user and neither readable nor writable by
// its group or others (mode 0600 or 0400): anyone who can read the key
// can forge handles of any file of the exports, and anyone who can write
// it can make every handle the clients hold bad. A file that is not so is
// refused, and left as it is.
//
// A new file is made as a whole or not at all: the key is written to a
// temporary file of the same directory (O_EXCL, mode 0600), synced, and
// renamed to name unless name exists by then (RENAME_NOREPLACE, or a
// hard link where the file system has no such rename), and the directory
// synced; a process that lost that race reads the winner's key. Missing
// directories of name are made with mode 0700.
func LoadHandleKey(name string) (key []byte, created bool, err error) {
	key, err = readHandleKey(name)
	if !errors.Is(err, fs.ErrNotExist) {
		return key, false, err
	}
	switch err := createHandleKey(name); {
	case errors.Is(err, fs.ErrExist): // made meanwhile by another process
	case err != nil:
		return nil, false, err
	default:
		created = true
	}
	key, err = readHandleKey(name)
	return key, created, err
}

// CheckHandleKey checks the key file name as LoadHandleKey would, and
// creates nothing: nil if it is a valid key file or there is none yet
// (LoadHandleKey would make it), else the reason LoadHandleKey would
// refuse it.
func CheckHandleKey(name string) error {
	_, err := readHandleKey(name)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// readHandleKey reads the key file name and checks it.
func readHandleKey(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, fmt.Errorf("handle key: %w", err)
	}
	defer f.Close()
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return nil, fmt.Errorf("handle key %s: %w", name, err)
	}
	mode := fs.FileMode(st.Mode & 0o777)
	switch {
	case st.Mode&unix.S_IFMT != unix.S_IFREG:
		return nil, fmt.Errorf("handle key %s: not a regular file", name)
	case st.Uid != uint32(os.Geteuid()):
		return nil, fmt.Errorf("handle key %s: owned by uid %d, not by this process's uid %d", name, st.Uid, os.Geteuid())
	case mode&0o077 != 0:
		return nil, fmt.Errorf("handle key %s: mode %04o lets group or others read or write it (chmod 600 %s)", name, mode, name)
	case st.Size != HandleKeySize:
		return nil, fmt.Errorf("handle key %s: %d bytes, want %d (a key file is %d random bytes; remove it to make a new key, which makes every handle clients hold bad)",
			name, st.Size, HandleKeySize, HandleKeySize)
	}
	key := make([]byte, HandleKeySize+1) // one more: a file grown since shows
	n, err := io.ReadFull(f, key)
	switch {
	case n == HandleKeySize && err == io.ErrUnexpectedEOF:
		return key[:n], nil
	case err == nil || err == io.ErrUnexpectedEOF || err == io.EOF:
		return nil, fmt.Errorf("handle key %s: its size changed while it was read", name)
	}
	return nil, fmt.Errorf("handle key %s: %w", name, err)
}

// createHandleKey makes the key file name with a new random key; an
// error matching fs.ErrExist says name exists already.
func createHandleKey(name string) (err error) {
	dir := filepath.Dir(name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("handle key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(name)+".new-*") // O_EXCL, 0600
	if err != nil {
		return fmt.Errorf("handle key: %w", err)
	}
	defer func() {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
	}()
	key := make([]byte, HandleKeySize)
	_, _ = rand.Read(key) // crypto/rand.Read does not fail (Go 1.24)
	if _, err := tmp.Write(key); err != nil {
		return fmt.Errorf("handle key: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("handle key: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("handle key: %w", err)
	}
	err = unix.Renameat2(unix.AT_FDCWD, tmp.Name(), unix.AT_FDCWD, name, unix.RENAME_NOREPLACE)
	if err == unix.EINVAL { // no RENAME_NOREPLACE here: a link does not replace either
		err = unix.Link(tmp.Name(), name)
	}
	if err != nil {
		return fmt.Errorf("handle key: %w", &os.LinkError{Op: "rename", Old: tmp.Name(), New: name, Err: err})
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("handle key: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("handle key: sync %s: %w", dir, err)
	}
	return nil
}
