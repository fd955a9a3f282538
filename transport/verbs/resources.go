package verbs

import "fmt"

// Region is registered memory that lives outside the Go heap (mmap'd or C
// memory), registered for local access and as the target of window binds
// (ibv_reg_mr with IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND). The peer
// can reach it only through a Window bound to a part of it.
type Region interface {
	// Bytes returns the region's memory. The slice is valid until Close.
	Bytes() []byte
	// Addr returns the address the peer uses to name byte off of the
	// region in RDMA Read and Write (a virtual address for rdma-core).
	Addr(off int) uint64
	// Close deregisters and frees the memory. Work requests that still
	// name it fail. Close fails while a window is bound to the region
	// (IBA 10.6.7.2.6; rxe_dereg_mr returns EINVAL).
	Close() error
}

// Window is a type 2 memory window (ibv_alloc_mw(IBV_MW_TYPE_2)): an rkey
// through which the peer may access one range of a Region, bound with
// OpBindWindow and revoked by OpLocalInvalidate or by the peer's Send With
// Invalidate.
type Window interface {
	// RKey returns the rkey of the current binding (after OpBindWindow
	// was posted), or of the unbound window.
	RKey() uint32
	// Close frees the window.
	Close() error
}

// NextRKey returns the rkey an OpBindWindow gives a window whose current rkey
// is rkey: the low 8 bits (the key) incremented, as ibv_inc_rkey does. Both
// providers bind with it, so a requester can put the rkey of a window it is
// about to bind into the Send posted in the same batch.
func NextRKey(rkey uint32) uint32 { return rkey&^0xff | (rkey+1)&0xff }

// BindRKey returns the rkey an OpBindWindow gives a window whose current
// rkey is cur when the work request's RKey is want: NextRKey(cur) if want
// is 0, else want, which must name the same window (the upper 24 bits, the
// index, equal cur's) with a different key byte. Providers call it when
// the bind is posted and refuse the work request if it fails; the error
// matches ErrInvalidRKey.
func BindRKey(cur, want uint32) (uint32, error) {
	switch {
	case want == 0:
		return NextRKey(cur), nil
	case want>>8 != cur>>8:
		return 0, fmt.Errorf("%w: bind rkey %#x names another window than the window's rkey %#x (index %#x, not %#x)",
			ErrInvalidRKey, want, cur, want>>8, cur>>8)
	case want == cur:
		return 0, fmt.Errorf("%w: bind rkey %#x has the window's current key byte %#02x (a bind must change it)",
			ErrInvalidRKey, want, want&0xff)
	}
	return want, nil
}

// WithKey returns rkey with its key byte (the low 8 bits, the part of an
// rkey the consumer chooses at each bind of a type 2 window) set to key.
// A requester picks key at random for every bind, so that the peer cannot
// predict the next rkey of a window from the ones it has seen.
func WithKey(rkey uint32, key uint8) uint32 { return rkey&^0xff | uint32(key) }

// MemoryMeter is implemented by providers that count the memory registered
// through them (regions not yet closed, in bytes, over every connection of
// the provider, and what the provider keeps registered for reuse). Tests and metrics use it to show that registered memory
// stays within the transport's configured bounds.
type MemoryMeter interface {
	RegisteredBytes() int64
}

// Registrar is implemented by connections that can register memory the
// caller already owns (ibv_reg_mr of an existing buffer, pinned for as long
// as it is registered), so that the peer's RDMA Writes place data straight
// into it through a window bound to it: direct data placement into the
// upper layer's buffer (RFC 8166 §3.5.5), with no copy out of a bounce
// buffer. The Region's Bytes is p itself; its Close deregisters and unpins
// p without freeing it, and fails while a window is bound to it, as for
// AllocRegion's regions. Closing the connection deregisters it too.
//
// The caller must not let p be read or written by anyone else while a
// window bound to it may be used by the peer: a peer's RDMA Write lands at
// any time until the window is invalidated.
type Registrar interface {
	RegisterRegion(p []byte) (Region, error)
}
