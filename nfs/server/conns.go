package server

import "github.com/go-rpcrdma/rpcrdma/transport"

// RDMAConns returns the RDMA connections the Server serves now (closed
// ones are not kept), for their counters (transport.Conn.Stats).
func (s *Server) RDMAConns() []*transport.Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	var conns []*transport.Conn
	for ss := range s.sessions {
		if c, ok := ss.c.(*transport.Conn); ok {
			conns = append(conns, c)
		}
	}
	return conns
}
