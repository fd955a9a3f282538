package transport

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
	"github.com/go-rpcrdma/rpcrdma/transport/verbs/soft"
)

// sentToProvider is the soft provider whose connection requests say they
// were sent to the address to, as the RDMA CM's are when it hands a
// listener bound to loopback a request sent to its device's address.
type sentToProvider struct {
	verbs.Provider
	to net.Addr
}

func (p sentToProvider) Listen(addr string) (verbs.Listener, error) {
	vl, err := p.Provider.Listen(addr)
	if err != nil {
		return nil, err
	}
	return sentToListener{vl, p.to}, nil
}

type sentToListener struct {
	verbs.Listener
	to net.Addr
}

func (l sentToListener) Accept(ctx context.Context) (verbs.ConnRequest, error) {
	r, err := l.Listener.Accept(ctx)
	if err != nil {
		return nil, err
	}
	return sentToRequest{r, l.to}, nil
}

type sentToRequest struct {
	verbs.ConnRequest
	to net.Addr
}

func (r sentToRequest) LocalAddr() net.Addr { return r.to }

// TestListenerRejectsOtherAddress: a Listener bound to an address rejects
// at once, and counts (RejectedAddr), a connection request sent to
// another address; one sent to its own address, and any request to a
// Listener on the unspecified address, is accepted.
func TestListenerRejectsOtherAddress(t *testing.T) {
	other := &net.TCPAddr{IP: net.ParseIP("10.9.9.9"), Port: 20049}
	for _, tc := range []struct {
		name, listen string
		to           net.Addr
		rejected     bool
	}{
		{"sent to another address", "127.0.0.1:0", other, true},
		{"sent to another IPv6 address", "127.0.0.1:0", &net.TCPAddr{IP: net.ParseIP("fd00::1"), Port: 1}, true},
		{"sent to the listener's address", "127.0.0.1:0", &net.TCPAddr{IP: net.ParseIP("127.0.0.1"), Port: 1}, false},
		{"sent to its address, IPv4-mapped", "127.0.0.1:0", &net.TCPAddr{IP: net.ParseIP("::ffff:127.0.0.1"), Port: 1}, false},
		{"the provider cannot tell", "127.0.0.1:0", nil, false},
		{"a listener on every address", "0.0.0.0:0", other, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Listen(tc.listen, &Config{Provider: sentToProvider{&soft.Provider{}, tc.to}})
			require.NoError(t, err)
			defer l.Close()
			_, port, _ := net.SplitHostPort(l.Addr().String())
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			start := time.Now()
			c, err := Dial(ctx, net.JoinHostPort("127.0.0.1", port), &Config{Provider: &soft.Provider{}})
			if tc.rejected {
				haExpectRejected(t, tc.name, time.Since(start), err)
				require.EqualValues(t, 1, l.Stats().RejectedAddr)
				require.Zero(t, l.Stats().Accepted)
				return
			}
			require.NoError(t, err)
			defer c.Close()
			sc, err := l.AcceptRDMA()
			require.NoError(t, err)
			defer sc.Close()
			require.Zero(t, l.Stats().RejectedAddr)
		})
	}
}
