package main

import (
	"io/fs"
	"syscall"
	"time"
)

// atime is the access time of a local file (its modification time when
// the file system gives none).
func atime(fi fs.FileInfo) time.Time {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return time.Unix(st.Atim.Sec, st.Atim.Nsec)
	}
	return fi.ModTime()
}
