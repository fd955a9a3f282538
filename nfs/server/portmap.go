package server

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"time"

	"github.com/go-rpcrdma/rpcrdma/nfs"
	"github.com/go-rpcrdma/rpcrdma/xdr"
)

// RpcbindConfig says how a Server makes itself known to rpcbind, so that
// mount.nfs finds mountd without mountport= (RFC 1833).
type RpcbindConfig struct {
	// Disable turns registration off: clients then need mountport=.
	// false (the zero value) registers.
	Disable bool
	// Addr is the TCP address of the system's rpcbind; "" means
	// "127.0.0.1:111". Serve registers there MOUNT version 3 on TCP,
	// NFS version 3 on TCP (with Config.NFSOverTCP) and NFS
	// version 3 on netid "rdma" (rpcbind version 4 only: portmap
	// version 2 has no protocol number for RDMA), and Close unregisters
	// what was registered.
	Addr string
	// Serve, when nothing answers at Addr, makes the Server serve a
	// minimal portmapper itself (RFC 1833 version 2: NULL, SET, UNSET,
	// GETPORT, DUMP; calls of versions 3 and 4 get PROG_MISMATCH, on
	// which mount.nfs falls back to version 2) on ServeAddr, TCP and
	// UDP, holding the Server's own registrations. false (the zero
	// value) serves none.
	Serve bool
	// ServeAddr is the portmapper's address; "" means ":111". With
	// Config.ListenHosts, the portmapper listens at each of them, on
	// ServeAddr's port.
	ServeAddr string
	// Timeout bounds each exchange with rpcbind: not negative; 0 means
	// 2 s.
	Timeout time.Duration
}

// mapping is one registration.
type mapping struct {
	prog, vers uint32
	netid      string // "tcp", "rdma"
	port       int
	host       string // the listener's host, for the universal address
}

// prot is the portmap protocol number of the mapping's netid, 0 if none.
func (m mapping) prot() uint32 {
	switch m.netid {
	case "tcp", "tcp6":
		return nfs.IPProtoTCP
	case "udp", "udp6":
		return nfs.IPProtoUDP
	}
	return 0
}

// uaddr is the mapping's universal address (RFC 5665 §5.2.3): the host,
// then the port's two bytes, dot-separated.
func (m mapping) uaddr() string {
	host := m.host
	if host == "" {
		host = "0.0.0.0"
	}
	return fmt.Sprintf("%s.%d.%d", host, m.port>>8, m.port&0xff)
}

// rpcbindState is what Serve registered, to undo at Close.
type rpcbindState struct {
	v4, v2 []mapping // registered with the system's rpcbind by version
	pm     *portmapper
}

// mappings lists what the Server registers.
func (s *Server) mappings() []mapping {
	tcpHost, tcpPort := splitAddr(s.TCPAddr())
	rdmaHost, rdmaPort := splitAddr(s.RDMAAddr())
	if len(s.ls.tcp) > 1 {
		// Several hosts share the port: the wildcard's universal
		// address, which rpcbind completes with the address the
		// client asked at.
		tcpHost, rdmaHost = "", ""
	}
	ms := []mapping{{prog: nfs.ProgMount, vers: 3, netid: "tcp", port: tcpPort, host: tcpHost}}
	if s.cfg.NFSOverTCP {
		ms = append(ms, mapping{prog: nfs.ProgNFS, vers: 3, netid: "tcp", port: tcpPort, host: tcpHost})
	}
	return append(ms, mapping{prog: nfs.ProgNFS, vers: 3, netid: "rdma", port: rdmaPort, host: rdmaHost})
}

// splitAddr returns the host (empty for a wildcard) and port of a
// listener's address.
func splitAddr(a net.Addr) (string, int) {
	h, p, err := net.SplitHostPort(a.String())
	if err != nil {
		return "", 0
	}
	port, _ := strconv.Atoi(p)
	if ip := net.ParseIP(h); ip == nil || ip.IsUnspecified() {
		h = ""
	}
	return h, port
}

// unregisteredHint says how clients reach MOUNT when no portmapper gives
// its port: the kernel's mount with mountport=; over the soft provider
// (RDMA emulated over TCP, which the kernel cannot mount), at the TCP
// port or over the RDMA connection, where the Server answers MOUNT too.
func (s *Server) unregisteredHint() string {
	if p := s.cfg.Transport.Provider; p != nil && p.Name() == "soft" {
		return "clients send MOUNT to mount_tcp or over RDMA"
	}
	return "clients need mountport="
}

// registerRpcbind registers the Server with the system's rpcbind, or
// serves its own portmapper; failures are logged, never fatal.
func (s *Server) registerRpcbind() *rpcbindState {
	rc := s.cfg.Rpcbind
	st := &rpcbindState{}
	if rc.Disable {
		return st
	}
	c := s.rpcbindClient()
	if err := c.call(nfs.PmapVers, nfs.PmapProcNull, nil, nil); err != nil {
		if !rc.Serve {
			s.log.Info("nfs: no rpcbind: "+s.unregisteredHint(), "rpcbind", c.addr, "mount_tcp", s.TCPAddr().String(), "err", err)
			return st
		}
		addr := cmp.Or(rc.ServeAddr, ":111")
		addrs, err := hostAddrs(addr, s.cfg.ListenHosts)
		var pm *portmapper
		if err == nil {
			pm, err = listenPortmapper(addrs, s.log)
		}
		if err != nil {
			s.log.Warn("nfs: no rpcbind and cannot serve a portmapper: "+s.unregisteredHint(), "addr", addr, "mount_tcp", s.TCPAddr().String(), "err", err)
			return st
		}
		for _, m := range s.mappings() {
			if p := m.prot(); p != 0 {
				pm.set(m.prog, m.vers, p, uint32(m.port))
			}
		}
		st.pm = pm
		s.log.Info("nfs: serving a portmapper", "addr", pm.addrs())
		return st
	}
	for _, m := range s.mappings() {
		ok, err := c.rpcbSet(nfs.PmapProcSet, m)
		if err == nil && ok {
			st.v4 = append(st.v4, m)
			s.log.Info("nfs: registered with rpcbind", "prog", m.prog, "vers", m.vers, "netid", m.netid, "uaddr", m.uaddr())
			continue
		}
		if m.prot() == 0 {
			s.log.Warn("nfs: rpcbind registration failed", "prog", m.prog, "vers", m.vers, "netid", m.netid, "ok", ok, "err", err)
			continue
		}
		ok, err = c.pmapSet(nfs.PmapProcSet, m)
		if err != nil || !ok {
			s.log.Warn("nfs: portmap registration failed", "prog", m.prog, "vers", m.vers, "netid", m.netid, "ok", ok, "err", err)
			continue
		}
		st.v2 = append(st.v2, m)
		s.log.Info("nfs: registered with portmap", "prog", m.prog, "vers", m.vers, "netid", m.netid, "port", m.port)
	}
	return st
}

// unregisterRpcbind undoes registerRpcbind.
func (s *Server) unregisterRpcbind(st *rpcbindState) {
	if st == nil {
		return
	}
	if st.pm != nil {
		st.pm.close()
	}
	c := s.rpcbindClient()
	for _, m := range st.v4 {
		if _, err := c.rpcbSet(nfs.PmapProcUnset, m); err != nil {
			s.log.Warn("nfs: rpcbind unregistration failed", "prog", m.prog, "vers", m.vers, "netid", m.netid, "err", err)
		}
	}
	for _, m := range st.v2 {
		if _, err := c.pmapSet(nfs.PmapProcUnset, m); err != nil {
			s.log.Warn("nfs: portmap unregistration failed", "prog", m.prog, "vers", m.vers, "err", err)
		}
	}
}

func (s *Server) rpcbindClient() *rpcbClient {
	return &rpcbClient{addr: cmp.Or(s.cfg.Rpcbind.Addr, "127.0.0.1:111"),
		timeout: cmp.Or(s.cfg.Rpcbind.Timeout, 2*time.Second)}
}

// rpcbClient calls rpcbind over TCP, one connection per call.
type rpcbClient struct {
	addr    string
	timeout time.Duration
}

// errNotAccepted: rpcbind answered, but not SUCCESS.
var errNotAccepted = errors.New("nfs: rpcbind did not accept the call")

// call makes one call to program 100000 and returns its results in res
// (if not nil).
func (c *rpcbClient) call(vers, proc uint32, args []byte, res *[]byte) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.timeout)
	defer cancel()
	conn, err := nfs.DialReserved(ctx, c.addr)
	if err != nil {
		return err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(c.timeout))
	sys := xdr.AuthSys{Stamp: uint32(time.Now().Unix()), MachineName: []byte("localhost"),
		UID: uint32(os.Geteuid()), GID: uint32(os.Getegid())}
	xid := rand.Uint32()
	h := xdr.CallHeader{XID: xid, Prog: nfs.ProgPortmap, Vers: vers, Proc: proc, Cred: sys.OpaqueAuth(nil)}
	rc := recordConn{Conn: conn, max: 1 << 20}
	if err := rc.WriteMsg(append(h.Append(nil), args...)); err != nil {
		return fmt.Errorf("rpcbind %s: %w", c.addr, err)
	}
	reply, err := rc.ReadMsg(nil)
	if err != nil {
		return fmt.Errorf("rpcbind %s: %w", c.addr, err)
	}
	var rh xdr.ReplyHeader
	off, err := rh.Unmarshal(reply)
	if err != nil {
		return fmt.Errorf("rpcbind %s: %w", c.addr, err)
	}
	if rh.XID != xid || rh.Stat != xdr.MsgAccepted || rh.AcceptStat != xdr.AcceptSuccess {
		return fmt.Errorf("%w: %v %v", errNotAccepted, rh.Stat, rh.AcceptStat)
	}
	if res != nil {
		*res = reply[off:]
	}
	return nil
}

// boolCall makes a call whose result is an XDR bool.
func (c *rpcbClient) boolCall(vers, proc uint32, args []byte) (bool, error) {
	var res []byte
	if err := c.call(vers, proc, args, &res); err != nil {
		return false, err
	}
	r := xdr.NewReader(res)
	return r.Bool()
}

// rpcbSet makes an rpcbind version 4 SET or UNSET (RFC 1833 §2.2,
// struct rpcb: prog, vers, netid, uaddr, owner).
func (c *rpcbClient) rpcbSet(proc uint32, m mapping) (bool, error) {
	b := xdr.AppendUint32(nil, m.prog)
	b = xdr.AppendUint32(b, m.vers)
	b = xdr.AppendString(b, m.netid)
	b = xdr.AppendString(b, m.uaddr())
	b = xdr.AppendString(b, strconv.Itoa(os.Geteuid()))
	return c.boolCall(nfs.RpcbVers4, proc, b)
}

// pmapSet makes a portmap version 2 PMAPPROC_SET or UNSET (RFC 1833 §3.2,
// struct mapping: prog, vers, prot, port).
func (c *rpcbClient) pmapSet(proc uint32, m mapping) (bool, error) {
	b := xdr.AppendUint32(nil, m.prog)
	b = xdr.AppendUint32(b, m.vers)
	b = xdr.AppendUint32(b, m.prot())
	b = xdr.AppendUint32(b, uint32(m.port))
	return c.boolCall(nfs.PmapVers, proc, b)
}

// PortmapperAddr returns the TCP address of the portmapper the Server
// serves itself (RpcbindConfig.Serve), or nil if it serves none.
func (s *Server) PortmapperAddr() net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.rpcb == nil || s.rpcb.pm == nil {
		return nil
	}
	return s.rpcb.pm.tcp[0].Addr()
}
