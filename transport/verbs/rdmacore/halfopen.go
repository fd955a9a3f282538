//go:build linux && cgo

package rdmacore

/*
#include "cshim.h"
*/
import "C"

import (
	"context"
	"fmt"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// halfOpenQPNs numbers the queue pairs the REQs of DialHalfOpen name: the
// IB CM rejects a REQ whose remote QPN and CA GUID an earlier connection
// holds as stale (IBA 12.6.8), so each must differ. They count up from
// 0x800000, far above the QPNs rxe hands out (from 17 up).
var halfOpenQPNs atomic.Uint32

// HalfOpen is a connection request whose handshake its dialer never
// completes: see DialHalfOpen.
type HalfOpen struct {
	once sync.Once
	ch   *C.struct_rdma_event_channel
	id   *C.struct_rdma_cm_id
}

// DialHalfOpen sends a connect request (the IB CM's REQ) with privateData
// (at most 56 bytes) to the listener at addr ("host:port"), from src if it
// is not empty, and then stays silent: it has no queue pair, never reads
// the listener's answer and never confirms an accept (RTU), so the
// listener's side of the handshake stays in progress until the listener,
// or the IB CM's REP timeout, gives up, or h is closed. It is a test hook,
// for the tests of listeners against floods of half-open peers; a real
// dialer uses Provider.Dial. Address and route resolution block the
// calling thread for up to 5 s each; ctx is checked before it starts.
func DialHalfOpen(ctx context.Context, addr, src string, privateData []byte) (*HalfOpen, error) {
	if len(privateData) > verbs.ConnectPrivateDataLen {
		return nil, fmt.Errorf("rdmacore: connect private data of %d bytes, over %d: %w",
			len(privateData), verbs.ConnectPrivateDataLen, verbs.ErrPrivateDataTooLong)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("rdmacore: half-open %s: %w", addr, err)
	}
	dst, err := parseHostPort(ctx, addr)
	if err != nil {
		return nil, fmt.Errorf("rdmacore: half-open %s: %w", addr, err)
	}
	var sa netip.Addr
	if src != "" {
		if sa, err = netip.ParseAddr(src); err != nil {
			return nil, fmt.Errorf("rdmacore: half-open from %s: %w", src, err)
		}
	}
	sb, sn := ipBytes(sa)
	db, dn := ipBytes(dst.Addr())
	h := &HalfOpen{}
	if rc := C.rc_half_open(&h.ch, &h.id, cBytes(sb[:sn]), C.int(sn), cBytes(db[:dn]), C.int(dn), C.uint16_t(dst.Port()),
		cBytesVoid(privateData), C.int(len(privateData)), C.uint32_t(0x800000+halfOpenQPNs.Add(1)%0x7fffff), resolveTimeoutMS); rc != 0 {
		return nil, fmt.Errorf("rdmacore: half-open %s: %w", addr, syscall.Errno(rc))
	}
	return h, nil
}

// Close destroys the request's cm_id (the IB CM answers the listener's
// REP, if any, with a REJ) and its event channel.
func (h *HalfOpen) Close() error {
	h.once.Do(func() { C.rc_half_close(h.ch, h.id) })
	return nil
}
