package verbstest

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// RFC 8797 private data as the Linux client and server send it.
var (
	linuxClientPD = []byte{0xf6, 0xab, 0x0e, 0x18, 0x01, 0x01, 0x03, 0x03}
	linuxServerPD = []byte{0xf6, 0xab, 0x0e, 0x18, 0x01, 0x00, 0x03, 0x03}
)

// testPrivateData checks the delivery of CM private data: zero-padded to
// the IB CM's field (56 bytes on connect, 196 on accept) whatever was
// sent, and the limits.
func testPrivateData(t *testing.T, env Env) {
	full56 := bytes.Repeat([]byte{0xa5}, connectPDLen)
	full196 := bytes.Repeat([]byte{0x5a}, acceptPDLen)
	for _, tc := range []struct {
		name           string
		connect, accpt []byte
	}{
		{"RFC8797", linuxClientPD, linuxServerPD},
		{"Full", full56, full196},
		{"None", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var reqPD []byte
			client, server := connectInspect(t, env,
				&verbs.ConnOptions{PrivateData: tc.connect},
				&verbs.ConnOptions{PrivateData: tc.accpt},
				func(r verbs.ConnRequest) { reqPD = r.PrivateData() })
			want := make([]byte, connectPDLen)
			copy(want, tc.connect)
			require.Equal(t, want, reqPD, "connect request's private data")
			require.Equal(t, want, server.PeerPrivateData(), "server's PeerPrivateData")
			want = make([]byte, acceptPDLen)
			copy(want, tc.accpt)
			require.Equal(t, want, client.PeerPrivateData(), "client's PeerPrivateData")
		})
	}
	t.Run("TooLong", func(t *testing.T) {
		ctx := testContext(t)
		ln := listen(t, env)
		_, err := env.Client.Dial(ctx, ln.Addr().String(), &verbs.ConnOptions{PrivateData: make([]byte, connectPDLen+1)})
		require.ErrorIs(t, err, verbs.ErrPrivateDataTooLong)

		reqs := make(chan verbs.ConnRequest, 1)
		go func() {
			if req, err := ln.Accept(ctx); err == nil {
				reqs <- req
			}
			close(reqs)
		}()
		dialed := make(chan error, 1)
		go func() {
			c, err := env.Client.Dial(ctx, ln.Addr().String(), nil)
			if c != nil {
				_ = c.Close()
			}
			dialed <- err
		}()
		req, ok := <-reqs
		require.True(t, ok, "no connection request")
		_, err = req.Accept(ctx, &verbs.ConnOptions{PrivateData: make([]byte, acceptPDLen+1)})
		require.ErrorIs(t, err, verbs.ErrPrivateDataTooLong)
		require.ErrorIs(t, req.Reject(make([]byte, rejectPDLen+1)), verbs.ErrPrivateDataTooLong)
		require.NoError(t, req.Reject(nil), "the request is still usable")
		require.ErrorIs(t, <-dialed, verbs.ErrRejected)
	})
}

// testReject: a rejected request fails Dial with a *RejectedError that
// carries the reject's private data, zero-padded to 148 bytes.
func testReject(t *testing.T, env Env) {
	ctx := testContext(t)
	ln := listen(t, env)
	go func() {
		if req, err := ln.Accept(ctx); err == nil {
			_ = req.Reject([]byte("no, thanks"))
		}
	}()
	c, err := env.Client.Dial(ctx, ln.Addr().String(), &verbs.ConnOptions{PrivateData: linuxClientPD})
	require.Nil(t, c)
	require.ErrorIs(t, err, verbs.ErrRejected)
	var rej *verbs.RejectedError
	require.True(t, errors.As(err, &rej), "%v is not a *RejectedError", err)
	want := make([]byte, rejectPDLen)
	copy(want, "no, thanks")
	require.Equal(t, want, rej.PrivateData)
}

// testSetupErrorRejects: a listener whose Setup fails rejects the request.
func testSetupErrorRejects(t *testing.T, env Env) {
	ctx := testContext(t)
	ln := listen(t, env)
	accepted := acceptOne(ctx, ln, &verbs.ConnOptions{Setup: func(verbs.Conn) error { return errSetup }}, nil)
	c, err := env.Client.Dial(ctx, ln.Addr().String(), nil)
	require.Nil(t, c)
	require.ErrorIs(t, err, verbs.ErrRejected)
	r := <-accepted
	require.Nil(t, r.conn)
	require.ErrorIs(t, r.err, errSetup)
}

// testRefused: nothing listens at the address.
func testRefused(t *testing.T, env Env) {
	ln, err := env.Server.Listen(env.ListenAddr)
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	c, err := env.Client.Dial(testContext(t), addr, nil)
	require.Nil(t, c)
	require.ErrorIs(t, err, verbs.ErrRefused)
}

// testListenerClose: Close wakes a blocked Accept; later Accepts fail.
func testListenerClose(t *testing.T, env Env) {
	ln, err := env.Server.Listen(env.ListenAddr)
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := ln.Accept(context.Background())
		errc <- err
	}()
	time.Sleep(10 * time.Millisecond) // let Accept block (not needed for correctness)
	require.NoError(t, ln.Close())
	select {
	case err := <-errc:
		require.ErrorIs(t, err, verbs.ErrClosed)
	case <-time.After(timeout):
		t.Fatal("Accept did not return after Close")
	}
	_, err = ln.Accept(context.Background())
	require.ErrorIs(t, err, verbs.ErrClosed)
}

// testDisconnect: a Close is seen by the peer, which flushes what it had
// posted; the closed side refuses further use.
func testDisconnect(t *testing.T, env Env) {
	for _, closer := range []string{"client", "server"} {
		t.Run(closer+"Closes", func(t *testing.T) {
			var cr, sr verbs.Region
			client, server := connect(t, env,
				&verbs.ConnOptions{Setup: RecvSetup(&cr, 4096, 4, 64)},
				&verbs.ConnOptions{Setup: RecvSetup(&sr, 4096, 4, 64)})
			closing, peer := client, server
			if closer == "server" {
				closing, peer = server, client
			}
			require.NoError(t, closing.Close())
			requireDone(t, peer, "peer")
			require.ErrorIs(t, peer.Err(), verbs.ErrDisconnected)
			require.Equal(t, 4, drainFlushed(t, peer), "the peer's Receives are flushed")

			require.NoError(t, closing.Close(), "Close is idempotent")
			var cs [1]verbs.Completion
			_, err := closing.Poll(cs[:])
			require.ErrorIs(t, err, verbs.ErrClosed)
			require.ErrorIs(t, closing.PostSend([]verbs.WorkRequest{{ID: 1, Op: verbs.OpRDMAWrite}}), verbs.ErrClosed)
			select {
			case <-closing.Done():
			default:
				t.Fatal("Done not closed after Close")
			}
		})
	}
}
