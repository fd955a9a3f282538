package server

import (
	"testing"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// TestCallKeepsNothing: a worker reuses its call buffer (a small one
// itself, a large one through the pool) after the NFSv3 and MOUNT v3
// calls, which the server executes keeping nothing of them.
func TestCallKeepsNothing(t *testing.T) {
	call := func(prog, vers, proc uint32, capacity int) []byte {
		h := xdr.CallHeader{XID: 1, Prog: prog, Vers: vers, Proc: proc}
		return h.Append(make([]byte, 0, capacity))
	}
	for _, tc := range []struct {
		name string
		msg  []byte
		want bool
	}{
		{"NULL", call(nfs.ProgNFS, 3, nfs.ProcNull, 512), true},
		{"GETATTR", call(nfs.ProgNFS, 3, nfs.ProcGetattr, 512), true},
		{"READ", call(nfs.ProgNFS, 3, nfs.ProcRead, 512), true},
		{"WRITE", call(nfs.ProgNFS, 3, nfs.ProcWrite, keepCallBuf), true},
		{"WRITE, a large buffer", call(nfs.ProgNFS, 3, nfs.ProcWrite, keepCallBuf+1), true},
		{"CREATE", call(nfs.ProgNFS, 3, nfs.ProcCreate, 512), true},
		{"LOOKUP", call(nfs.ProgNFS, 3, nfs.ProcLookup, 512), true},
		{"SETATTR", call(nfs.ProgNFS, 3, nfs.ProcSetattr, 512), true},
		{"NFSv4", call(nfs.ProgNFS, 4, nfs.ProcGetattr, 512), false},
		{"MOUNT", call(nfs.ProgMount, 3, nfs.MountProcMnt, 512), true},
		{"NFSACL", call(nfs.ProgNFSACL, 3, 1, 512), false},
		{"too short", make([]byte, 20, 512), false},
	} {
		if got := callKeepsNothing(tc.msg); got != tc.want {
			t.Errorf("%s: callKeepsNothing = %v, want %v", tc.name, got, tc.want)
		}
	}
}
