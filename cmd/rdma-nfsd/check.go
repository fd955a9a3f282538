package main

import (
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/go-rpcrdma/rpcrdma/nfs/server"
	"github.com/go-rpcrdma/rpcrdma/nfs/server/exports"
)

// errCheckFailed is -check's error when the configuration has errors,
// each of which it has printed.
var errCheckFailed = errors.New("configuration check failed")

// checkConfig is -check (as nginx -t): it checks the configuration o
// gives, whose flags parse has checked already, and starts nothing. It
// reads the exports file (-exports) and opens each exported directory as
// serving it would (-dir's too), checks the handle key file (-handle-key)
// without making one where there is none, and checks that -metrics is an
// address to listen on. It prints "configuration ok" to stdout and returns nil,
// or prints each error on a line of its own to stderr ("rdma-nfsd:
// FILE:LINE: ...") and returns errCheckFailed (exit status 1).
func checkConfig(o options, stdout, stderr io.Writer) error {
	var errs []error
	if o.exports != "" {
		tab, err := exports.ReadFile(o.exports)
		switch {
		case err != nil:
			errs = append(errs, err)
		case len(tab.Exports) == 0:
			errs = append(errs, fmt.Errorf("%s: no export", o.exports))
		}
		if tab != nil {
			for _, e := range tab.Exports {
				if err := checkDir(e.Path, e.FSID, o.indexOnly); err != nil {
					errs = append(errs, fmt.Errorf("%s:%d: %w", o.exports, e.Line, err))
				}
			}
		}
	} else if err := checkDir(o.dir, "", o.indexOnly); err != nil {
		errs = append(errs, fmt.Errorf("-dir: %w", err))
	}
	if o.handleKey != "" {
		if err := server.CheckHandleKey(o.handleKey); err != nil {
			errs = append(errs, fmt.Errorf("-handle-key: %w", err))
		}
	}
	if o.metrics != "" {
		if _, err := net.ResolveTCPAddr("tcp", o.metrics); err != nil {
			errs = append(errs, fmt.Errorf("-metrics: %w", err))
		}
	}
	if len(errs) > 0 {
		for _, err := range errs {
			fmt.Fprintf(stderr, "rdma-nfsd: %v\n", err)
		}
		return errCheckFailed
	}
	_, err := fmt.Fprintln(stdout, "configuration ok")
	return err
}

// checkDir opens the directory path and makes its file handles as
// serving it would (server.DirFS, server.NewDirHandler), then closes it.
func checkDir(path, fsid string, indexOnly bool) error {
	d, err := server.DirFS(path)
	if err != nil {
		return err
	}
	defer d.Close()
	_, err = server.NewDirHandler(d, server.DirHandlerOptions{IndexOnly: indexOnly, FSID: fsid})
	return err
}
