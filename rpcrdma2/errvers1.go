package rpcrdma2

import (
	"encoding/binary"

	"github.com/go-rpcrdma/rpcrdma/chunks"
)

// errVers1Size is version 1's RDMA_ERROR ERR_VERS: rdma_xid, rdma_vers,
// rdma_credit, rdma_proc, rdma_err, rdma_vers_low, rdma_vers_high (RFC 8166
// §4.2, §4.5.1). Version 2's RDMA2_ERR_VERS is a word longer (rdma_flags),
// which tells the two apart.
const errVers1Size = chunks.ErrVersSize

// VersionOneErrVers reports whether b is version 1's RDMA_ERROR with
// ERR_VERS, the answer of a responder that speaks only version 1 to a
// version 2 message (draft §7.2), and returns its XID and the versions it
// names. Its rdma_vers word is not checked: Linux's svcrdma
// (svc_rdma_send_error) echoes the rdma_vers of the message it refuses, so
// knfsd's answer to a version 2 message carries 2 there in version 1's
// layout, which neither version's parser accepts (Header.Unmarshal reads
// it as a truncated RDMA2_ERR_VERS; chunks.Header.Unmarshal refuses its
// rdma_vers). A requester awaiting the answer to its first version 2
// message calls this when Unmarshal fails.
func VersionOneErrVers(b []byte) (xid uint32, vers VersRange, ok bool) {
	if len(b) != errVers1Size {
		return 0, VersRange{}, false
	}
	w := func(i int) uint32 { return binary.BigEndian.Uint32(b[4*i:]) }
	if chunks.Proc(w(3)) != chunks.ProcError || chunks.ErrorCode(w(4)) != chunks.CodeVers || w(5) > w(6) {
		return 0, VersRange{}, false
	}
	return w(0), VersRange{Low: w(5), High: w(6)}, true
}
