package nfs

import "strconv"

// ONC RPC program numbers (RFC 1813 §3 and §5; NFSACL is Linux's side
// program for POSIX ACLs; portmap is RFC 1833).
const (
	ProgPortmap = 100000
	ProgNFS     = 100003
	ProgMount   = 100005
	ProgNLM     = 100021
	ProgNFSACL  = 100227
)

// DefaultRDMAPort is the port of NFS over RPC-over-RDMA (RFC 8267 §6 and
// IANA: "nfsrdma", 20049), where a server listens by default
// (server.Config.RDMAAddr) and a client mounts by default
// (client.MountOptions.RDMAPort).
const DefaultRDMAPort = 20049

// MinMaxRPCSize is the smallest transport.Config.MaxRPCSize other than 0
// that the NFS server (server.New) and client (client.Dial, Mount) take:
// two pages, room for a READ or WRITE of 4 KiB (the smallest rtmax,
// wtmax, rsize and wsize they use) with its RPC and NFS headers.
const MinMaxRPCSize = 8 << 10

// NFS version 3 procedures (RFC 1813 §3.3).
const (
	ProcNull        = 0
	ProcGetattr     = 1
	ProcSetattr     = 2
	ProcLookup      = 3
	ProcAccess      = 4
	ProcReadlink    = 5
	ProcRead        = 6
	ProcWrite       = 7
	ProcCreate      = 8
	ProcMkdir       = 9
	ProcSymlink     = 10
	ProcMknod       = 11
	ProcRemove      = 12
	ProcRmdir       = 13
	ProcRename      = 14
	ProcLink        = 15
	ProcReaddir     = 16
	ProcReaddirplus = 17
	ProcFsstat      = 18
	ProcFsinfo      = 19
	ProcPathconf    = 20
	ProcCommit      = 21
)

// MOUNT version 3 procedures (RFC 1813 §5.2).
const (
	MountProcNull    = 0
	MountProcMnt     = 1
	MountProcDump    = 2
	MountProcUmnt    = 3
	MountProcUmntall = 4
	MountProcExport  = 5
)

// Portmap version 2 and rpcbind version 4 (RFC 1833): the versions, the
// procedures (the same numbers in both) and portmap's protocol numbers.
const (
	PmapVers        = 2
	RpcbVers4       = 4
	PmapProcNull    = 0
	PmapProcSet     = 1
	PmapProcUnset   = 2
	PmapProcGetport = 3
	PmapProcDump    = 4
	IPProtoTCP      = 6
	IPProtoUDP      = 17
)

// Procedure names of NFS version 3, MOUNT version 3 and NFSACL version 3.
var (
	nfs3Procs = [...]string{"NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK", "READ", "WRITE",
		"CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME", "LINK", "READDIR", "READDIRPLUS",
		"FSSTAT", "FSINFO", "PATHCONF", "COMMIT"}
	mount3Procs  = [...]string{"NULL", "MNT", "DUMP", "UMNT", "UMNTALL", "EXPORT"}
	nfsacl3Procs = [...]string{"NULL", "GETACL", "SETACL"}
)

// ProcName names a procedure as "NFS3 READ" or "MOUNT3 MNT"; unknown ones
// as "prog 100021 v4 proc 2".
func ProcName(prog, vers, proc uint32) string {
	var name string
	var procs []string
	switch {
	case prog == ProgNFS && vers == 3:
		name, procs = "NFS3", nfs3Procs[:]
	case prog == ProgMount && vers == 3:
		name, procs = "MOUNT3", mount3Procs[:]
	case prog == ProgNFSACL && vers == 3:
		name, procs = "NFSACL3", nfsacl3Procs[:]
	}
	if procs != nil && proc < uint32(len(procs)) {
		return name + " " + procs[proc]
	}
	return "prog " + strconv.FormatUint(uint64(prog), 10) + " v" + strconv.FormatUint(uint64(vers), 10) +
		" proc " + strconv.FormatUint(uint64(proc), 10)
}
