package capture

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// ONC RPC programs that travel over NFS/RDMA.
const (
	ProgNFS    = 100003
	ProgNFSACL = 100227
	ProgNLM    = 100021
)

var nfs3Procs = [...]string{"NULL", "GETATTR", "SETATTR", "LOOKUP", "ACCESS", "READLINK",
	"READ", "WRITE", "CREATE", "MKDIR", "SYMLINK", "MKNOD", "REMOVE", "RMDIR", "RENAME",
	"LINK", "READDIR", "READDIRPLUS", "FSSTAT", "FSINFO", "PATHCONF", "COMMIT"}

var nfsacl3Procs = [...]string{"NULL", "GETACL", "SETACL"}

// ProcName names an RPC procedure, such as "NFSv3 WRITE" (RFC 1813 §3.3) or
// "NFSACLv3 GETACL"; an unknown one is named by its numbers.
func ProcName(prog, vers, proc uint32) string {
	switch {
	case prog == ProgNFS && vers == 3 && proc < uint32(len(nfs3Procs)):
		return "NFSv3 " + nfs3Procs[proc]
	case prog == ProgNFSACL && vers == 3 && proc < uint32(len(nfsacl3Procs)):
		return "NFSACLv3 " + nfsacl3Procs[proc]
	}
	return fmt.Sprintf("program %d version %d procedure %d", prog, vers, proc)
}

// RPC is an RPC-over-RDMA message: the payload of a Send, its transport
// header and, for RDMA_MSG, the RPC message that follows it inline.
type RPC struct {
	Send   *Message
	Header TransportHeader
	// Inline is the RPC message after the header of an RDMA_MSG, nil for
	// RDMA_NOMSG and RDMA_ERROR.
	Inline []byte
	// IsCall tells an RPC Call from a Reply: from msg_type when the message
	// is inline; otherwise a position-zero Read chunk makes a call (RFC 8166
	// §3.5.3, Long Call), and anything else, RDMA_ERROR included, a reply.
	IsCall bool
	// Prog, Vers and Proc are the call's, or for a reply those of the call
	// with the same XID sent the other way (zero if none was seen).
	Prog, Vers, Proc uint32
	// Call is the call a reply answers, Reply the reply to a call; nil when
	// not seen.
	Call, Reply *RPC
	// Err says why the Send could not be read as RPC-over-RDMA; the other
	// fields but Send are then unset.
	Err error
}

// Name names the RPC: "NFSv3 WRITE call", "NFSv3 WRITE reply",
// "unknown reply" for a reply whose call was not captured, or "not
// RPC-over-RDMA" if Err is set.
func (r *RPC) Name() string {
	if r.Err != nil {
		return "not RPC-over-RDMA"
	}
	dir := "reply"
	if r.IsCall {
		dir = "call"
	}
	if !r.IsCall && r.Call == nil {
		return "unknown " + dir
	}
	return ProcName(r.Prog, r.Vers, r.Proc) + " " + dir
}

// FindRPCs reads every Send of msgs as an RPC-over-RDMA message and pairs
// each reply with the call of the same XID that went the other way between
// the same two addresses (the last such call before the reply, as XIDs may
// repeat across connections). Other kinds of message are skipped.
func FindRPCs(msgs []Message) []*RPC {
	type callKey struct {
		client, server string
		xid            uint32
	}
	calls := make(map[callKey]*RPC)
	var out []*RPC
	for i := range msgs {
		m := &msgs[i]
		if m.Kind != KindSend || m.DestQP == 1 { // QP1 carries MADs (the CM), not RPCs
			continue
		}
		r := parseRPC(m)
		out = append(out, r)
		switch {
		case r.Err != nil:
		case r.IsCall:
			calls[callKey{m.Src.String(), m.Dst.String(), r.Header.XID}] = r
		default:
			if c := calls[callKey{m.Dst.String(), m.Src.String(), r.Header.XID}]; c != nil && c.Reply == nil {
				r.Call, c.Reply = c, r
				r.Prog, r.Vers, r.Proc = c.Prog, c.Vers, c.Proc
			}
		}
	}
	return out
}

// parseRPC reads a Send as an RPC-over-RDMA message.
func parseRPC(m *Message) *RPC {
	h, err := ParseTransportHeader(m.Payload)
	if err != nil {
		return &RPC{Send: m, Err: err}
	}
	r := &RPC{Send: m, Header: h}
	if h.Proc != RDMAMsg {
		r.IsCall = h.Proc == RDMANoMsg && len(h.ReadList) > 0 && h.ReadList[0].Position == 0
		return r
	}
	r.Inline = m.Payload[h.Len:]
	_, t, err := xdr.PeekXID(r.Inline)
	if err != nil {
		return &RPC{Send: m, Err: fmt.Errorf("inline RPC message: %w", err)}
	}
	if r.IsCall = t == xdr.MsgCall; r.IsCall {
		var ch xdr.CallHeader
		if _, err := ch.Unmarshal(r.Inline); err != nil {
			return &RPC{Send: m, Err: fmt.Errorf("inline RPC call: %w", err)}
		}
		r.Prog, r.Vers, r.Proc = ch.Prog, ch.Vers, ch.Proc
	}
	return r
}
