package cmpriv

import (
	"math/rand/v2"
	"testing"
)

func TestNegotiate(t *testing.T) {
	ours := Message{RemoteInvalidate: true, SendSize: 16384, RecvSize: 16384}
	oursNoR := Message{SendSize: 16384, RecvSize: 16384}
	linuxC := Message{RemoteInvalidate: true, SendSize: 4096, RecvSize: 4096}
	linuxS := Message{SendSize: 4096, RecvSize: 4096}
	def := Default()

	tests := []struct {
		name  string
		role  Role
		local Message
		peer  []byte
		want  Settings
	}{
		{
			name: "Linux client vs our server", role: Responder, local: ours,
			peer: padded(connectLen, nil, linuxClient),
			want: Settings{Role: Responder, Local: ours, Peer: linuxC, PeerStatus: StatusFound,
				SendInline: 4096, RecvInline: 4096, RecvBuffer: 16384, SendWithInvalidate: true},
		},
		{
			name: "Linux client vs our server without R", role: Responder, local: oursNoR,
			peer: padded(connectLen, nil, linuxClient),
			want: Settings{Role: Responder, Local: oursNoR, Peer: linuxC, PeerStatus: StatusFound,
				SendInline: 4096, RecvInline: 4096, RecvBuffer: 16384},
		},
		{
			// knfsd sends R=0 but uses Send With Invalidate anyway.
			name: "our client vs Linux server", role: Requester, local: ours,
			peer: padded(acceptLen, nil, linuxServer),
			want: Settings{Role: Requester, Local: ours, Peer: linuxS, PeerStatus: StatusFound,
				SendInline: 4096, RecvInline: 4096, RecvBuffer: 16384, ExpectRemoteInvalidate: true},
		},
		{
			name: "our client without R vs Linux server", role: Requester, local: oursNoR,
			peer: padded(acceptLen, nil, linuxServer),
			want: Settings{Role: Requester, Local: oursNoR, Peer: linuxS, PeerStatus: StatusFound,
				SendInline: 4096, RecvInline: 4096, RecvBuffer: 16384},
		},
		{
			name: "our client vs our server", role: Requester, local: ours,
			peer: ours.Append(nil),
			want: Settings{Role: Requester, Local: ours, Peer: ours, PeerStatus: StatusFound,
				SendInline: 16384, RecvInline: 16384, RecvBuffer: 16384, ExpectRemoteInvalidate: true},
		},
		{
			name: "our server vs our client", role: Responder, local: ours,
			peer: ours.Append(nil),
			want: Settings{Role: Responder, Local: ours, Peer: ours, PeerStatus: StatusFound,
				SendInline: 16384, RecvInline: 16384, RecvBuffer: 16384, SendWithInvalidate: true},
		},
		{
			name: "client, server sent no private data", role: Requester, local: ours,
			peer: make([]byte, acceptLen),
			want: Settings{Role: Requester, Local: ours, Peer: def, PeerStatus: StatusEmpty,
				SendInline: 1024, RecvInline: 1024, RecvBuffer: 16384, ExpectRemoteInvalidate: true},
		},
		{
			name: "server, client sent no private data (iWARP: nil)", role: Responder, local: ours,
			peer: nil,
			want: Settings{Role: Responder, Local: ours, Peer: def, PeerStatus: StatusEmpty,
				SendInline: 1024, RecvInline: 1024, RecvBuffer: 16384},
		},
		{
			name: "server, client sent other data", role: Responder, local: ours,
			peer: garbage(connectLen),
			want: Settings{Role: Responder, Local: ours, Peer: def, PeerStatus: StatusNotFound,
				SendInline: 1024, RecvInline: 1024, RecvBuffer: 16384},
		},
		{
			name: "server, client sent version 2", role: Responder, local: ours,
			peer: hx("f6ab0e18 02 01 ff ff"),
			want: Settings{Role: Responder, Local: ours, Peer: def, PeerStatus: StatusBadVersion,
				SendInline: 1024, RecvInline: 1024, RecvBuffer: 16384},
		},
		{
			name: "asymmetric sizes", role: Requester,
			local: Message{SendSize: 8192, RecvSize: 2048},
			peer:  hx("f6ab0e18 01 01 3f 03"), // send 65536, recv 4096
			want: Settings{Role: Requester, Local: Message{SendSize: 8192, RecvSize: 2048},
				Peer: Message{RemoteInvalidate: true, SendSize: 65536, RecvSize: 4096}, PeerStatus: StatusFound,
				SendInline: 4096, RecvInline: 2048, RecvBuffer: 2048},
		},
		{
			name: "asymmetric sizes, other side", role: Responder,
			local: Message{RemoteInvalidate: true, SendSize: 65536, RecvSize: 4096},
			peer:  hx("f6ab0e18 01 00 07 01"), // send 8192, recv 2048
			want: Settings{Role: Responder, Local: Message{RemoteInvalidate: true, SendSize: 65536, RecvSize: 4096},
				Peer: Message{SendSize: 8192, RecvSize: 2048}, PeerStatus: StatusFound,
				SendInline: 2048, RecvInline: 4096, RecvBuffer: 4096},
		},
		{
			name: "256 KiB both ways", role: Responder,
			local: Message{RemoteInvalidate: true, SendSize: MaxSize, RecvSize: MaxSize},
			peer:  hx("f6ab0e18 01 01 ff ff"),
			want: Settings{Role: Responder, Local: Message{RemoteInvalidate: true, SendSize: MaxSize, RecvSize: MaxSize},
				Peer: Message{RemoteInvalidate: true, SendSize: MaxSize, RecvSize: MaxSize}, PeerStatus: StatusFound,
				SendInline: MaxSize, RecvInline: MaxSize, RecvBuffer: MaxSize, SendWithInvalidate: true},
		},
		{
			name: "local sizes not multiples of 1024 and out of range", role: Requester,
			local: Message{SendSize: 5000, RecvSize: 1 << 30},
			peer:  linuxServer,
			want: Settings{Role: Requester, Local: Message{SendSize: 4096, RecvSize: MaxSize},
				Peer: linuxS, PeerStatus: StatusFound,
				SendInline: 4096, RecvInline: 4096, RecvBuffer: MaxSize},
		},
		{
			name: "local sizes below the minimum", role: Responder,
			local: Message{SendSize: 0, RecvSize: -1},
			peer:  linuxClient,
			want: Settings{Role: Responder, Local: def, Peer: linuxC, PeerStatus: StatusFound,
				SendInline: 1024, RecvInline: 1024, RecvBuffer: 1024},
		},
		{
			name: "unknown role", role: Role(7), local: ours,
			peer: ours.Append(nil),
			want: Settings{Role: Role(7), Local: ours, Peer: ours, PeerStatus: StatusFound,
				SendInline: 16384, RecvInline: 16384, RecvBuffer: 16384},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Negotiate(tt.role, tt.local, tt.peer); got != tt.want {
				t.Fatalf("Negotiate:\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

// TestNegotiateAgreement checks the point of RFC 8797 §4.2: for any pair of
// offers, the requester and the responder compute the same threshold for
// each direction, both are at least 1024 and at most what either side
// offered, and Send With Invalidate is used only when both set R.
func TestNegotiateAgreement(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 2))
	size := func() int {
		switch r.IntN(4) {
		case 0:
			return r.IntN(2048) - 512 // around and below the minimum
		case 1:
			return MaxSize - 2048 + r.IntN(4096) // around the maximum
		default:
			return r.IntN(MaxSize + 1)
		}
	}
	for range 5000 {
		c := Message{RemoteInvalidate: r.IntN(2) == 0, SendSize: size(), RecvSize: size()}
		s := Message{RemoteInvalidate: r.IntN(2) == 0, SendSize: size(), RecvSize: size()}
		cs := Negotiate(Requester, c, s.Append(nil))
		ss := Negotiate(Responder, s, c.Append(nil))
		if cs.SendInline != ss.RecvInline || cs.RecvInline != ss.SendInline {
			t.Fatalf("client %+v server %+v: client %+v, server %+v", c, s, cs, ss)
		}
		for _, st := range []Settings{cs, ss} {
			if st.SendInline < MinSize || st.RecvInline < MinSize ||
				st.SendInline > st.Local.SendSize || st.RecvInline > st.Local.RecvSize ||
				st.RecvInline > st.RecvBuffer || st.SendInline%1024 != 0 || st.RecvInline%1024 != 0 {
				t.Fatalf("client %+v server %+v: bad settings %+v", c, s, st)
			}
		}
		if ss.SendWithInvalidate != (c.RemoteInvalidate && s.RemoteInvalidate) || cs.SendWithInvalidate {
			t.Fatalf("client %+v server %+v: SendWithInvalidate client %v server %v", c, s, cs.SendWithInvalidate, ss.SendWithInvalidate)
		}
		if cs.ExpectRemoteInvalidate != c.RemoteInvalidate || ss.ExpectRemoteInvalidate {
			t.Fatalf("client %+v server %+v: ExpectRemoteInvalidate client %v server %v", c, s, cs.ExpectRemoteInvalidate, ss.ExpectRemoteInvalidate)
		}
	}
}

// TestNegotiateReconnect checks that settings follow the peer's latest
// offer: RFC 8797 §4 requires being prepared for them to change.
func TestNegotiateReconnect(t *testing.T) {
	ours := Message{RemoteInvalidate: true, SendSize: 8192, RecvSize: 8192}
	first := Negotiate(Requester, ours, linuxServer)
	second := Negotiate(Requester, ours, nil)
	if first.SendInline != 4096 || second.SendInline != 1024 || second.PeerStatus != StatusEmpty {
		t.Fatalf("first %+v, second %+v", first, second)
	}
}

func TestRoleString(t *testing.T) {
	for r, want := range map[Role]string{Requester: "requester", Responder: "responder", Role(5): "role(5)"} {
		if got := r.String(); got != want {
			t.Errorf("Role(%d).String() = %q, want %q", uint8(r), got, want)
		}
	}
}
