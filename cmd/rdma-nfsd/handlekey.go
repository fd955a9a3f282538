package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-rpcrdma/rpcrdma/nfs/server"
)

// handleKeyDefault is -handle-key's default (defaultHandleKeyPath).
var handleKeyDefault = defaultHandleKeyPath(os.Geteuid(), os.Getenv)

// defaultHandleKeyPath is where rdma-nfsd keeps its handle key unless
// -handle-key says otherwise: handle-key in systemd's StateDirectory=
// ($STATE_DIRECTORY, its first directory) when set; for root,
// /var/lib/rdma-nfsd/handle-key; for another user,
// rdma-nfsd/handle-key under $XDG_STATE_HOME, or under ~/.local/state
// without it. "" (no such directory: neither variable nor $HOME is
// absolute) means a key made for the run.
func defaultHandleKeyPath(euid int, getenv func(string) string) string {
	if d, _, _ := strings.Cut(getenv("STATE_DIRECTORY"), ":"); filepath.IsAbs(d) {
		return filepath.Join(d, "handle-key")
	}
	if euid == 0 {
		return "/var/lib/rdma-nfsd/handle-key"
	}
	if d := getenv("XDG_STATE_HOME"); filepath.IsAbs(d) {
		return filepath.Join(d, "rdma-nfsd", "handle-key")
	}
	if h := getenv("HOME"); filepath.IsAbs(h) {
		return filepath.Join(h, ".local", "state", "rdma-nfsd", "handle-key")
	}
	return ""
}

// loadHandleKey returns the handle key of every export: the one kept in
// the file name, created if missing (server.LoadHandleKey), or, for "",
// nil (a key made for this run: server.DirHandlerOptions.HandleKey).
func loadHandleKey(log *slog.Logger, name string) ([]byte, error) {
	if name == "" {
		log.Warn("rdma-nfsd: no -handle-key file: file handles are sealed with a key made for this run, and every handle clients hold is refused (NFS3ERR_BADHANDLE) after a restart")
		return nil, nil
	}
	key, created, err := server.LoadHandleKey(name)
	if err != nil {
		return nil, fmt.Errorf("-handle-key: %w", err)
	}
	if created {
		log.Info("rdma-nfsd: created a new handle key; handles made under any earlier key are refused", "file", name)
	}
	return key, nil
}
