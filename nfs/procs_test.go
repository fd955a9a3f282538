package nfs

import "testing"

func TestProcName(t *testing.T) {
	for _, tc := range []struct {
		prog, vers, proc uint32
		want             string
	}{
		{ProgNFS, 3, ProcRead, "NFS3 READ"},
		{ProgNFS, 3, ProcCommit, "NFS3 COMMIT"},
		{ProgNFS, 3, 22, "prog 100003 v3 proc 22"},
		{ProgNFS, 4, 1, "prog 100003 v4 proc 1"},
		{ProgMount, 3, MountProcExport, "MOUNT3 EXPORT"},
		{ProgNFSACL, 3, 1, "NFSACL3 GETACL"},
		{ProgNLM, 4, 2, "prog 100021 v4 proc 2"},
	} {
		if got := ProcName(tc.prog, tc.vers, tc.proc); got != tc.want {
			t.Errorf("ProcName(%d, %d, %d) = %q, want %q", tc.prog, tc.vers, tc.proc, got, tc.want)
		}
	}
}
