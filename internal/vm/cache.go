package vm

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// EnvCache names the environment variable that overrides the cache directory.
const EnvCache = "RPCRDMA_VM_CACHE"

// DefaultCacheDir returns the directory that holds the downloaded packages,
// the unpacked trees and the built image: $RPCRDMA_VM_CACHE if set, else
// $HOME/.cache/go-rpcrdma/vm (os.UserCacheDir), outside any work tree, so a
// fresh clone on the same machine reuses it. It takes about 800 MB.
func DefaultCacheDir() string {
	if d := os.Getenv(EnvCache); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "go-rpcrdma", "vm")
	}
	return filepath.Join(os.TempDir(), "go-rpcrdma-vm")
}

// lockDir takes an exclusive flock on dir/lock, so that concurrent builds
// (go test runs packages in parallel) wait for each other. The returned
// function releases it.
func lockDir(dir string) (func(), error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("vm: locking %s: %w", dir, err)
	}
	return func() { f.Close() }, nil
}
