package server

import (
	"strconv"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/nfs/nfs3"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// privilegedPort reports whether the session's calls count as coming from
// a privileged port, what an export's secure option (exports(5), the
// default) asks of a client: every call that arrives over RDMA does, as
// knfsd marks every RPC-over-RDMA request secure (RQ_SECURE, in
// net/sunrpc/xprtrdma/svc_rdma_recvfrom.c), since an RDMA connection's
// port is no sign of privilege; over TCP, a call from a source port below
// 1024 does (RFC 1813 §4.6 leaves the check to the server).
func (ss *session) privilegedPort() bool {
	return ss.network == NetRDMA || ss.addr.IsValid() && ss.addr.Port() < 1024
}

// illegalPort is the reason a call from the session's port is refused
// under secure, in rpc.mountd's words.
func (ss *session) illegalPort() string {
	return "illegal port " + strconv.Itoa(int(ss.addr.Port()))
}

// refusePort answers the NFS call h of c, whose rule says secure and
// whose port is not privileged (privilegedPort), with NFS3ERR_PERM, as
// knfsd answers it (nfsd_originating_port_ok), or returns nil if the call
// may go on. The first refusal of a connection is logged with its reason;
// its later ones are not, so that a client cannot flood the log.
func (ss *session) refusePort(c *call, h *xdr.CallHeader) []byte {
	if !c.badPort || h.Proc == nfs.ProcNull {
		return nil
	}
	if ss.portLogged.CompareAndSwap(false, true) {
		ss.s.log.Warn("nfs: call refused", "network", ss.network, "remote", ss.addr.String(),
			"call", nfs.ProcName(h.Prog, h.Vers, h.Proc), "outcome", nfs3.ErrPerm.String(), "reason", ss.illegalPort())
	}
	return statusReply(h.Proc, h.XID, nfs3.ErrPerm)
}
