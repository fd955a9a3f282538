package nfs

import (
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// goNFSArgsOK reports whether the arguments of a call that the dispatch
// layer forwards to go-nfs (a server whose handler is not a DirHandler)
// decode with nfs/nfs3's decoders, which check every length against its
// bound (RFC 1813 §2.4 NFS3_FHSIZE, filename3 and nfspath3 as Linux
// bounds them, §5.1.4 MNTPATHLEN) and against the bytes present before
// anything is allocated. go-nfs v0.0.4 allocates what a length word
// claims before reading the bytes (issue 28: four REMOVEs of 100 bytes
// claiming 2 GiB names each end the process); what does not decode here
// is answered GARBAGE_ARGS, as knfsd answers it, and never reaches it.
// Calls the dispatch layer executes itself, and other programs, are
// left to their own decoders (true).
func goNFSArgsOK(prog, proc uint32, args []byte) bool {
	var d interface{ Decode(*xdr.Reader) error }
	switch {
	case prog == ProgMount && proc == MountProcMnt:
		d = new(nfs3.MntArgs)
	case prog == ProgMount && proc == MountProcUmnt:
		d = new(nfs3.UmntArgs)
	case prog != ProgNFS:
		return true
	case proc == ProcSetattr:
		d = new(nfs3.SetattrArgs)
	case proc == ProcAccess:
		d = new(nfs3.AccessArgs)
	case proc == ProcReadlink:
		d = new(nfs3.ReadlinkArgs)
	case proc == ProcWrite:
		d = new(nfs3.WriteArgs)
	case proc == ProcCreate:
		d = new(nfs3.CreateArgs)
	case proc == ProcMkdir:
		d = new(nfs3.MkdirArgs)
	case proc == ProcSymlink:
		d = new(nfs3.SymlinkArgs)
	case proc == ProcMknod:
		d = new(nfs3.MknodArgs)
	case proc == ProcRemove, proc == ProcRmdir:
		d = new(nfs3.RemoveArgs)
	case proc == ProcRename:
		d = new(nfs3.RenameArgs)
	case proc == ProcFsstat:
		d = new(nfs3.FsstatArgs)
	case proc == ProcFsinfo:
		d = new(nfs3.FsinfoArgs)
	case proc == ProcPathconf:
		d = new(nfs3.PathconfArgs)
	default:
		return true
	}
	r := xdr.NewReader(args)
	return d.Decode(&r) == nil
}
