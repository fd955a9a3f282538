package transport

import (
	"container/list"
	"net"
	"net/netip"
)

// sourceLoads holds a Listener's handshakes in progress by source, the
// requester's IP address, and finds in constant time the handshake a new
// request takes the place of (victim): the oldest of a source holding the
// most. Its memory is bounded by the handshakes in progress: a source
// with none is forgotten.
type sourceLoads struct {
	bySrc map[netip.Addr]*sourceLoad
	// loads[n] holds the sources with n handshakes in progress, in the
	// order they reached n; loads[0] is unused. top is the largest n
	// with loads[n] not empty (0: no handshake in progress).
	loads []*list.List
	top   int
}

// sourceLoad is one source's handshakes in progress.
type sourceLoad struct {
	addr       netip.Addr
	handshakes list.List     // its *halfOpen, oldest first
	elem       *list.Element // in sourceLoads.loads[handshakes.Len()]
}

// sourceOf returns the source of a connection request from remote: its IP
// address, unmapped and without zone; the zero Addr (one source for all
// such requests) if the provider gives none or one that does not parse.
func sourceOf(remote net.Addr) netip.Addr {
	if remote == nil {
		return netip.Addr{}
	}
	if ta, ok := remote.(*net.TCPAddr); ok {
		a, _ := netip.AddrFromSlice(ta.IP)
		return a.Unmap()
	}
	ap, err := netip.ParseAddrPort(remote.String())
	if err != nil {
		return netip.Addr{}
	}
	return ap.Addr().Unmap().WithZone("")
}

// add records h, a new handshake from src.
func (s *sourceLoads) add(src netip.Addr, h *halfOpen) {
	if s.bySrc == nil {
		s.bySrc = make(map[netip.Addr]*sourceLoad)
		s.loads = []*list.List{nil, list.New()}
	}
	sl := s.bySrc[src]
	if sl == nil {
		sl = &sourceLoad{addr: src}
		s.bySrc[src] = sl
	}
	h.src = sl
	h.elem = sl.handshakes.PushBack(h)
	s.move(sl, sl.handshakes.Len()-1)
}

// remove forgets h, which ended or is evicted.
func (s *sourceLoads) remove(h *halfOpen) {
	sl := h.src
	sl.handshakes.Remove(h.elem)
	s.move(sl, sl.handshakes.Len()+1)
	if sl.handshakes.Len() == 0 {
		delete(s.bySrc, sl.addr)
	}
}

// move moves sl, whose count went from was to sl.handshakes.Len() (one
// more or one less), to its new place in loads.
func (s *sourceLoads) move(sl *sourceLoad, was int) {
	if was > 0 {
		s.loads[was].Remove(sl.elem)
		sl.elem = nil
	}
	n := sl.handshakes.Len()
	if n > 0 {
		if n == len(s.loads) {
			s.loads = append(s.loads, list.New())
		}
		sl.elem = s.loads[n].PushBack(sl)
	}
	s.top = max(s.top, n)
	for s.top > 0 && s.loads[s.top].Len() == 0 {
		s.top--
	}
}

// victim returns the handshake a new request from src takes the place of:
// the oldest of src's own if src holds the most handshakes in progress
// (as many as any other source), else the oldest of the source that has
// held the most the longest. A source holding fewer than another so never
// loses a handshake to a request from elsewhere. There must be one.
func (s *sourceLoads) victim(src netip.Addr) *halfOpen {
	sl := s.bySrc[src]
	if sl == nil || sl.handshakes.Len() < s.top {
		sl = s.loads[s.top].Front().Value.(*sourceLoad)
	}
	return sl.handshakes.Front().Value.(*halfOpen)
}
