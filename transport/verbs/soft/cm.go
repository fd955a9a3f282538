package soft

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"syscall"

	"github.com/go-rpcrdma/rpcrdma/transport/verbs"
)

// cmType is the kind of a connection-management message. The exchange is
// the IB CM's (IBA 12.6): the active side sends REQ, the passive side
// answers REP or REJ, and the active side confirms a REP with RTU.
type cmType uint8

const (
	cmREQ cmType = iota + 1
	cmREP
	cmREJ
	cmRTU
)

// Private data sizes of the IB CM as rdma_cm delivers them: the REQ's 92
// bytes less rdma_cm's 36-byte header, the REP's 196 and the REJ's 148
// (IB_CM_REQ/REP/REJ_PRIVATE_DATA_SIZE; cma.c always reports the whole
// field, zero-padded, whatever the sender gave).
const (
	connectPrivateDataLen = 56
	acceptPrivateDataLen  = 196
	rejectPrivateDataLen  = 148
)

// cmHeaderLen is the length of a CM message header:
//
//	0..3 "SRDM" | 4 version (1) | 5 type | 6 read depth | 7 zero |
//	8..11 starting sequence number | 12..13 private data length | 14..15 zero
//
// followed by the private data.
const cmHeaderLen = 16

// cmMaxLen is the longest CM message.
const cmMaxLen = cmHeaderLen + acceptPrivateDataLen

const cmVersion = 1

var cmMagic = [4]byte{'S', 'R', 'D', 'M'}

// cmMessage is a decoded CM message.
type cmMessage struct {
	Type cmType
	// ReadDepth is the number of RDMA Reads the sender accepts as a
	// responder and issues as a requester (REQ and REP; 1..255).
	ReadDepth uint8
	// StartSeq is the first sequence number of the sender's requests
	// (REQ and REP), like the IB CM's starting PSN.
	StartSeq uint32
	// PrivateData is the consumer's private data, at most
	// maxPrivateData(Type) bytes.
	PrivateData []byte
}

// Errors of parseCM.
var (
	errCMShort       = errors.New("soft: short CM message")
	errCMMagic       = errors.New("soft: not a soft-RDMA CM message")
	errCMVersion     = errors.New("soft: unsupported CM version")
	errCMType        = errors.New("soft: unknown CM message type")
	errCMField       = errors.New("soft: invalid CM message field")
	errCMPrivateData = errors.New("soft: CM private data over the limit")
)

// maxPrivateData returns the private data limit of a message type.
func maxPrivateData(t cmType) int {
	switch t {
	case cmREQ:
		return connectPrivateDataLen
	case cmREP:
		return acceptPrivateDataLen
	case cmREJ:
		return rejectPrivateDataLen
	}
	return 0
}

// appendCM appends the encoding of m to dst. m must be valid (m.check).
func appendCM(dst []byte, m *cmMessage) []byte {
	var b [cmHeaderLen]byte
	copy(b[:4], cmMagic[:])
	b[4] = cmVersion
	b[5] = byte(m.Type)
	b[6] = m.ReadDepth
	binary.BigEndian.PutUint32(b[8:], m.StartSeq)
	binary.BigEndian.PutUint16(b[12:], uint16(len(m.PrivateData)))
	dst = append(dst, b[:]...)
	return append(dst, m.PrivateData...)
}

// check validates the fields of m against its type.
func (m *cmMessage) check() error {
	switch m.Type {
	case cmREQ, cmREP:
		if m.ReadDepth == 0 {
			return errCMField
		}
	case cmREJ, cmRTU:
		if m.ReadDepth != 0 || m.StartSeq != 0 {
			return errCMField
		}
	default:
		return errCMType
	}
	if len(m.PrivateData) > maxPrivateData(m.Type) {
		return errCMPrivateData
	}
	return nil
}

// parseCMHeader decodes the header in b[:cmHeaderLen] and returns the
// message without its private data, and the private data length, which it
// has checked against the type's limit.
func parseCMHeader(b []byte) (cmMessage, int, error) {
	if len(b) < cmHeaderLen {
		return cmMessage{}, 0, errCMShort
	}
	if [4]byte(b[:4]) != cmMagic {
		return cmMessage{}, 0, errCMMagic
	}
	if b[4] != cmVersion {
		return cmMessage{}, 0, errCMVersion
	}
	if b[7] != 0 || b[14] != 0 || b[15] != 0 {
		return cmMessage{}, 0, errCMField
	}
	m := cmMessage{
		Type:      cmType(b[5]),
		ReadDepth: b[6],
		StartSeq:  binary.BigEndian.Uint32(b[8:]),
	}
	if err := m.check(); err != nil {
		return cmMessage{}, 0, err
	}
	n := int(binary.BigEndian.Uint16(b[12:]))
	if n > maxPrivateData(m.Type) {
		return cmMessage{}, 0, errCMPrivateData
	}
	return m, n, nil
}

// parseCM decodes one whole CM message from the start of b and returns it
// with the number of bytes it took. PrivateData aliases b.
func parseCM(b []byte) (cmMessage, int, error) {
	m, n, err := parseCMHeader(b)
	if err != nil {
		return cmMessage{}, 0, err
	}
	if len(b)-cmHeaderLen < n {
		return cmMessage{}, 0, errCMShort
	}
	m.PrivateData = b[cmHeaderLen : cmHeaderLen+n : cmHeaderLen+n]
	return m, cmHeaderLen + n, nil
}

// padPrivateData returns a copy of pd zero-padded to n bytes, as the IB CM
// delivers private data.
func padPrivateData(pd []byte, n int) []byte {
	b := make([]byte, n)
	copy(b, pd)
	return b
}

// HalfOpen is a connection request whose handshake its dialer never
// completes: see DialHalfOpen.
type HalfOpen struct {
	nc net.Conn
}

// DialHalfOpen sends a connect request (REQ) with privateData (at most 56
// bytes) to the soft listener at addr and then stays silent: it never
// confirms an accept (RTU), so the listener's side of the handshake stays
// in progress until the listener gives up or h is closed. It is a test
// hook, for the tests of listeners against floods of half-open peers; a
// real dialer uses Provider.Dial.
func DialHalfOpen(ctx context.Context, addr string, privateData []byte) (*HalfOpen, error) {
	if len(privateData) > verbs.ConnectPrivateDataLen {
		return nil, fmt.Errorf("soft: connect private data of %d bytes, over %d: %w",
			len(privateData), verbs.ConnectPrivateDataLen, verbs.ErrPrivateDataTooLong)
	}
	var d net.Dialer
	nc, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		if errors.Is(err, syscall.ECONNREFUSED) {
			return nil, fmt.Errorf("soft: dial %s: %w: %w", addr, verbs.ErrRefused, err)
		}
		return nil, fmt.Errorf("soft: dial %s: %w", addr, err)
	}
	req := cmMessage{Type: cmREQ, ReadDepth: 1, PrivateData: privateData}
	stop := watchContext(ctx, nc)
	_, err = nc.Write(appendCM(nil, &req))
	stop()
	if err != nil {
		_ = nc.Close()
		return nil, fmt.Errorf("soft: dial %s: %w", addr, err)
	}
	return &HalfOpen{nc: nc}, nil
}

// Await waits for the listener's answer to the request: nil for an accept
// (REP; h never confirms it), a *verbs.RejectedError for a reject (REJ),
// or the error that ended the wait (ctx's, or the connection's end).
func (h *HalfOpen) Await(ctx context.Context) error {
	stop := watchContext(ctx, h.nc)
	m, pd, err := readCM(h.nc)
	if !stop() && ctx.Err() != nil {
		return fmt.Errorf("soft: half-open request: %w", ctx.Err())
	}
	if err != nil {
		return fmt.Errorf("soft: half-open request: %w: %w", verbs.ErrDisconnected, err)
	}
	switch m.Type {
	case cmREP:
		return nil
	case cmREJ:
		return &verbs.RejectedError{PrivateData: padPrivateData(pd, rejectPrivateDataLen)}
	}
	return errHandshake
}

// Close closes the connection: the listener sees its peer go away.
func (h *HalfOpen) Close() error { return h.nc.Close() }
