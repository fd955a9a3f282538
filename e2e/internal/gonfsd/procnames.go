package gonfsd

import "github.com/go-rpcrdma/rpcrdma/nfs"

// String names the procedure as "NFS3 READ" or "MOUNT3 MNT"; unknown ones
// as "prog 100021 v4 proc 2" (nfs.ProcName).
func (id CallID) String() string { return nfs.ProcName(id.Prog, id.Vers, id.Proc) }
