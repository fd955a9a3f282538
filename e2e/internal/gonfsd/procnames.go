package gonfsd

import "strconv"

// Procedure names of NFS version 3 (RFC 1813 §3), MOUNT version 3 (RFC 1813
// §5.2) and Linux's NFSACL version 3.
var (
	nfs3Procs = [...]string{"NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE",
		"CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK", "READDIR", "READDIRPLUS",
		"FSSTAT", "FSINFO", "PATHCONF", "COMMIT"}
	mount3Procs  = [...]string{"NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT"}
	nfsacl3Procs = [...]string{"NULL", "GETACL", "SETACL"}
)

// String names the procedure as "NFS3 READ" or "MOUNT3 MNT"; unknown ones
// as "prog 100021 v4 proc 2".
func (id CallID) String() string {
	var prog string
	var procs []string
	switch {
	case id.Prog == ProgNFS && id.Vers == 3:
		prog, procs = "NFS3", nfs3Procs[:]
	case id.Prog == ProgMount && id.Vers == 3:
		prog, procs = "MOUNT3", mount3Procs[:]
	case id.Prog == ProgNFSACL && id.Vers == 3:
		prog, procs = "NFSACL3", nfsacl3Procs[:]
	}
	if procs != nil && id.Proc < uint32(len(procs)) {
		return prog + " " + procs[id.Proc]
	}
	return "prog " + strconv.FormatUint(uint64(id.Prog), 10) + " v" + strconv.FormatUint(uint64(id.Vers), 10) +
		" proc " + strconv.FormatUint(uint64(id.Proc), 10)
}
