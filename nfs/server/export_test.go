package server

import "github.com/go-rpcrdma/rpcrdma/xdr"

// OpenFiles returns the number of descriptors h's open-file cache holds.
func OpenFiles(h *DirHandler) int { return h.files.len() }

// SyncWriteFunc is the signature of the write stable WRITEs use
// (pwritev2 with RWF_SYNC).
type SyncWriteFunc = func(fd int, b []byte, off int64) (int, error)

// WrapSyncWrite replaces the write stable WRITEs use by wrap(the current
// one) and returns what restores it (and forgets a kernel's refusal).
func WrapSyncWrite(wrap func(SyncWriteFunc) SyncWriteFunc) (restore func()) {
	old := pwriteSync
	pwriteSync = wrap(old)
	return func() { pwriteSync = old; noSyncWrite.Store(false) }
}

// SetExecuteHook makes hook run as each natively executed procedure
// starts, after its duplicate request cache entry is made; nil removes
// it.
func SetExecuteHook(hook func(h *xdr.CallHeader)) { executeHook = hook }

// SetIdentityHook makes hook run as a call's file system work is given
// the caller's identity; nil removes it.
func SetIdentityHook(hook func()) { identityHook = hook }

// InlineCalls returns how many calls s's polling goroutines answered, and
// how many they handed off.
func InlineCalls(s *Server) (answered, handedOff uint64) {
	return s.inlineAnswered.Load(), s.inlineHandedOff.Load()
}

// InMemory reports whether s's first export is on tmpfs or ramfs.
func InMemory(s *Server) bool { return s.exports.Load().list[0].Handler.inMemory }

// SetInMemory makes s's first export be taken for one on tmpfs or ramfs
// (whose reads, lookups and writes never wait on a device), or not.
func SetInMemory(s *Server, v bool) { s.exports.Load().list[0].Handler.inMemory = v }

// IdentityHandOffs returns how many calls' file system work s handed to
// an identity thread.
func IdentityHandOffs(s *Server) uint64 { return s.ids.HandOffs() }

// RootHandle returns the handle of h's root.
func RootHandle(h *DirHandler) []byte { return h.rootHandle() }
