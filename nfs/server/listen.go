package server

import (
	"errors"
	"fmt"
	"net"
	"strconv"

	"github.com/go-rpcrdma/rpcrdma/transport"
)

// listeners are a Server's: one RPC-over-RDMA and one TCP listener at
// each host it listens on (Config.ListenHosts), in the order given.
type listeners struct {
	rdma []*transport.Listener
	tcp  []net.Listener
}

// hostAddrs returns the addresses to listen on for addr ("host:port")
// at each of hosts, or addr alone if hosts is empty.
func hostAddrs(addr string, hosts []string) ([]string, error) {
	if len(hosts) == 0 {
		return []string{addr}, nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	addrs := make([]string, len(hosts))
	for i, h := range hosts {
		addrs[i] = net.JoinHostPort(h, port)
	}
	return addrs, nil
}

// samePort returns addr with the port of the listener at a if addr's
// port is 0: the first listener of a kind picks the port, and the
// others take the same, so that one registration with rpcbind names the
// service at every host.
func samePort(addr string, a net.Addr) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port != "0" {
		return addr
	}
	_, p := splitAddr(a)
	return net.JoinHostPort(host, strconv.Itoa(p))
}

// listen opens the Server's listeners; on an error none stays open.
func listen(cfg *Config, tcfg *transport.Config) (*listeners, error) {
	rdmaAddrs, err := hostAddrs(cfg.RDMAAddr, cfg.ListenHosts)
	if err != nil {
		return nil, fmt.Errorf("nfs: Config.RDMAAddr: %w", err)
	}
	tcpAddrs, err := hostAddrs(cfg.TCPAddr, cfg.ListenHosts)
	if err != nil {
		return nil, fmt.Errorf("nfs: Config.TCPAddr: %w", err)
	}
	ls := &listeners{}
	if ls.rdma, err = listenEach(rdmaAddrs, func(addr string) (*transport.Listener, error) {
		return transport.Listen(addr, tcfg)
	}); err != nil {
		return nil, err
	}
	if ls.tcp, err = listenEach(tcpAddrs, func(addr string) (net.Listener, error) {
		return net.Listen("tcp", addr)
	}); err != nil {
		_ = ls.close()
		return nil, err
	}
	return ls, nil
}

// listener is what listenEach opens: a transport.Listener or a
// net.Listener.
type listener interface {
	Addr() net.Addr
	Close() error
}

// listenEach opens a listener at each of addrs with open, the first
// choosing the port if addrs' is 0 and the others taking it (samePort);
// on an error it closes those it opened.
func listenEach[L listener](addrs []string, open func(addr string) (L, error)) ([]L, error) {
	var ls []L
	for i, addr := range addrs {
		if i > 0 {
			addr = samePort(addr, ls[0].Addr())
		}
		l, err := open(addr)
		if err != nil {
			for _, l := range ls {
				_ = l.Close()
			}
			return nil, err
		}
		ls = append(ls, l)
	}
	return ls, nil
}

// addrsOf returns the addresses of ls, in order.
func addrsOf[L interface{ Addr() net.Addr }](ls []L) []net.Addr {
	out := make([]net.Addr, len(ls))
	for i, l := range ls {
		out[i] = l.Addr()
	}
	return out
}

// close closes every listener.
func (ls *listeners) close() error {
	var errs []error
	for _, l := range ls.rdma {
		errs = append(errs, l.Close())
	}
	for _, l := range ls.tcp {
		if err := l.Close(); !errors.Is(err, net.ErrClosed) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// RDMAListener is one RPC-over-RDMA listener of a Server: its address,
// counters and limits.
type RDMAListener struct {
	Addr   net.Addr
	Stats  transport.ListenerStats
	Limits transport.ListenerLimits
}

// RDMAListeners returns the Server's RPC-over-RDMA listeners, one per
// host it listens on (Config.ListenHosts), in that order.
func (s *Server) RDMAListeners() []RDMAListener {
	out := make([]RDMAListener, len(s.ls.rdma))
	for i, l := range s.ls.rdma {
		out[i] = RDMAListener{Addr: l.Addr(), Stats: l.Stats(), Limits: l.Limits()}
	}
	return out
}

// RDMAAddrs returns the addresses of the RPC-over-RDMA listeners.
func (s *Server) RDMAAddrs() []net.Addr { return addrsOf(s.ls.rdma) }

// TCPAddrs returns the addresses of the TCP listeners.
func (s *Server) TCPAddrs() []net.Addr { return addrsOf(s.ls.tcp) }
