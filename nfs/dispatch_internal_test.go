package nfs

import (
	"testing"

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
		{"NULL", call(ProgNFS, 3, ProcNull, 512), true},
		{"GETATTR", call(ProgNFS, 3, ProcGetattr, 512), true},
		{"READ", call(ProgNFS, 3, ProcRead, 512), true},
		{"WRITE", call(ProgNFS, 3, ProcWrite, keepCallBuf), true},
		{"WRITE, a large buffer", call(ProgNFS, 3, ProcWrite, keepCallBuf+1), true},
		{"CREATE", call(ProgNFS, 3, ProcCreate, 512), true},
		{"LOOKUP", call(ProgNFS, 3, ProcLookup, 512), true},
		{"SETATTR", call(ProgNFS, 3, ProcSetattr, 512), true},
		{"NFSv4", call(ProgNFS, 4, ProcGetattr, 512), false},
		{"MOUNT", call(ProgMount, 3, MountProcMnt, 512), true},
		{"NFSACL", call(ProgNFSACL, 3, 1, 512), false},
		{"too short", make([]byte, 20, 512), false},
	} {
		if got := callKeepsNothing(tc.msg); got != tc.want {
			t.Errorf("%s: callKeepsNothing = %v, want %v", tc.name, got, tc.want)
		}
	}
}
