package cmpriv_test

import (
	"fmt"

	"github.com/go-rpcrdma/rpcrdma/cmpriv"
)

// A requester encodes its offer for rdma_connect: remote invalidation
// supported, 4 KiB inline each way (what the Linux client offers).
func ExampleMessage_Append() {
	offer := cmpriv.Message{RemoteInvalidate: true, SendSize: 4096, RecvSize: 4096}
	var buf [cmpriv.Len]byte
	data := offer.Append(buf[:0])
	fmt.Printf("% x\n", data)
	// Output: f6 ab 0e 18 01 01 03 03
}

// Sizes the wire cannot carry are adjusted, and the adjustment is reported.
func ExampleMessage_Normalize() {
	m, adj := cmpriv.Message{SendSize: 5000, RecvSize: 512 * 1024}.Normalize()
	fmt.Println(m)
	fmt.Println(adj)
	// Output:
	// R=0 send=4096 recv=262144
	// send-rounded-down|recv-lowered-to-max
}

// The private data of a Linux server's accept, as the CM delivers it to the
// client: the 8 bytes knfsd sent, zero padded to 196 bytes.
func ExampleParse() {
	data := make([]byte, 196)
	copy(data, []byte{0xf6, 0xab, 0x0e, 0x18, 0x01, 0x00, 0x03, 0x03})

	m, status := cmpriv.Parse(data)
	fmt.Println(status, m)

	// A server that sent nothing: the RFC 8797 §5.1 defaults.
	m, status = cmpriv.Parse(make([]byte, 196))
	fmt.Println(status, m)
	// Output:
	// found R=0 send=4096 recv=4096
	// empty R=0 send=1024 recv=1024
}

// Our client, offering 16 KiB each way and remote invalidation, connected to
// a Linux server.
func ExampleNegotiate() {
	offer := cmpriv.Message{RemoteInvalidate: true, SendSize: 16384, RecvSize: 16384}
	accept := []byte{0xf6, 0xab, 0x0e, 0x18, 0x01, 0x00, 0x03, 0x03} // from the ESTABLISHED event

	s := cmpriv.Negotiate(cmpriv.Requester, offer, accept)
	fmt.Println("peer:", s.PeerStatus, s.Peer)
	fmt.Println("send inline:", s.SendInline)
	fmt.Println("receive inline:", s.RecvInline)
	fmt.Println("receive buffers:", s.RecvBuffer)
	fmt.Println("expect remote invalidation:", s.ExpectRemoteInvalidate)
	// Output:
	// peer: found R=0 send=4096 recv=4096
	// send inline: 4096
	// receive inline: 4096
	// receive buffers: 16384
	// expect remote invalidation: true
}

// The server side: a Linux client's connect request, 56 bytes on InfiniBand.
func ExampleNegotiate_responder() {
	request := make([]byte, 56)
	copy(request, []byte{0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x03, 0x03})
	offer := cmpriv.Message{RemoteInvalidate: true, SendSize: 16384, RecvSize: 16384}

	s := cmpriv.Negotiate(cmpriv.Responder, offer, request)
	fmt.Println(s.Role, s.PeerStatus, s.SendInline, s.RecvInline, s.SendWithInvalidate)
	fmt.Printf("accept with % x\n", s.Local.Append(nil))
	// Output:
	// responder found 4096 4096 true
	// accept with f6 ab 0e 18 01 01 0f 0f
}

// When nothing usable arrives, the defaults apply and the status says why.
func ExampleDefault() {
	fmt.Println(cmpriv.Default())
	_, status := cmpriv.Parse([]byte{0xf6, 0xab, 0x0e, 0x18, 0x02, 0x01, 0x03, 0x03})
	fmt.Println(status)
	// Output:
	// R=0 send=1024 recv=1024
	// bad-version
}
