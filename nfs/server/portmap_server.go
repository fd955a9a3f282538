package server

import (
	"errors"
	"log/slog"
	"net"
	"slices"
	"sync"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// portmapper is a minimal portmapper (RFC 1833 §3, version 2) on TCP and
// UDP, for hosts without rpcbind. SET and UNSET are accepted from loopback
// addresses only.
type portmapper struct {
	tcp []net.Listener   // one per address
	udp []net.PacketConn // one per address, at its TCP listener's port
	log *slog.Logger
	wg  sync.WaitGroup

	mu    sync.Mutex
	maps  map[pmapKey]uint32 // port by prog, vers, prot
	conns map[net.Conn]struct{}
	done  bool
}

type pmapKey struct{ prog, vers, prot uint32 }

// listenPortmapper serves a portmapper at each of addrs (TCP and UDP,
// same port; a port 0 is chosen at the first and taken at the others).
func listenPortmapper(addrs []string, log *slog.Logger) (*portmapper, error) {
	pm := &portmapper{log: log, maps: map[pmapKey]uint32{}, conns: map[net.Conn]struct{}{}}
	var err error
	if pm.tcp, err = listenEach(addrs, func(addr string) (net.Listener, error) {
		return net.Listen("tcp", addr)
	}); err != nil {
		return nil, err
	}
	for i, tl := range pm.tcp {
		// The UDP socket takes the TCP listener's port (addr's may be 0).
		ul, err := net.ListenPacket("udp", samePort(addrs[i], tl.Addr()))
		if err != nil {
			pm.close() // nothing is served yet: it closes the sockets
			return nil, err
		}
		pm.udp = append(pm.udp, ul)
	}
	pm.set(nfs.ProgPortmap, nfs.PmapVers, nfs.IPProtoTCP, uint32(pm.tcp[0].Addr().(*net.TCPAddr).Port))
	pm.set(nfs.ProgPortmap, nfs.PmapVers, nfs.IPProtoUDP, uint32(pm.udp[0].LocalAddr().(*net.UDPAddr).Port))
	pm.wg.Add(len(pm.tcp) + len(pm.udp))
	for _, l := range pm.tcp {
		go pm.serveTCP(l)
	}
	for _, u := range pm.udp {
		go pm.serveUDP(u)
	}
	return pm, nil
}

// addrs returns the TCP addresses the portmapper listens at.
func (pm *portmapper) addrs() []net.Addr { return addrsOf(pm.tcp) }

// set registers a mapping; false if (prog, vers, prot) is taken (RFC 1833
// §3.2: PMAPPROC_SET).
func (pm *portmapper) set(prog, vers, prot, port uint32) bool {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	k := pmapKey{prog, vers, prot}
	if _, ok := pm.maps[k]; ok {
		return false
	}
	pm.maps[k] = port
	return true
}

// unset removes the mappings of (prog, vers) for every protocol (RFC 1833
// §3.2: PMAPPROC_UNSET); false if there were none.
func (pm *portmapper) unset(prog, vers uint32) bool {
	pm.mu.Lock()
	defer pm.mu.Unlock()
	found := false
	for k := range pm.maps {
		if k.prog == prog && k.vers == vers {
			delete(pm.maps, k)
			found = true
		}
	}
	return found
}

func (pm *portmapper) close() {
	pm.mu.Lock()
	pm.done = true
	conns := make([]net.Conn, 0, len(pm.conns))
	for c := range pm.conns {
		conns = append(conns, c)
	}
	pm.mu.Unlock()
	for _, l := range pm.tcp {
		_ = l.Close()
	}
	for _, u := range pm.udp {
		_ = u.Close()
	}
	for _, c := range conns {
		_ = c.Close()
	}
	pm.wg.Wait()
}

func (pm *portmapper) serveTCP(l net.Listener) {
	defer pm.wg.Done()
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		pm.mu.Lock()
		if pm.done {
			pm.mu.Unlock()
			_ = c.Close()
			return
		}
		pm.conns[c] = struct{}{}
		pm.wg.Add(1)
		pm.mu.Unlock()
		go func() {
			defer pm.wg.Done()
			defer func() {
				pm.mu.Lock()
				delete(pm.conns, c)
				pm.mu.Unlock()
				_ = c.Close()
			}()
			rc := recordConn{Conn: c, max: 64 << 10}
			for {
				msg, err := rc.ReadMsg(nil)
				if err != nil {
					return
				}
				reply := pm.handle(msg, c.RemoteAddr())
				if reply == nil {
					return
				}
				if err := rc.WriteMsg(reply); err != nil {
					return
				}
			}
		}()
	}
}

func (pm *portmapper) serveUDP(u net.PacketConn) {
	defer pm.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, from, err := u.ReadFrom(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		if reply := pm.handle(buf[:n], from); reply != nil {
			_, _ = u.WriteTo(reply, from)
		}
	}
}

// handle answers one call; nil means no reply (not a call).
func (pm *portmapper) handle(msg []byte, from net.Addr) []byte {
	var h xdr.CallHeader
	off, err := h.Unmarshal(msg)
	switch {
	case errors.Is(err, xdr.ErrRPCVersion):
		rh := xdr.ReplyHeader{XID: h.XID, Stat: xdr.MsgDenied, RejectStat: xdr.RejectRPCMismatch,
			Mismatch: xdr.Mismatch{Low: xdr.RPCVersion, High: xdr.RPCVersion}}
		return rh.Append(nil)
	case err != nil:
		return nil
	case h.Prog != nfs.ProgPortmap:
		return acceptedReply(h.XID, xdr.AcceptProgUnavail, xdr.Mismatch{})
	case h.Vers != nfs.PmapVers:
		return acceptedReply(h.XID, xdr.AcceptProgMismatch, xdr.Mismatch{Low: nfs.PmapVers, High: nfs.PmapVers})
	}
	r := xdr.NewReader(msg[off:])
	var res []byte
	switch h.Proc {
	case nfs.PmapProcNull:
	case nfs.PmapProcSet, nfs.PmapProcUnset, nfs.PmapProcGetport:
		var m [4]uint32
		for i := range m {
			v, err := r.Uint32()
			if err != nil {
				return acceptedReply(h.XID, xdr.AcceptGarbageArgs, xdr.Mismatch{})
			}
			m[i] = v
		}
		switch h.Proc {
		case nfs.PmapProcGetport:
			pm.mu.Lock()
			port := pm.maps[pmapKey{m[0], m[1], m[2]}]
			pm.mu.Unlock()
			res = xdr.AppendUint32(nil, port)
		case nfs.PmapProcSet:
			res = xdr.AppendBool(nil, isLoopback(from) && pm.set(m[0], m[1], m[2], m[3]))
		default:
			res = xdr.AppendBool(nil, isLoopback(from) && pm.unset(m[0], m[1]))
		}
	case nfs.PmapProcDump:
		pm.mu.Lock()
		keys := make([]pmapKey, 0, len(pm.maps))
		for k := range pm.maps {
			keys = append(keys, k)
		}
		slices.SortFunc(keys, func(a, b pmapKey) int {
			if a.prog != b.prog {
				return cmpU32(a.prog, b.prog)
			}
			if a.vers != b.vers {
				return cmpU32(a.vers, b.vers)
			}
			return cmpU32(a.prot, b.prot)
		})
		for _, k := range keys {
			res = xdr.AppendBool(res, true)
			res = xdr.AppendUint32(res, k.prog)
			res = xdr.AppendUint32(res, k.vers)
			res = xdr.AppendUint32(res, k.prot)
			res = xdr.AppendUint32(res, pm.maps[k])
		}
		pm.mu.Unlock()
		res = xdr.AppendBool(res, false)
	default:
		// CALLIT (5) and anything else.
		return acceptedReply(h.XID, xdr.AcceptProcUnavail, xdr.Mismatch{})
	}
	pm.log.Debug("nfs: portmapper call", "proc", h.Proc, "from", from)
	return successReply(h.XID, res)
}

func cmpU32(a, b uint32) int {
	if a < b {
		return -1
	}
	return 1
}

// isLoopback reports whether a is a loopback address.
func isLoopback(a net.Addr) bool {
	switch a := a.(type) {
	case *net.TCPAddr:
		return a.IP.IsLoopback()
	case *net.UDPAddr:
		return a.IP.IsLoopback()
	}
	return false
}
