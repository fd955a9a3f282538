package verbs

// Opcode names a work request and its completion (struct ibv_send_wr's
// opcode, struct ibv_wc's opcode).
type Opcode uint8

// Work request opcodes.
const (
	// OpSend sends the scatter/gather list into the peer's next Receive.
	OpSend Opcode = iota + 1
	// OpSendWithInvalidate sends like OpSend and invalidates
	// InvalidateRKey at the peer (RFC 8166 §3.4.4: the requester's
	// memory window or MR named in the call). The peer's Receive
	// completion reports the invalidated rkey.
	OpSendWithInvalidate
	// OpRDMAWrite copies the local list to RemoteAddr under RKey at the
	// peer.
	OpRDMAWrite
	// OpRDMARead copies the peer's memory at RemoteAddr under RKey into
	// the local list.
	OpRDMARead
	// OpLocalInvalidate invalidates InvalidateRKey, one of this side's
	// windows: the peer can no longer access memory through it.
	OpLocalInvalidate
	// OpBindWindow binds Window to Length bytes of Region at Offset with
	// Access, and gives it a fresh rkey (IBV_WR_BIND_MW with
	// ibv_inc_rkey). Window.RKey reports the new rkey once posted.
	OpBindWindow
	// OpRecv is the opcode of a Receive's completion.
	OpRecv
)

// String returns the opcode's name.
func (o Opcode) String() string {
	switch o {
	case OpSend:
		return "SEND"
	case OpSendWithInvalidate:
		return "SEND_WITH_INV"
	case OpRDMAWrite:
		return "RDMA_WRITE"
	case OpRDMARead:
		return "RDMA_READ"
	case OpLocalInvalidate:
		return "LOCAL_INV"
	case OpBindWindow:
		return "BIND_MW"
	case OpRecv:
		return "RECV"
	}
	return "OP(?)"
}

// Access is a set of remote access rights for a window.
type Access uint8

// Remote access rights.
const (
	AccessRemoteRead Access = 1 << iota
	AccessRemoteWrite
)

// SGE is one element of a scatter/gather list: Length bytes of Region at
// Offset (struct ibv_sge).
type SGE struct {
	Region Region
	Offset int
	Length int
}

// WorkRequest is a request posted to a queue pair's send queue (struct
// ibv_send_wr). Fields not used by Op are ignored. Every work request is
// signaled: it produces one Completion carrying ID.
type WorkRequest struct {
	ID uint64
	Op Opcode
	// SGL is the local data: the message of a Send, the source of an RDMA
	// Write, the destination of an RDMA Read.
	SGL []SGE
	// RemoteAddr and RKey name the peer's memory for RDMA Read and Write.
	RemoteAddr uint64
	RKey       uint32
	// InvalidateRKey is the rkey OpSendWithInvalidate invalidates at the
	// peer, or OpLocalInvalidate invalidates here.
	InvalidateRKey uint32
	// Window, Bind (the Region, Offset and Length to expose) and Access
	// describe an OpBindWindow. For a bind, RKey is the rkey the window
	// gets: its current rkey with a new key byte (WithKey; the key must
	// differ from the current one); 0 means NextRKey of the current rkey.
	// PostSend refuses a bind whose RKey names another window or keeps
	// the key byte (BindRKey; ErrInvalidRKey).
	Window Window
	Bind   SGE
	Access Access
}

// RecvRequest is a Receive posted to a queue pair's receive queue (struct
// ibv_recv_wr): the next incoming Send lands in SGL.
type RecvRequest struct {
	ID  uint64
	SGL []SGE
}

// Completion is the outcome of one work request or Receive (struct ibv_wc).
type Completion struct {
	ID     uint64
	Status Status
	Op     Opcode
	// ByteLen is the length of the received message (OpRecv) or of the
	// data moved by an RDMA Read.
	ByteLen int
	// Invalidated reports that the received message was a Send With
	// Invalidate, and InvalidatedRKey which of our rkeys it invalidated.
	Invalidated     bool
	InvalidatedRKey uint32
}

// Err returns nil for a successful completion, else an error matching one
// of the package's sentinel errors.
func (c Completion) Err() error { return c.Status.Err() }
