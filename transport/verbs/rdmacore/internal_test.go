//go:build linux && cgo

package rdmacore

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// TestWCStatus checks the mapping of every ibv_wc_status.
func TestWCStatus(t *testing.T) {
	want := map[uint32]verbs.Status{
		wcSuccess:        verbs.StatusSuccess,
		wcLocLenErr:      verbs.StatusLength,
		wcLocQPOpErr:     verbs.StatusOther,
		wcLocEECOpErr:    verbs.StatusOther,
		wcLocProtErr:     verbs.StatusLocalProtection,
		wcWRFlushErr:     verbs.StatusFlushed,
		wcMWBindErr:      verbs.StatusOther,
		wcBadRespErr:     verbs.StatusOther,
		wcLocAccessErr:   verbs.StatusLocalProtection,
		wcRemInvReqErr:   verbs.StatusRemoteInvalidRequest,
		wcRemAccessErr:   verbs.StatusRemoteAccess,
		wcRemOpErr:       verbs.StatusOther,
		wcRetryExcErr:    verbs.StatusRetryExceeded,
		wcRNRRetryExcErr: verbs.StatusRNR,
		wcLocRDDViolErr:  verbs.StatusOther,
		wcRemInvRDReqErr: verbs.StatusOther,
		wcRemAbortErr:    verbs.StatusOther,
		wcInvEECNErr:     verbs.StatusOther,
		wcInvEECStateErr: verbs.StatusOther,
		wcFatalErr:       verbs.StatusOther,
		wcRespTimeoutErr: verbs.StatusOther,
		wcGeneralErr:     verbs.StatusOther,
		22:               verbs.StatusOther, // IBV_WC_TM_ERR
		1000:             verbs.StatusOther,
	}
	for s, st := range want {
		require.Equal(t, st, wcStatus(s), "ibv_wc_status %d (%s)", s, wcStatusName(s))
	}
	require.Equal(t, "remote access error", wcStatusName(wcRemAccessErr))
	require.Equal(t, "RNR retry counter exceeded", wcStatusName(wcRNRRetryExcErr))
	require.Equal(t, "unknown", wcStatusName(1000))
}

// TestCompletionError: a connection failed by a completion matches
// ErrDisconnected and the status's error, and names the device's status.
func TestCompletionError(t *testing.T) {
	var err error = &completionError{status: verbs.StatusRNR, wcStatus: wcRNRRetryExcErr}
	require.ErrorIs(t, err, verbs.ErrDisconnected)
	require.ErrorIs(t, err, verbs.ErrRNR)
	require.NotErrorIs(t, err, verbs.ErrRemoteAccess)
	require.Contains(t, err.Error(), "RNR retry counter exceeded (ibv_wc_status 13")
}

// TestWROpcode: every verbs opcode that can be posted has its ibv_wr_opcode.
func TestWROpcode(t *testing.T) {
	for op, want := range map[verbs.Opcode]uint32{
		verbs.OpSend:               wrSend,
		verbs.OpSendWithInvalidate: wrSendWithInv,
		verbs.OpRDMAWrite:          wrRDMAWrite,
		verbs.OpRDMARead:           wrRDMARead,
		verbs.OpLocalInvalidate:    wrLocalInv,
		verbs.OpBindWindow:         wrBindMW,
	} {
		got, ok := wrOpcode(op)
		require.True(t, ok, "%v", op)
		require.Equal(t, want, got, "%v", op)
	}
	for _, op := range []verbs.Opcode{0, verbs.OpRecv, 200} {
		_, ok := wrOpcode(op)
		require.False(t, ok, "%v cannot be posted", op)
	}
}

func TestMWAccess(t *testing.T) {
	require.Equal(t, uint32(0), mwAccess(0))
	require.Equal(t, uint32(accessRemoteRead), mwAccess(verbs.AccessRemoteRead))
	require.Equal(t, uint32(accessRemoteWrite), mwAccess(verbs.AccessRemoteWrite))
	require.Equal(t, uint32(accessRemoteRead|accessRemoteWrite), mwAccess(verbs.AccessRemoteRead|verbs.AccessRemoteWrite))
}

// TestRecvInvalidated: IBV_WC_WITH_INV always says "invalidated"; the
// kernel's bit, which rxe leaks into user space, only with the quirk (on
// other devices it is IBV_WC_IP_CSUM_OK).
func TestRecvInvalidated(t *testing.T) {
	require.True(t, recvInvalidated(wcWithInv, false))
	require.True(t, recvInvalidated(wcWithInv|1, true))
	require.True(t, recvInvalidated(wcKernelWithInv|1, true))
	require.False(t, recvInvalidated(wcKernelWithInv|1, false))
	require.False(t, recvInvalidated(1, true)) // IBV_WC_GRH alone
}

func TestPadPrivateData(t *testing.T) {
	require.Equal(t, make([]byte, 56), padPrivateData(nil, 56))
	got := padPrivateData([]byte{1, 2, 3}, 196)
	require.Len(t, got, 196)
	require.Equal(t, []byte{1, 2, 3, 0}, got[:4])
	long := make([]byte, 200)
	require.Len(t, padPrivateData(long, 148), 200, "never truncates")
}

func TestParseHostPort(t *testing.T) {
	ctx := context.Background()
	for in, want := range map[string]netip.AddrPort{
		"10.0.0.1:20049":        netip.MustParseAddrPort("10.0.0.1:20049"),
		":0":                    netip.MustParseAddrPort("0.0.0.0:0"),
		"[::ffff:10.0.0.2]:1":   netip.MustParseAddrPort("10.0.0.2:1"),
		"[fe80::1%veth0]:65535": netip.MustParseAddrPort("[fe80::1]:65535"),
		"localhost:7":           {}, // resolved: checked below
	} {
		got, err := parseHostPort(ctx, in)
		require.NoError(t, err, in)
		if in == "localhost:7" {
			require.True(t, got.Addr().IsLoopback(), "%v", got)
			require.Equal(t, uint16(7), got.Port())
			continue
		}
		require.Equal(t, want, got, in)
	}
	for _, in := range []string{"10.0.0.1", "10.0.0.1:65536", "10.0.0.1:-1", "10.0.0.1:x", "[::1"} {
		_, err := parseHostPort(ctx, in)
		require.Error(t, err, in)
	}
}

func TestIPBytes(t *testing.T) {
	b, n := ipBytes(netip.MustParseAddr("10.0.0.2"))
	require.Equal(t, 4, n)
	require.Equal(t, []byte{10, 0, 0, 2}, b[:n])
	b, n = ipBytes(netip.MustParseAddr("fe80::1"))
	require.Equal(t, 16, n)
	require.Equal(t, byte(0xfe), b[0])
	require.Equal(t, byte(1), b[15])
	_, n = ipBytes(netip.Addr{})
	require.Zero(t, n)
}

// TestMaxCaps: the provider's own queue limits, checked through
// verbs.ConnOptions.Check by Dial and Accept.
func TestMaxCaps(t *testing.T) {
	got, err := (&verbs.ConnOptions{}).Check(false, maxCaps)
	require.NoError(t, err)
	require.Equal(t, verbs.DefaultQueueCaps, got)
	for _, q := range []verbs.QueueCaps{
		{SendQueue: 1<<16 + 1}, {RecvQueue: 1<<16 + 1}, {MaxSGE: 33}, {ReadDepth: 256},
	} {
		_, err := (&verbs.ConnOptions{Caps: q}).Check(true, maxCaps)
		require.ErrorIs(t, err, verbs.ErrNotSupported, "%+v", q)
	}
}

// TestNoDeviceError: the failure of the first librdmacm call on a host
// without RDMA says so and matches ErrNotSupported; other failures keep
// their errno.
func TestNoDeviceError(t *testing.T) {
	err := noDeviceError("rdma_create_event_channel", 19) // ENODEV
	require.ErrorIs(t, err, verbs.ErrNotSupported)
	require.Contains(t, err.Error(), "no RDMA device")
	err = noDeviceError("rdma_create_id", 12) // ENOMEM
	require.False(t, errors.Is(err, verbs.ErrNotSupported))
	require.Contains(t, err.Error(), "rdma_create_id")
}
